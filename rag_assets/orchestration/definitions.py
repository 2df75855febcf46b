"""The Dagster code location: every corpus's assets in lineage order (their checks ride on them),
the sensors and schedule that keep each index current, and the resources they share.

The default corpus (RAG_DOCS_DIR) keeps the plain names; each corpus registered with `rag ingest
--docs-dir` (rag_assets.corpus) or declared as a `rag_assets.MarkdownCorpus` component gets a set of
its own, prefixed with its name."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import dagster as dg

from rag_assets.corpus import Corpus, registered
from rag_assets.errors import ConfigurationError

from .assets import IngestionAssets, build_ingestion_assets
from .evaluation import EvaluationAssets, build_evaluation_assets
from .event_log import enable_event_batching
from .component import component_corpora
from .resources import project_resources
from .schedules import build_nightly_reconcile
from .sensors import build_docs_sensor, build_evaluation_sensor

# Dagster hands a run's per-partition events to the event log in batches only when asked; the
# batching event-log storage of dagster.yaml then writes each batch in one transaction.
enable_event_batching()

RESOURCES = project_resources()


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


def project_definitions(corpora: list[CorpusDefinitions]) -> dg.Definitions:
    return dg.Definitions.merge(
        *(c.definitions() for c in corpora),
        dg.Definitions(
            resources=RESOURCES,
            # One process per run, not per step: steps share the loaded model, start-up costs once, and
            # the embedded Chroma store is never opened by two step processes at once (chroma #7040).
            executor=dg.in_process_executor,
        ),
    )


def registered_corpora() -> list[Corpus]:
    """The folders indexed with `rag ingest --docs-dir`; a broken registration is logged, not fatal
    (the code location must still load)."""
    try:
        return registered(Corpus().settings().corpora_dir)
    except ConfigurationError as exc:
        logging.getLogger("rag_assets").warning("corpora: %s", exc)
        return []


def load_corpora() -> dict[str, CorpusDefinitions]:
    """Every corpus of the project: the defs folder's components (the default one among them), then
    the folders registered by `rag ingest --docs-dir`. Names are unique."""
    corpora: dict[str, Corpus] = {}
    for corpus in [*component_corpora(), *registered_corpora()]:
        if corpus.name in corpora:
            raise ConfigurationError(f"two corpora are named {corpus.name!r}: {corpora[corpus.name].docs_dir} and "
                                     f"{corpus.docs_dir}")
        corpora[corpus.name] = corpus
    corpora.setdefault(Corpus().name, Corpus())  # the project's own corpus, declared or not
    return {name: build_corpus_definitions(c) for name, c in sorted(corpora.items(), key=lambda kv: kv[0] != "default")}


CORPORA = load_corpora()
DEFAULT = CORPORA[Corpus().name]
defs = project_definitions(list(CORPORA.values()))

# the default corpus's objects by their plain names
documents_partitions = DEFAULT.ingestion.partitions
document_catalog = DEFAULT.ingestion.document_catalog
PER_DOCUMENT_ASSETS = list(DEFAULT.ingestion.per_document)
INGESTION_ASSETS = DEFAULT.ingestion.ingestion
vector_index = DEFAULT.ingestion.vector_index
index_audit = DEFAULT.ingestion.index_audit
synthetic_eval_set = DEFAULT.evaluation.synthetic_eval_set
retrieval_evaluation = DEFAULT.evaluation.retrieval_evaluation
ingest_documents = DEFAULT.ingest_job
docs_sensor, evaluation_sensor = DEFAULT.sensors
nightly_reconcile = DEFAULT.schedule
