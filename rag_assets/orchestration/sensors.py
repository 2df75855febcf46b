"""docs_sensor: follow every save, delete, rename, revert and restore in the docs folder.

Each tick asks rag_assets.ingest.change_detection what changed since its cursor, keeps only the documents
the one staleness rule (ingestion.stale_documents) says still need work (a version `rag ingest`
already indexed needs no run), registers new documents as partitions, and requests the catalog run
(only when files appeared or vanished: it removes vanished documents) plus runs over the changed
documents in slices of RAG_DOCUMENTS_PER_RUN. Run keys come from the cursor's change counter:
unique per change event, the same when one tick is evaluated twice.
The sensor never removes most of the index on its own: such a tick is logged and skipped.
"""

import os

import dagster as dg

from rag_assets.ingest.catalog import deletion_refusal, vanished_documents
from rag_assets.ingest.change_detection import detect_changes
from rag_assets.models import Catalog
from rag_assets.index.stage_store import StageStore

from .assets import PER_DOCUMENT_ASSETS, stale_now, document_catalog, documents_partitions
from .partition_ranges import plan_runs
from .resources import current_settings

SENSOR_INTERVAL_SECONDS = int(os.environ.get("RAG_SENSOR_INTERVAL_SECONDS", "30"))


@dg.sensor(
    name="docs_sensor",
    minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.STOPPED,
    target=[document_catalog, *PER_DOCUMENT_ASSETS],
    description="Re-ingests new, changed, reverted and restored markdown files and removes deleted ones.",
)
def docs_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    settings = current_settings()
    try:
        changes = detect_changes(settings.docs_dir, context.cursor, max_file_bytes=settings.max_file_bytes)
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
    if changes.deleted:
        refusal = _mass_deletion(settings, stages, changes)
        if refusal:
            context.log.warning(refusal)
            # the cursor stays: the same look next tick, nothing removed until the files return or
            # someone removes them on purpose (`rag ingest --allow-mass-delete`)
            return dg.SensorResult(skip_reason=dg.SkipReason(refusal), cursor=context.cursor)

    existing = context.instance.get_dynamic_partitions(documents_partitions.name)
    known = set(existing)
    stale = stale_now(changes.to_process, stages)
    to_process = [r for r in changes.to_process if r.doc_path in stale or r.partition_key not in known]
    new_keys = [r.partition_key for r in to_process if r.partition_key not in known]
    order = list(existing) + new_keys  # the order the partitions will have once added
    prefix = f"docs-{changes.tick}"
    run_requests = []
    if new_keys or changes.deleted:
        run_requests.append(dg.RunRequest(run_key=f"{prefix}-catalog", asset_selection=[document_catalog.key]))
    for i, run in enumerate(plan_runs(order, {r.partition_key for r in to_process}, settings.documents_per_run)):
        run_requests.append(
            dg.RunRequest(
                run_key=f"{prefix}-documents-{i}",
                asset_selection=[a.key for a in PER_DOCUMENT_ASSETS],
                tags={**run.tags, "rag/changed_documents": str(len(run.keys))},
            )
        )
    if not run_requests:
        return dg.SensorResult(skip_reason=dg.SkipReason("changed files are already indexed"), cursor=changes.cursor)
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[documents_partitions.build_add_request(new_keys)] if new_keys else [],
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
