"""docs_sensor: follow every save, delete and rename in the docs folder.

Each tick asks rag_assets.change_detection what changed, registers new documents as partitions,
and requests at most two runs: the catalog (only when files appeared or vanished: it deletes
vanished documents' vectors) and ONE run over the changed documents, however many there are.
"""


import os

import dagster as dg
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from rag_assets.change_detection import detect_changes
from rag_assets.stage_store import INDEXED, StageStore

from .assets import PER_DOCUMENT_ASSETS, document_catalog, documents_partitions
from .resources import current_settings

SENSOR_INTERVAL_SECONDS = int(os.environ.get("RAG_SENSOR_INTERVAL_SECONDS", "30"))


def range_tags(order: list[str], keys: set[str]) -> dict[str, str]:
    """Partition-range tags covering `keys`, in the dynamic partitions' own order."""
    positions = [i for i, key in enumerate(order) if key in keys]
    return {ASSET_PARTITION_RANGE_START_TAG: order[positions[0]], ASSET_PARTITION_RANGE_END_TAG: order[positions[-1]]}


@dg.sensor(
    name="docs_sensor",
    minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.STOPPED,
    target=[document_catalog, *PER_DOCUMENT_ASSETS],
    description="Re-ingests new and changed markdown files and removes deleted ones, batched into one run per tick.",
)
def docs_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    settings = current_settings()
    changes = detect_changes(settings.docs_dir, context.cursor, max_file_bytes=settings.max_file_bytes)
    for error in changes.errors:
        context.log.warning(error)
    if changes.unstable:
        context.log.info(f"{len(changes.unstable)} file(s) still being written, next tick: {changes.unstable[:5]}")
    if not changes.to_process and not changes.deleted:
        return dg.SensorResult(skip_reason=dg.SkipReason("no document changed"), cursor=changes.cursor)

    existing = context.instance.get_dynamic_partitions(documents_partitions.name)
    known = set(existing)
    # A version already indexed (by `rag ingest`, or before the sensor's cursor was reset) needs no run.
    stages = StageStore(settings.state_dir)
    to_process = [r for r in changes.to_process if r.partition_key not in known or not _indexed(stages, r)]
    new_keys = [r.partition_key for r in to_process if r.partition_key not in known]
    order = list(existing) + new_keys  # the order the partitions will have once added
    run_key = changes.run_key()
    run_requests = []
    if new_keys or changes.deleted:
        run_requests.append(dg.RunRequest(run_key=f"{run_key}-catalog", asset_selection=[document_catalog.key]))
    if to_process:
        keys = {r.partition_key for r in to_process}
        run_requests.append(
            dg.RunRequest(
                run_key=f"{run_key}-documents",
                asset_selection=[a.key for a in PER_DOCUMENT_ASSETS],
                tags={**range_tags(order, keys), "rag/changed_documents": str(len(keys))},
            )
        )
    if not run_requests:
        return dg.SensorResult(skip_reason=dg.SkipReason("changed files are already indexed"), cursor=changes.cursor)
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[documents_partitions.build_add_request(new_keys)] if new_keys else [],
        cursor=changes.cursor,
    )


def _indexed(stages: StageStore, ref) -> bool:
    record = stages.read(INDEXED, ref.doc_path)
    return record is not None and record["source_hash"] == ref.content_hash and not stages.failure(ref.doc_path, ref.content_hash)
