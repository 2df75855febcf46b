"""retrieval_evaluation: the index's quality, scored after ingestion and plotted across runs.

Downstream of vector_index. Every eval set under RAG_EVAL_DIR (or the files given in run config)
is run through every retrieval mode; numeric metadata (Dagster plots it across materializations),
a table per mode (headline means with their 95 % intervals), hybrid against each single mode and this
run against the one before (paired intervals), the worst questions, and per-question rows saved as
parquet/CSV. Three checks ride on the asset: retrieval_quality (hybrid section recall@5 against a threshold),
eval_labels_resolve (every expected source still exists in the index) and hybrid_not_behind
(hybrid not clearly worse than one of its parts, by the paired intervals).

Extra labelled corpora (RAG_EVAL_CORPORA, e.g. the bundled FastAPI sample) are indexed into side
indexes of their own and scored the same way; their numbers are prefixed with the corpus name
(``fastapi/hybrid/section.mrr@10``), so the UI plots every corpus side by side per mode.
An index (or extra corpus) with no labelled set is scored on a synthetic one instead: the
``synthetic_eval_set`` asset generates known-item questions from the documents themselves
(rag_assets.evaluation.synthetic; RAG_EVAL_SYNTHETIC=auto|always|off). Its numbers are always
prefixed ``synthetic/`` (``synthetic/hybrid/section.mrr@10``), its tables titled so, its saved JSON
says ``"eval_set": {"kind": "synthetic", ...}``, and no check rides on them (the thresholds are for
labelled sets). With synthetic sets off and no eval set, the asset materializes with ``skipped`` and
the reason, and no check.
"""

import math
import time
from dataclasses import dataclass
from typing import Any

import dagster as dg

from rag_assets.config import EvaluationSettings
from rag_assets.index.generation import current_generation
from rag_assets.vocabulary.modes import RetrievalMode

from rag_assets.corpus import Corpus

from .assets import IngestionAssets
from .resources import EmbedderResource, RunSettingsResource, VectorStoreResource
from .synthetic_eval_asset import (SYNTHETIC, SYNTHETIC_PREFIX, build_synthetic, synthetic_eval_set_asset,
                                   synthetic_for_evaluation, synthetic_wanted)

EVALUATION = "evaluation"
QUALITY_METRIC = "section.recall@5"
GENERATION_KEY = "index_generation"  # the index version an evaluation scored (evaluation_sensor compares it)
# What the UI plots per mode: the headline metrics (every metric is in the saved rows and JSON).
PLOTTED = (
    "section.hit@1", "section.precision@3", "section.recall@3", "section.recall@5", "section.recall@10",
    "section.mrr@10", "section.ndcg@10", "document.recall@5", "document.mrr@10", "distinct_pages@10", "latency_ms.p95",
    "context_tokens.mean",  # the mean size of a result's context (RAG_CONTEXT_TOKENS; absent when 0)
)


class EvaluationConfig(dg.Config):
    eval_sets: list[str] = []  # JSONL files; [] = every *.jsonl under RAG_EVAL_DIR
    corpora: str = ""  # extra labelled corpora, "name=folder;..."; "" = RAG_EVAL_CORPORA
    top_k: int = 0  # 0 = RAG_EVAL_TOP_K
    modes: list[str] = list(RetrievalMode.names())


def _score(questions, model, store, settings, modes, top_k, results_dir, eval_set: dict):
    from rag_assets.evaluation.ragas_scores import LLMConfig
    from rag_assets.evaluation.runner import EvaluationReport, evaluate_retrieval
    from rag_assets.retrieval.retriever import Retriever

    retriever = Retriever(model, store, settings)
    started = time.perf_counter()
    previous = EvaluationReport.latest_saved(results_dir)  # read before this run's save replaces it
    report = evaluate_retrieval(questions, retriever.search, modes=modes, top_k=top_k,
                                llm_config=LLMConfig.from_settings(settings.evaluation))
    report.eval_set = eval_set
    if previous is not None:
        report.compare_with(*previous)  # did the index move its figures, beyond the eval set's noise?
    return _Scored(report, time.perf_counter() - started, report.save(results_dir))


