"""retrieval_evaluation: the index's quality, scored after ingestion and plotted across runs.

Downstream of vector_index. Every eval set under RAG_EVAL_DIR (or the files given in run config)
is run through every retrieval mode; numeric metadata (Dagster plots it across materializations),
a table per mode, the worst questions, and per-question rows saved as parquet/CSV. Two checks ride
on the asset: retrieval_quality (hybrid section recall@5 against a threshold) and
eval_labels_resolve (every expected source still exists in the index).
"""

import math
import time

import dagster as dg

from rag_assets.modes import RetrievalMode

from .assets import vector_index
from .resources import EmbedderResource, VectorStoreResource, current_settings

EVALUATION = "evaluation"
QUALITY_METRIC = "section.recall@5"
# What the UI plots per mode: the headline metrics (every metric is in the saved rows and JSON).
PLOTTED = (
    "section.hit@1", "section.precision@3", "section.recall@3", "section.recall@5", "section.recall@10",
    "section.mrr@10", "section.ndcg@10", "document.recall@5", "document.mrr@10", "latency_ms.p95",
)


class EvaluationConfig(dg.Config):
    eval_sets: list[str] = []  # JSONL files; [] = every *.jsonl under RAG_EVAL_DIR
    top_k: int = 0  # 0 = RAG_EVAL_TOP_K
    modes: list[str] = list(RetrievalMode.names())


@dg.asset(
    deps=[vector_index],
    group_name=EVALUATION,
    check_specs=[
        dg.AssetCheckSpec("retrieval_quality", asset="retrieval_evaluation",
                          description=f"hybrid {QUALITY_METRIC} >= RAG_EVAL_MIN_HYBRID_RECALL_AT_5"),
        dg.AssetCheckSpec("eval_labels_resolve", asset="retrieval_evaluation",
                          description="every expected source of the eval sets exists in the index"),
    ],
    # eager() without its "all upstream partitions exist" guard: one failed document must not stop
    # quality from being measured. Scored when first missing and after every index update.
    automation_condition=(
        (dg.AutomationCondition.newly_missing() | dg.AutomationCondition.any_deps_updated()).since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ),
)
def retrieval_evaluation(
    context: dg.AssetExecutionContext,
    config: EvaluationConfig,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
) -> dg.MaterializeResult:
    """Hit@k, precision@k, recall@k, MRR, nDCG (section and document level) and ragas scores, per mode."""
    # imported here, not at module level: pandas and the retrieval stack would slow every `rag ingest`
    from rag_assets.evaluation.evalset import load_eval_sets
    from rag_assets.evaluation.runner import evaluate_retrieval
    from rag_assets.retrieval import Retriever

    settings = current_settings()
    paths = [p for p in config.eval_sets] or sorted(str(p) for p in settings.eval_dir.glob("*.jsonl"))
    if not paths:
        raise dg.Failure(f"no eval set: put *.jsonl files under {settings.eval_dir} or pass eval_sets in run config")
    loaded = load_eval_sets(paths)
    for error in loaded.errors:
        context.log.warning(f"eval set: {error}")
    if not loaded.questions:
        raise dg.Failure("no valid question in " + ", ".join(paths), metadata={"errors": [str(e) for e in loaded.errors]})

    top_k = config.top_k or settings.eval_top_k
    model = embedder.get()
    store = vector_store.open(model)
    retriever = Retriever(model, store, settings)
    started = time.perf_counter()
    report = evaluate_retrieval(loaded.questions, retriever.search, modes=config.modes, top_k=top_k)
    seconds = time.perf_counter() - started
    saved = report.save(settings.eval_results_dir)

    metadata: dict = {
        "questions": len(loaded.questions),
        "eval_sets": dg.MetadataValue.json(paths),
        "eval_set_errors": len(loaded.errors),
        "top_k": top_k,
        "chunks_in_index": store.count(),
        "seconds": round(seconds, 2),
        "results_parquet": dg.MetadataValue.path(str(saved["parquet"])),
    }
    for mode in report.modes:
        for name in PLOTTED:
            value = report.metrics[mode].get(name)
            if value is not None and not math.isnan(value):
                metadata[f"{mode}/{name}"] = round(float(value), 4)
        for name, value in report.ragas.get(mode, {}).items():
            if not math.isnan(value):
                metadata[f"{mode}/ragas.{name}"] = round(float(value), 4)
        metadata[f"{mode}/table"] = dg.MetadataValue.md(report.markdown_table(mode))
        metadata[f"{mode}/worst_questions"] = dg.MetadataValue.md(_worst_table(report, mode))
    if report.skipped:
        metadata["ragas_skipped"] = dg.MetadataValue.json(report.skipped)
    if loaded.errors:
        metadata["eval_set_problems"] = dg.MetadataValue.md("\n".join(f"- {e}" for e in loaded.errors[:50]))

    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[_quality_check(report, settings), _labels_check(report, store, settings)],
    )


def _worst_table(report, mode: str, n: int = 5) -> str:
    worst = report.worst(mode, n)
    lines = ["| question | expected | retrieved (top 5) |", "|---|---|---|"]
    for row in worst.itertuples(index=False):
        lines.append(f"| {row.question} | {'<br>'.join(row.expected_units)} | {'<br>'.join(row.retrieved_units)} |")
    return "\n".join(lines)


def _quality_check(report, settings) -> dg.AssetCheckResult:
    hybrid = RetrievalMode.HYBRID.value
    mode = hybrid if hybrid in report.metrics else report.modes[0]
    value = float(report.metrics[mode].get(QUALITY_METRIC, 0.0))
    threshold = settings.eval_min_hybrid_recall_at_5
    return dg.AssetCheckResult(
        check_name="retrieval_quality",
        passed=value >= threshold,
        severity=dg.AssetCheckSeverity[settings.eval_check_severity.upper()],
        metadata={"mode": mode, QUALITY_METRIC: round(value, 4), "threshold": threshold},
    )


def _labels_check(report, store, settings) -> dg.AssetCheckResult:
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
        severity=dg.AssetCheckSeverity[settings.eval_check_severity.upper()],
        metadata=metadata,
    )


# Declarative automation: re-score after every ingestion that touched the index. Running by default
# (unlike docs_sensor) so that `dagster dev` measures quality after every run, wherever it came from.
evaluation_automation = dg.AutomationConditionSensorDefinition(
    "evaluation_automation",
    target=[retrieval_evaluation],
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)

EVALUATION_ASSETS = [retrieval_evaluation]
