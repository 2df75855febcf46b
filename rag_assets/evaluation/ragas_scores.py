"""ragas scores for retrieval, offline by default.

Offline (no LLM, no network; always attempted):

- ``id_based_context_precision`` / ``id_based_context_recall`` (ragas IDBasedContextPrecision /
  IDBasedContextRecall) over section ids ``"doc_path#normalised section"``. Reference ids: the
  expected entries that name both doc_path and section. Retrieved ids: one per distinct retrieved
  section unit, in rank order; a unit that satisfies expected entries under the project's matching
  rules (e.g. its breadcrumb holds the labelled heading) is given those entries' ids, otherwise its
  own id. So, when every entry names doc_path + section and no unit satisfies two entries, ragas'
  precision equals ``section.precision_retrieved@top_k`` and its recall ``section.recall@top_k``.
  Questions without such entries get NaN (not applicable, left out of the mean).
- ``non_llm_context_precision_with_reference`` / ``non_llm_context_recall`` (rapidfuzz string
  similarity of whole strings, threshold 0.5) when a question has ``reference_contexts`` or
  ``text`` snippets; retrieved contexts are the top-k chunk texts.

A question with no results scores 0 on every offline metric (ragas itself would return NaN or
raise on an empty list).

LLM-judged (``llm_context_precision_with_reference``, ``llm_context_recall``, ``faithfulness``,
``answer_relevancy``, ``answer_correctness``) run only against an OpenAI-compatible endpoint given by
``OPENAI_API_KEY`` + ``OPENAI_BASE_URL`` (model ``RAG_EVAL_LLM_MODEL``, default ``gpt-4o-mini``;
embeddings for answer metrics ``RAG_EVAL_EMBEDDING_MODEL``). Otherwise each is *skipped* with a reason
in ``RagasResult.skipped`` — never reported as a zero.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

# must be set before ragas is imported anywhere: evaluate()/single_turn_score() send analytics otherwise
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

from rag_assets.config import EvaluationSettings  # noqa: E402
from rag_assets.openai_errors import redact_url  # noqa: E402
from rag_assets.evaluation.evalset import EvalQuestion  # noqa: E402
from rag_assets.evaluation.matching import (  # noqa: E402
    SECTION,
    RankedUnit,
    entry_id,
    expected_for_level,
)

ID_PRECISION = "id_based_context_precision"
ID_RECALL = "id_based_context_recall"
NONLLM_PRECISION = "non_llm_context_precision_with_reference"
NONLLM_RECALL = "non_llm_context_recall"
OFFLINE_METRICS = (ID_PRECISION, ID_RECALL, NONLLM_PRECISION, NONLLM_RECALL)

LLM_CONTEXT_PRECISION = "llm_context_precision_with_reference"
LLM_CONTEXT_RECALL = "llm_context_recall"
FAITHFULNESS = "faithfulness"
ANSWER_RELEVANCY = "answer_relevancy"
ANSWER_CORRECTNESS = "answer_correctness"
LLM_METRICS = (LLM_CONTEXT_PRECISION, LLM_CONTEXT_RECALL, FAITHFULNESS, ANSWER_RELEVANCY, ANSWER_CORRECTNESS)

DEFAULT_LLM_MODEL = "gpt-4o-mini"
LLM_CONCURRENCY = 8


@dataclass
class RagasSample:
    question: str
    retrieved_ids: list[str] = field(default_factory=list)
    reference_ids: list[str] = field(default_factory=list)
    retrieved_contexts: list[str] = field(default_factory=list)
    reference_contexts: list[str] = field(default_factory=list)
    reference_answer: str | None = None
    response: str | None = None  # a generated answer, when the caller has a generator


@dataclass(repr=False)
class LLMConfig:
    api_key: str
    base_url: str
    model: str = DEFAULT_LLM_MODEL
    embedding_model: str | None = None

    @classmethod
    def from_settings(cls, evaluation: EvaluationSettings) -> "LLMConfig | None":
        """The judge the settings' evaluation group configures (`settings.evaluation`: OPENAI_API_KEY,
        OPENAI_BASE_URL, RAG_EVAL_LLM_MODEL, RAG_EVAL_EMBEDDING_MODEL, as resolved at the edge); None
        without a key and an endpoint."""
        key, url = (evaluation.openai_api_key or "").strip(), (evaluation.openai_base_url or "").strip()
        if not key or not url:
            return None
        return cls(api_key=key, base_url=url, model=evaluation.eval_llm_model.strip() or DEFAULT_LLM_MODEL,
                   embedding_model=evaluation.eval_embedding_model.strip() or None)

    def __repr__(self) -> str:  # never print the key
        return f"LLMConfig(base_url={redact_url(self.base_url)!r}, model={self.model!r}, embedding_model={self.embedding_model!r})"


@dataclass
class RagasResult:
    scores: dict[str, float]  # metric → mean over applicable samples
    per_sample: list[dict[str, float]]  # one dict per sample, NaN = not applicable / failed
    skipped: dict[str, str]  # metric → why it was not computed
    elapsed_s: float = 0.0


def build_sample(
    question: EvalQuestion,
    section_units: Sequence[RankedUnit],
    retrieved_texts: Sequence[str],
    response: str | None = None,
) -> RagasSample:
    """Sample for one question from its ranked section units (:func:`matching.rank_units`)."""
    entries = expected_for_level(question.expected, SECTION)
    ids_of_entries = [entry_id(e) for e in entries]
    retrieved: list[str] = []
    for unit in section_units:
        mapped = [ids_of_entries[i] for i in sorted(unit.satisfies) if ids_of_entries[i]]
        for uid in mapped or [unit.id]:
            if uid not in retrieved:
                retrieved.append(uid)
    references = list(dict.fromkeys(i for i in ids_of_entries if i))
    contexts = list(question.reference_contexts) or [e.text for e in question.expected if e.text]
    return RagasSample(
        question=question.question,
        retrieved_ids=retrieved,
        reference_ids=references,
        retrieved_contexts=[t for t in retrieved_texts if t],
        reference_contexts=contexts,
        reference_answer=question.reference_answer,
        response=response,
    )


def _import_ragas():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ragas.dataset_schema import SingleTurnSample
        from ragas.metrics import (
            IDBasedContextPrecision,
            IDBasedContextRecall,
            NonLLMContextPrecisionWithReference,
            NonLLMContextRecall,
        )
    return SingleTurnSample, {
        ID_PRECISION: IDBasedContextPrecision,
        ID_RECALL: IDBasedContextRecall,
        NONLLM_PRECISION: NonLLMContextPrecisionWithReference,
        NONLLM_RECALL: NonLLMContextRecall,
    }


def _run(coro_factory: Callable[[], Awaitable[Any]]) -> Any:
    """asyncio.run, or in a worker thread when called from inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro_factory())
        except BaseException as exc:  # pragma: no cover - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _offline_inputs(metric: str, s: RagasSample) -> dict[str, Any] | None | float:
    """Sample fields for a metric; None = not applicable (NaN); a float = fixed score."""
    if metric in (ID_PRECISION, ID_RECALL):
        if not s.reference_ids:
            return None
        if not s.retrieved_ids:
            return 0.0
        return {"retrieved_context_ids": s.retrieved_ids, "reference_context_ids": s.reference_ids}
    if not s.reference_contexts:
        return None
    if not s.retrieved_contexts:
        return 0.0
    return {"retrieved_contexts": s.retrieved_contexts, "reference_contexts": s.reference_contexts}