@dataclass(frozen=True)
class _Scored:
    report: Any  # EvaluationReport
    seconds: float
    saved: dict  # what EvaluationReport.save wrote


def _score_corpus(context, corpus, model, settings, modes, top_k) -> dict:
    """Bring the corpus's side index up to date, score its questions, and return its metadata."""
    from rag_assets.index.embedding_cache import EmbeddingCache
    from rag_assets.evaluation.evalset import load_eval_sets
    from rag_assets.ingest.folder_index import index_folder
    from rag_assets.index.chroma_store import ChromaStore
    from rag_assets.retrieval.snapshot_writer import SnapshotWriter

    from rag_assets.evaluation.synthetic.folder import synthetic_dir

    side = corpus.settings(settings)
    # the main embedding cache: a text embedded for either index is never embedded again
    cache = EmbeddingCache.for_settings(settings.paths)
    store = ChromaStore.for_settings(side.paths, model)
    synced = index_folder(corpus.docs_dir, side, model, cache=cache, manifest=side.state_dir / "manifest.json",
                          snapshot=SnapshotWriter(side, store))
    for error in synced["errors"]:
        context.log.warning(f"eval corpus {corpus.name}: {error['doc_path']}: {error['error']}")
    prefix = f"{corpus.name}/"
    if corpus.eval_sets():
        loaded = load_eval_sets(corpus.eval_sets())
        for error in loaded.errors:
            context.log.warning(f"eval corpus {corpus.name}: {error}")
        if not loaded.questions:
            raise dg.Failure(f"eval corpus {corpus.name}: no valid question in {corpus.folder}")
        questions, eval_set, results_dir, synthetic = (loaded.questions, {"kind": "labelled", "paths": [
            str(p) for p in corpus.eval_sets()]}, settings.eval_results_dir / corpus.name, None)
    else:  # no labelled set (and synthetic sets not off): a synthetic one of its own documents
        synthetic = build_synthetic(settings, context.log, docs_dir=corpus.docs_dir, corpus=corpus.name)
        if not synthetic.questions:
            raise dg.Failure(f"eval corpus {corpus.name}: no eval set, and no passage of prose in {corpus.docs_dir} "
                             "to generate a synthetic one from")
        questions, eval_set, results_dir = synthetic.questions, synthetic.describe(), synthetic_dir(settings, corpus.name)
        prefix += SYNTHETIC_PREFIX
    scored = _score(questions, model, store, side, modes, top_k, results_dir, eval_set)
    return {
        **_report_metadata(scored, prefix=prefix, synthetic=synthetic),
        f"{prefix}questions": len(questions),
        f"{corpus.name}/chunks_in_index": store.count(),
        f"{corpus.name}/documents_reindexed": synced["documents"] - synced["unchanged"],
    }


def _report_metadata(scored: _Scored, prefix: str, synthetic=None) -> dict:
    """Plotted numbers per mode (``{prefix}{mode}/{metric}``), tables and worst questions; a synthetic
    set's tables say so in their title."""
    report = scored.report
    title = "" if synthetic is None else (
        f"**Synthetic eval set** {synthetic.version} ({synthetic.manifest['generator']}, "
        f"{len(synthetic.questions)} questions generated from the documents, not labelled by a person)\n\n")
    metadata: dict = {
        f"{prefix}seconds": round(scored.seconds, 2),
        f"{prefix}results_parquet": dg.MetadataValue.path(str(scored.saved["parquet"])),
    }
    for mode in report.modes:
        for name in PLOTTED:
            value = report.metrics[mode].get(name)
            if value is not None and not math.isnan(value):
                metadata[f"{prefix}{mode}/{name}"] = round(float(value), 4)
        for name, value in report.ragas.get(mode, {}).items():
            if not math.isnan(value):
                metadata[f"{prefix}{mode}/ragas.{name}"] = round(float(value), 4)
        metadata[f"{prefix}{mode}/table"] = dg.MetadataValue.md(title + report.markdown_table(mode))
        metadata[f"{prefix}{mode}/worst_questions"] = dg.MetadataValue.md(title + _worst_table(report, mode))
    differences = report.differences_table()  # hybrid minus each single mode, paired intervals
    if differences:
        metadata[f"{prefix}hybrid_vs_single_modes"] = dg.MetadataValue.md(title + differences)
    changes = report.changes_table()  # against the evaluation before, over the questions both asked
    if changes:
        metadata[f"{prefix}since_last_evaluation"] = dg.MetadataValue.md(title + changes)
    if report.skipped:
        metadata[f"{prefix}ragas_skipped"] = dg.MetadataValue.json(report.skipped)
    return metadata


