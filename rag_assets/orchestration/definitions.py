"""The Dagster code location: assets in lineage order (their checks ride on them), the sensors and
schedule that keep the index current, and the resources they share."""

from __future__ import annotations

import dagster as dg

from .assets import INGESTION_ASSETS, MAINTENANCE_ASSETS, PER_DOCUMENT_ASSETS, documents_partitions
from .evaluation import EVALUATION_ASSETS
from .event_log import enable_event_batching
from .resources import EmbedderResource, VectorStoreResource
from .schedules import nightly_reconcile
from .sensors import docs_sensor, evaluation_sensor

# Dagster hands a run's per-partition events to the event log in batches only when asked; the
# batching event-log storage of dagster.yaml then writes each batch in one transaction.
enable_event_batching()

# The per-document assets as one named job: `dagster job execute -j ingest_documents --partition
# <doc_path>` from a shell, and a partitioned job (backfills of many documents) in the UI.
ingest_documents = dg.define_asset_job(
    "ingest_documents",
    selection=dg.AssetSelection.assets(*PER_DOCUMENT_ASSETS),
    partitions_def=documents_partitions,
    description="Parse, split, chunk, embed and index the selected documents (partitions).",
)

defs = dg.Definitions(
    assets=[*INGESTION_ASSETS, *MAINTENANCE_ASSETS, *EVALUATION_ASSETS],
    jobs=[ingest_documents],
    sensors=[docs_sensor, evaluation_sensor],
    schedules=[nightly_reconcile],
    resources={"embedder": EmbedderResource(), "vector_store": VectorStoreResource()},
    # One process per run, not per step: steps share the loaded model, start-up costs once, and
    # the embedded Chroma store is never opened by two step processes at once (chroma #7040).
    executor=dg.in_process_executor,
)

__all__ = ["defs", "documents_partitions", "INGESTION_ASSETS", "PER_DOCUMENT_ASSETS"]
