"""docs_sensor: follow every save, delete, rename, revert and restore in the docs folder.

Each tick asks rag_assets.ingest.change_detection what changed since its cursor, keeps only the documents
the one staleness rule (ingestion.stale_documents) says still need work (a version `rag ingest`
already indexed needs no run), registers new documents as partitions, and requests the catalog run
(only when files appeared or vanished: it removes vanished documents) plus runs over the changed
documents in slices of RAG_DOCUMENTS_PER_RUN. Run keys come from the cursor's change counter:
unique per change event, the same when one tick is evaluated twice.
The sensor never removes most of the index on its own: such a tick is logged and skipped.

The documents runs are queued before the catalog run: a new file is searchable after one run, not
two (the documents run reads a key the catalog has not seen yet as its path).

evaluation_sensor: re-scores the index after it changed, batched. Each evaluation records the index
generation it scored; when the generation now differs and no ingestion or evaluation run is queued
or running, one evaluation run is asked for (run key = the generation, so one per index version).
While ingestion keeps running it waits, at most EVALUATION_MAX_DEFER_SECONDS, then evaluates
anyway, so a folder that never stops changing is still scored.
"""

import json
import time

import dagster as dg

from rag_assets.ingest.catalog import deletion_refusal, vanished_documents
from rag_assets.ingest.change_detection import detect_changes
from rag_assets.models import Catalog
from rag_assets.index.stage_store import StageStore

from rag_assets.config import Settings
from rag_assets.index.generation import EMPTY as EMPTY_INDEX, current_generation

from rag_assets.corpus import Corpus

from .assets import IngestionAssets, stale_now
from .evaluation import GENERATION_KEY, EvaluationAssets
from .partition_ranges import plan_runs

# the run queue's tag limits (dagster.yaml) keep index writers one at a time and let one evaluation
# run beside them
INDEX_RUN_TAGS = {"rag/run": "index"}
EVALUATION_RUN_TAGS = {"rag/run": "evaluation"}
EVALUATION_MAX_DEFER_SECONDS = 300


def build_docs_sensor(corpus: Corpus, assets: IngestionAssets) -> dg.SensorDefinition:
    names, partitions = assets.names, assets.partitions
    document_catalog, per_document = assets.document_catalog, assets.per_document

    @dg.sensor(
        name=names.scoped("docs_sensor"),
        # the interval is part of the definitions, fixed at load
        minimum_interval_seconds=corpus.settings().sensor_interval_seconds,
        default_status=dg.DefaultSensorStatus.STOPPED,
        target=[document_catalog, *per_document],
        description="Re-ingests new, changed, reverted and restored markdown files and removes deleted ones.",
    )
    def docs_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        settings = corpus.settings()
        return _docs_tick(context, settings, partitions, document_catalog, per_document)

    return docs_sensor


def _docs_tick(context, settings: Settings, partitions, document_catalog, per_document) -> dg.SensorResult:
    try:
        changes = detect_changes(settings.docs_dir, context.cursor, max_file_bytes=settings.max_file_bytes, wait=True,
                                 index_snippets=settings.index_snippets)
    except FileNotFoundError as exc:
        # the cursor is kept: a folder that comes back (remounted) is not a change
        return dg.SensorResult(skip_reason=dg.SkipReason(f"{exc}; nothing removed"), cursor=context.cursor)
    for error in changes.errors:
        context.log.warning(f"{error.path}: {error.reason}")
    if changes.unstable:
        context.log.info(f"{len(changes.unstable)} file(s) still being written, next tick: {changes.unstable[:5]}")
    if not changes.any:
        return dg.SensorResult(skip_reason=dg.SkipReason("no document changed"), cursor=changes.cursor)

    stages = StageStore.for_settings(settings)
    refusal = _mass_deletion(settings, stages, changes) if changes.deleted else None
    if refusal:
        context.log.warning(refusal)
        if not changes.to_process:
            # the cursor stays: the same look next tick, nothing removed until the files return or
            # someone removes them on purpose (`rag ingest --allow-mass-delete`)
            return dg.SensorResult(skip_reason=dg.SkipReason(refusal), cursor=context.cursor)
        # new and changed files are still indexed; the vanished ones stay (no catalog run), and
        # `rag ingest` or nightly_reconcile reports the refusal again

    existing = context.instance.get_dynamic_partitions(partitions.name)
    known = set(existing)
    stale = stale_now(changes.to_process, stages, settings)
    to_process = [r for r in changes.to_process if r.doc_path in stale or r.partition_key not in known]
    new_keys = [r.partition_key for r in to_process if r.partition_key not in known]
    order = list(existing) + new_keys  # the order the partitions will have once added
    prefix = f"docs-{changes.tick}"
    run_requests = []
    for i, run in enumerate(plan_runs(order, {r.partition_key for r in to_process}, settings.documents_per_run)):
        run_requests.append(
            dg.RunRequest(
                run_key=f"{prefix}-documents-{i}",
                asset_selection=[a.key for a in per_document],
                tags={**run.tags, **INDEX_RUN_TAGS, "rag/changed_documents": str(len(run.keys))},
            )
        )
    if (new_keys or changes.deleted) and not refusal:
        run_requests.append(dg.RunRequest(run_key=f"{prefix}-catalog", asset_selection=[document_catalog.key],
                                          tags=INDEX_RUN_TAGS))
    if not run_requests:
        return dg.SensorResult(skip_reason=dg.SkipReason("changed files are already indexed"), cursor=changes.cursor)
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[partitions.build_add_request(new_keys)] if new_keys else [],
        cursor=changes.cursor,
    )