def _worst_table(report, mode: str, n: int = 5) -> str:
    worst = report.worst(mode, n)
    lines = ["| question | expected | retrieved (top 5) |", "|---|---|---|"]
    for row in worst.itertuples(index=False):
        lines.append(f"| {row.question} | {'<br>'.join(row.expected_units)} | {'<br>'.join(row.retrieved_units)} |")
    return "\n".join(lines)


def _quality_check(report, evaluation: EvaluationSettings) -> dg.AssetCheckResult:
    hybrid = RetrievalMode.HYBRID.value
    mode = hybrid if hybrid in report.metrics else report.modes[0]
    value = float(report.metrics[mode].get(QUALITY_METRIC, 0.0))
    threshold = evaluation.eval_min_hybrid_recall_at_5
    return dg.AssetCheckResult(
        check_name="retrieval_quality",
        passed=value >= threshold,
        severity=dg.AssetCheckSeverity[evaluation.eval_check_severity.upper()],
        metadata={"mode": mode, QUALITY_METRIC: round(value, 4), "threshold": threshold},
    )


def _hybrid_check(report, evaluation: EvaluationSettings) -> dg.AssetCheckResult:
    """Hybrid, the default mode, must not be clearly worse than one of its parts on this eval set."""
    behind = report.hybrid_behind()
    metadata: dict = {"compared_with": ", ".join(report.differences) or "none (hybrid and a single mode not both scored)",
                      "behind": len(behind)}
    if behind:
        metadata["problems"] = dg.MetadataValue.md("\n".join(
            f"- hybrid − {mode}, {name}: {d.value:+.3f} ({d.low:+.3f} to {d.high:+.3f}); on this corpus "
            f"RAG_RETRIEVAL_MODE={mode} may serve better" for mode, name, d in behind))
    return dg.AssetCheckResult(
        check_name="hybrid_not_behind",
        passed=not behind,
        severity=dg.AssetCheckSeverity[evaluation.eval_check_severity.upper()],
        metadata=metadata,
    )


def _labels_check(report, store, evaluation: EvaluationSettings) -> dg.AssetCheckResult:
    units, doc_paths = [], set()
    for _, _, meta in store.iter_all():
        doc_paths.add(meta["doc_path"])
        units.append((meta["doc_path"], meta.get("section", ""), meta.get("heading_breadcrumb", "")))
    unresolved = report.unresolved_labels(units, doc_paths)
    metadata: dict = {"unresolved": len(unresolved)}
    if unresolved:
        metadata["problems"] = dg.MetadataValue.md(
            "\n".join(f"- {u['question_id']}: {u['reason']}" for u in unresolved[:100])
        )
    return dg.AssetCheckResult(
        check_name="eval_labels_resolve",
        passed=not unresolved,
        severity=dg.AssetCheckSeverity[evaluation.eval_check_severity.upper()],
        metadata=metadata,
    )


@dataclass(frozen=True)
class EvaluationAssets:
    synthetic_eval_set: dg.AssetsDefinition
    retrieval_evaluation: dg.AssetsDefinition

    @property
    def all(self) -> list[dg.AssetsDefinition]:
        return [self.synthetic_eval_set, self.retrieval_evaluation]


