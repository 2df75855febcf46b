"""The Dagster code location: assets in lineage order, their checks, and the resources they share."""

from __future__ import annotations

import dagster as dg

from .assets import INGESTION_ASSETS, PER_DOCUMENT_ASSETS, documents_partitions
from .checks import INGESTION_CHECKS
from .evaluation import EVALUATION_ASSETS, evaluation_automation
from .resources import EmbedderResource, VectorStoreResource
from .schedules import nightly_reconcile
from .sensors import docs_sensor

defs = dg.Definitions(
    assets=[*INGESTION_ASSETS, *EVALUATION_ASSETS],
    asset_checks=INGESTION_CHECKS,
    sensors=[docs_sensor, evaluation_automation],
    schedules=[nightly_reconcile],
    resources={"embedder": EmbedderResource(), "vector_store": VectorStoreResource()},
    # One process per run, not per step: steps share the loaded model, start-up costs once, and
    # the embedded Chroma store is never opened by two step processes at once (chroma #7040).
    executor=dg.in_process_executor,
)

__all__ = ["defs", "documents_partitions", "INGESTION_ASSETS", "PER_DOCUMENT_ASSETS"]