def _mass_deletion(settings, stages: StageStore, changes) -> str | None:
    """The catalog run's deletion guard, applied before asking for that run."""
    previous = stages.read_catalog()
    if previous is None:
        return None
    gone = set(changes.deleted)
    remaining = Catalog(
        docs_dir=str(settings.docs_dir),
        documents=[d for d in previous.documents if d.doc_path not in gone] + list(changes.added),
        errors=list(changes.errors),
    )
    vanished = vanished_documents(remaining, stages)
    return deletion_refusal(remaining, vanished, settings.max_delete_share, settings.mass_delete_min_documents,
                            settings.allow_mass_delete)


_IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
              dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def build_evaluation_sensor(corpus: Corpus, assets: IngestionAssets, evaluation: EvaluationAssets
                            ) -> dg.SensorDefinition:
    names = assets.names
    evaluation_key = evaluation.retrieval_evaluation.key

    @dg.sensor(
        name=names.scoped("evaluation_sensor"),
        minimum_interval_seconds=corpus.settings().evaluation_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        target=evaluation.all,
        description="Re-scores retrieval after the index changed (batched: once ingestion runs are done); the "
                    "synthetic eval set is brought up to date first (a no-op where a labelled set exists).",
    )
    def evaluation_sensor(context: dg.SensorEvaluationContext):
        return _evaluation_tick(context, corpus.settings(), evaluation_key)

    return evaluation_sensor


def _evaluation_tick(context, settings: Settings, evaluation_key: dg.AssetKey):
    generation = current_generation(settings)
    if generation == EMPTY_INDEX:
        return dg.SkipReason("nothing is indexed yet")
    event = context.instance.get_latest_materialization_event(evaluation_key)
    scored = None
    if event and event.asset_materialization:
        value = event.asset_materialization.metadata.get(GENERATION_KEY)
        scored = getattr(value, "value", value)
    if scored == generation:
        return dg.SkipReason(f"the index ({generation[:8]}) is evaluated")
    in_flight = context.instance.get_runs(filters=dg.RunsFilter(statuses=_IN_FLIGHT))
    if any(r.tags.get("rag/run") == "evaluation" for r in in_flight):
        return dg.SkipReason("an evaluation run is queued or running")
    cursor = json.loads(context.cursor) if context.cursor else {}
    waiting_since = cursor.get("since", time.time()) if cursor.get("generation") == scored else time.time()
    context.update_cursor(json.dumps({"generation": scored, "since": waiting_since}))
    ingesting = [r for r in in_flight if r.tags.get("rag/run") == "index"]
    if ingesting and time.time() - waiting_since < EVALUATION_MAX_DEFER_SECONDS:
        return dg.SkipReason(f"{len(ingesting)} ingestion run(s) in flight; evaluating once they finish")
    return dg.RunRequest(run_key=f"evaluate-{generation}", tags=EVALUATION_RUN_TAGS)