def build_evaluation_assets(corpus: Corpus, ingestion: IngestionAssets) -> EvaluationAssets:
    """synthetic_eval_set and retrieval_evaluation of one corpus, downstream of its index."""
    synthetic_eval_set = synthetic_eval_set_asset(corpus, ingestion, ingestion.names.group(EVALUATION))
    return EvaluationAssets(synthetic_eval_set, _retrieval_evaluation_asset(corpus, ingestion, synthetic_eval_set))


def _evaluation_definition(names, group: str, evaluation_key: dg.AssetKey, ingestion: IngestionAssets,
                           synthetic_eval_set: dg.AssetsDefinition) -> dict:
    """retrieval_evaluation's multi_asset arguments: its spec (after the index and the synthetic set)
    and its three checks."""
    return dict(
        specs=[dg.AssetSpec(
            evaluation_key,
            deps=[ingestion.vector_index, synthetic_eval_set],
            group_name=group,
            description="Hit@k, precision@k, recall@k, MRR, nDCG (section and document level) and ragas scores, "
                        "per mode, on the main index and on every extra eval corpus (on a synthetic eval set, "
                        "labelled synthetic/, where there is no labelled one).",
        )],
        check_specs=[
            dg.AssetCheckSpec("retrieval_quality", asset=evaluation_key,
                              description=f"hybrid {QUALITY_METRIC} >= RAG_EVAL_MIN_HYBRID_RECALL_AT_5"),
            dg.AssetCheckSpec("eval_labels_resolve", asset=evaluation_key,
                              description="every expected source of the eval sets exists in the index"),
            dg.AssetCheckSpec("hybrid_not_behind", asset=evaluation_key,
                              description="hybrid is not clearly worse than vector or keyword alone "
                                          "(paired 95% interval below 0) on section recall@5, MRR or document recall@5"),
        ],
        # A multi-asset that can be subset may leave its checks out: with no eval set there is nothing to
        # check, and evaluation_sensor (which runs this after every index change) must not turn "nothing to
        # evaluate" into a FAILURE run. It materializes with the reason instead and yields no check.
        can_subset=True,
        name=names.scoped("retrieval_evaluation"),
    )


