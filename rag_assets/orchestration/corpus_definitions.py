"""One corpus's Dagster objects: its assets in lineage order (their checks ride on them), its ingest
job, the sensors and the schedule that keep its index current (build_corpus_definitions).

Below both the component (rag_assets.MarkdownCorpus builds its corpus's objects here) and the code
location (rag_assets.orchestration.definitions: every corpus of the project)."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from rag_assets.corpus import Corpus

from .assets import IngestionAssets, build_ingestion_assets
from .evaluation import EvaluationAssets, build_evaluation_assets
from .event_log import enable_event_batching
from .schedules import build_nightly_reconcile
from .sensors import build_docs_sensor, build_evaluation_sensor

# Dagster hands a run's per-partition events to the event log in batches only when asked; the
# batching event-log storage of dagster.yaml then writes each batch in one transaction.
enable_event_batching()


@dataclass(frozen=True, eq=False)  # hashed by identity: one set of objects per corpus
class CorpusDefinitions:
    """One corpus's Dagster objects."""

    corpus: Corpus
    ingestion: IngestionAssets
    evaluation: EvaluationAssets
    ingest_job: dg.UnresolvedAssetJobDefinition
    sensors: tuple[dg.SensorDefinition, ...]
    schedule: dg.ScheduleDefinition

    @property
    def assets(self) -> list[dg.AssetsDefinition]:
        return [*self.ingestion.ingestion, self.ingestion.index_audit, *self.evaluation.all]

    def definitions(self) -> dg.Definitions:
        return dg.Definitions(assets=self.assets, jobs=[self.ingest_job], sensors=list(self.sensors),
                              schedules=[self.schedule])


def build_corpus_definitions(corpus: Corpus) -> CorpusDefinitions:
    ingestion = build_ingestion_assets(corpus)
    evaluation = build_evaluation_assets(corpus, ingestion)
    # The per-document assets as one named job: `dagster job execute -j ingest_documents --partition
    # <doc_path>` from a shell, and a partitioned job (backfills of many documents) in the UI.
    job = dg.define_asset_job(
        ingestion.names.scoped("ingest_documents"),
        selection=dg.AssetSelection.assets(*ingestion.per_document),
        partitions_def=ingestion.partitions,
        description=f"Parse, split, chunk, embed and index the selected documents of corpus {corpus.name}.",
    )
    sensors = (build_docs_sensor(corpus, ingestion), build_evaluation_sensor(corpus, ingestion, evaluation))
    return CorpusDefinitions(corpus, ingestion, evaluation, job, sensors,
                             build_nightly_reconcile(corpus, ingestion, evaluation))