def score_offline(samples: Sequence[RagasSample]) -> RagasResult:
    """The four no-LLM ragas metrics, scored sample by sample in one event loop."""
    started = time.perf_counter()
    SingleTurnSample, classes = _import_ragas()
    metrics = {name: cls() for name, cls in classes.items()}
    per_sample: list[dict[str, float]] = [{} for _ in samples]
    skipped: dict[str, str] = {}

    async def go() -> None:
        for name, metric in metrics.items():
            for row, s in zip(per_sample, samples):
                inputs = _offline_inputs(name, s)
                if inputs is None:
                    row[name] = math.nan
                elif isinstance(inputs, float):
                    row[name] = inputs
                else:
                    row[name] = float(await metric.single_turn_ascore(SingleTurnSample(**inputs)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run(go)
    for name in metrics:
        if not any(not math.isnan(row[name]) for row in per_sample):
            skipped[name] = (
                "no question has expected entries naming both doc_path and section"
                if name in (ID_PRECISION, ID_RECALL)
                else "no question has reference_contexts or expected text snippets"
            )
    scores = {name: _mean(row[name] for row in per_sample) for name in metrics if name not in skipped}
    return RagasResult(scores, per_sample, skipped, time.perf_counter() - started)


def llm_skip_reasons(config: LLMConfig | None, samples: Sequence[RagasSample]) -> dict[str, str]:
    """Why each LLM-judged metric cannot run (empty dict: all can)."""
    if config is None:
        reason = "no LLM configured: set OPENAI_API_KEY and OPENAI_BASE_URL for an OpenAI-compatible endpoint"
        return {m: reason for m in LLM_METRICS}
    reasons: dict[str, str] = {}
    has_reference = any(s.reference_answer for s in samples)
    has_response = any(s.response for s in samples)
    for metric in (LLM_CONTEXT_PRECISION, LLM_CONTEXT_RECALL):
        if not has_reference:
            reasons[metric] = "no question has a reference_answer"
    no_answer = "needs a generated answer: retrieval-only evaluation (pass answer_fn to evaluate_retrieval)"
    for metric in (FAITHFULNESS, ANSWER_RELEVANCY, ANSWER_CORRECTNESS):
        if not has_response:
            reasons[metric] = no_answer
    for metric in (ANSWER_RELEVANCY, ANSWER_CORRECTNESS):
        if metric not in reasons and not config.embedding_model:
            reasons[metric] = "needs an embedding model: set RAG_EVAL_EMBEDDING_MODEL"
    if ANSWER_CORRECTNESS not in reasons and not has_reference:
        reasons[ANSWER_CORRECTNESS] = "no question has a reference_answer"
    return reasons


def score_llm(samples: Sequence[RagasSample], config: LLMConfig | None) -> RagasResult:
    """LLM-judged ragas metrics; those that cannot run are returned in ``skipped``."""
    started = time.perf_counter()
    skipped = llm_skip_reasons(config, samples)
    to_run = [m for m in LLM_METRICS if m not in skipped]
    per_sample: list[dict[str, float]] = [{} for _ in samples]
    if not to_run:
        return RagasResult({}, per_sample, skipped, time.perf_counter() - started)
    assert config is not None
    try:
        metrics = _build_llm_metrics(config, to_run)
    except Exception as exc:  # missing optional package, bad config ...
        for m in to_run:
            skipped[m] = f"could not set up the LLM: {type(exc).__name__}: {exc}"
        return RagasResult({}, per_sample, skipped, time.perf_counter() - started)

    from ragas.dataset_schema import SingleTurnSample

    required = {
        LLM_CONTEXT_PRECISION: ("retrieved_contexts", "reference"),
        LLM_CONTEXT_RECALL: ("retrieved_contexts", "reference"),
        FAITHFULNESS: ("response", "retrieved_contexts"),
        ANSWER_RELEVANCY: ("response",),
        ANSWER_CORRECTNESS: ("response", "reference"),
    }
    errors: dict[str, str] = {}

    async def go() -> None:
        gate = asyncio.Semaphore(LLM_CONCURRENCY)

        async def one(name: str, metric: Any, row: dict[str, float], s: RagasSample) -> None:
            fields = {
                "user_input": s.question,
                "retrieved_contexts": s.retrieved_contexts,
                "reference": s.reference_answer,
                "response": s.response,
            }
            if any(not fields[f] for f in required[name]):
                row[name] = math.nan
                return
            async with gate:
                try:
                    row[name] = float(await metric.single_turn_ascore(SingleTurnSample(**fields)))
                except Exception as exc:
                    row[name] = math.nan
                    errors.setdefault(name, f"{type(exc).__name__}: {exc}")

        await asyncio.gather(
            *(one(n, m, row, s) for n, m in metrics.items() for row, s in zip(per_sample, samples))
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run(go)
    scores: dict[str, float] = {}
    for name in metrics:
        value = _mean(row.get(name, math.nan) for row in per_sample)
        if math.isnan(value):
            skipped[name] = f"failed on every question: {errors.get(name, 'no applicable question')}"
        else:
            scores[name] = value
    return RagasResult(scores, per_sample, skipped, time.perf_counter() - started)


def _build_llm_metrics(config: LLMConfig, names: Sequence[str]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_openai import ChatOpenAI, OpenAIEmbeddings
        from ragas.embeddings import LangchainEmbeddingsWrapper
        from ragas.llms import LangchainLLMWrapper
        from ragas.metrics import (
            AnswerCorrectness,
            Faithfulness,
            LLMContextPrecisionWithReference,
            LLMContextRecall,
            ResponseRelevancy,
        )
        from ragas.run_config import RunConfig

        llm = LangchainLLMWrapper(
            ChatOpenAI(model=config.model, api_key=config.api_key, base_url=config.base_url, temperature=0)
        )
        embeddings = None
        if config.embedding_model:
            embeddings = LangchainEmbeddingsWrapper(
                OpenAIEmbeddings(model=config.embedding_model, api_key=config.api_key, base_url=config.base_url)
            )
        factories = {
            LLM_CONTEXT_PRECISION: lambda: LLMContextPrecisionWithReference(llm=llm),
            LLM_CONTEXT_RECALL: lambda: LLMContextRecall(llm=llm),
            FAITHFULNESS: lambda: Faithfulness(llm=llm),
            ANSWER_RELEVANCY: lambda: ResponseRelevancy(llm=llm, embeddings=embeddings),
            ANSWER_CORRECTNESS: lambda: AnswerCorrectness(llm=llm, embeddings=embeddings),
        }
        run_config = RunConfig(timeout=120, max_retries=3)
        metrics = {}
        for name in names:
            metric = factories[name]()
            metric.init(run_config)
            metrics[name] = metric
    return metrics


def score_samples(
    samples: Sequence[RagasSample],
    *,
    llm_config: LLMConfig | None = None,
    offline: bool = True,
) -> RagasResult:
    """Offline metrics plus LLM-judged ones with ``llm_config`` (``None`` = no LLM; the caller's
    settings make one: LLMConfig.from_settings). Per-sample dicts and skip reasons of both parts are merged."""
    config = llm_config
    parts = []
    if offline:
        parts.append(score_offline(samples))
    parts.append(score_llm(samples, config))  # type: ignore[arg-type]
    merged = RagasResult({}, [{} for _ in samples], {}, 0.0)
    for part in parts:
        merged.scores.update(part.scores)
        merged.skipped.update(part.skipped)
        merged.elapsed_s += part.elapsed_s
        for row, extra in zip(merged.per_sample, part.per_sample):
            row.update(extra)
    return merged


def _mean(values) -> float:
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(vals) / len(vals) if vals else math.nan