def _retrieval_evaluation_asset(corpus: Corpus, ingestion: IngestionAssets,
                                synthetic_eval_set: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The corpus's retrieval_evaluation (with its three checks), after its vector_index and synthetic set."""
    names = ingestion.names
    group = names.group(EVALUATION)
    evaluation_key = names.key("retrieval_evaluation")

    @dg.multi_asset(**_evaluation_definition(names, group, evaluation_key, ingestion, synthetic_eval_set))
    def retrieval_evaluation(
        context: dg.AssetExecutionContext,
        config: EvaluationConfig,
        embedder: EmbedderResource,
        vector_store: VectorStoreResource,
        run_settings: RunSettingsResource,
    ):
        """Scores of every mode on the main index (RAG_EVAL_DIR) and on each extra corpus (RAG_EVAL_CORPORA)."""
        # imported here, not at module level: pandas and the retrieval stack would slow every `rag ingest`
        from rag_assets.evaluation.corpora import NO_EVAL_SET, SYNTHETIC_OFF, main_eval_sets, parse_eval_corpora

        settings = embedder.settings(run_settings.settings_for(corpus))
        paths = main_eval_sets(settings.eval_dir, config.eval_sets)
        try:
            corpora = parse_eval_corpora(config.corpora or settings.eval_corpora)
        except ValueError as exc:
            raise dg.Failure(f"RAG_EVAL_CORPORA: {exc}") from None
        for side in corpora:
            problem = side.problem(require_eval_set=settings.eval_synthetic == "off")
            if problem:
                raise dg.Failure(problem)
        use_synthetic = synthetic_wanted(settings, bool(paths))
        if not paths and not corpora and not use_synthetic:
            reason = NO_EVAL_SET.format(eval_dir=settings.eval_dir) + SYNTHETIC_OFF
            context.log.info(f"skipped: {reason}")
            yield dg.MaterializeResult(asset_key=evaluation_key,
                                       metadata={"skipped": reason, GENERATION_KEY: current_generation(settings)})
            return
        synthetic = synthetic_for_evaluation(context, settings, synthetic_eval_set.key) if use_synthetic else None
        if synthetic is not None and not synthetic.questions and not paths and not corpora:
            reason = (f"no eval set, and nothing to generate a synthetic one from: no passage of prose in "
                      f"{settings.docs_dir} (run `rag ingest` on a folder of documents, or put *.jsonl under {settings.eval_dir})")
            context.log.info(f"skipped: {reason}")
            yield dg.MaterializeResult(asset_key=evaluation_key,
                                       metadata={"skipped": reason, GENERATION_KEY: current_generation(settings)})
            return

        top_k = config.top_k or settings.eval_top_k
        model = embedder.get(settings)
        # read before scoring: an index change during the evaluation leaves a newer generation, which
        # evaluation_sensor then scores again
        metadata: dict = {"top_k": top_k, GENERATION_KEY: current_generation(settings)}
        checks: list[dg.AssetCheckResult] = []
        if paths:
            checks = _add_labelled_scores(metadata, context, paths, model, vector_store, settings, config.modes, top_k)
        if synthetic is not None and synthetic.questions:
            _add_synthetic_scores(metadata, synthetic, model, vector_store, settings, config.modes, top_k)
        metadata["eval_set_kind"] = "+".join(k for k, on in (("labelled", bool(paths)), (SYNTHETIC, synthetic is not None
                                                                                          and bool(synthetic.questions))) if on)
        for side in corpora:
            metadata.update(_score_corpus(context, side, model, settings, config.modes, top_k))

        yield dg.MaterializeResult(asset_key=evaluation_key, metadata=metadata)
        selected = {key.name for key in context.selected_asset_check_keys}
        for check in checks:
            if check.check_name in selected:
                yield check

    return retrieval_evaluation


def _add_labelled_scores(metadata: dict, context, paths: list[str], model, vector_store, settings, modes,
                         top_k: int) -> list[dg.AssetCheckResult]:
    """Score the labelled eval sets (their numbers into metadata); the checks that ride on them."""
    from rag_assets.evaluation.evalset import load_eval_sets

    loaded = load_eval_sets(paths)
    for error in loaded.errors:
        context.log.warning(f"eval set: {error}")
    if not loaded.questions:
        raise dg.Failure("no valid question in " + ", ".join(paths),
                         metadata={"errors": [str(e) for e in loaded.errors]})
    store = vector_store.open(model, settings)
    scored = _score(loaded.questions, model, store, settings, modes, top_k, settings.eval_results_dir,
                    {"kind": "labelled", "paths": paths})
    metadata.update(_report_metadata(scored, prefix=""))
    metadata.update({
        "questions": len(loaded.questions),
        "eval_sets": dg.MetadataValue.json(paths),
        "eval_set_errors": len(loaded.errors),
        "chunks_in_index": store.count(),
    })
    if loaded.errors:
        metadata["eval_set_problems"] = dg.MetadataValue.md("\n".join(f"- {e}" for e in loaded.errors[:50]))
    return [_quality_check(scored.report, settings.evaluation), _labels_check(scored.report, store, settings.evaluation),
            _hybrid_check(scored.report, settings.evaluation)]


def _add_synthetic_scores(metadata: dict, synthetic, model, vector_store, settings, modes, top_k: int) -> None:
    """Score the synthetic set (its numbers into metadata, prefixed synthetic/; no check rides on them)."""
    from rag_assets.evaluation.synthetic.folder import synthetic_dir

    store = vector_store.open(model, settings)
    scored = _score(synthetic.questions, model, store, settings, modes, top_k, synthetic_dir(settings),
                    synthetic.describe())
    metadata.update(_report_metadata(scored, prefix=SYNTHETIC_PREFIX, synthetic=synthetic))
    metadata.update({
        f"{SYNTHETIC_PREFIX}questions": len(synthetic.questions),
        f"{SYNTHETIC_PREFIX}version": synthetic.version,
        f"{SYNTHETIC_PREFIX}eval_set": dg.MetadataValue.json(synthetic.describe()),
    })
    metadata.setdefault("chunks_in_index", store.count())
