"""The pipeline as Dagster assets, in lineage order:

document_catalog -> parsed_documents -> markdown_blocks -> document_chunks -> chunk_embeddings
-> vector_index -> index_audit

The catalog is unpartitioned and keeps the `documents` dynamic partitions in step with the docs
folder (and the store in step with the folder: vanished documents removed, orphaned vectors
reconciled away). The five per-document assets are partitioned per document; each run covers a
range of documents (each asset loops over `context.partition_keys`), at most
RAG_DOCUMENTS_PER_RUN of them (UI backfills fan out into runs of that size). Their checks verify
the documents of the run; `index_audit` verifies the whole index on demand and every night.
The work itself lives in the plain modules (rag_assets.ingest.stages, catalog, invariants). Here the
set is assembled; its assets are defined in lineage order in catalog_asset.py (document_catalog),
document_assets.py (the five per-document ones) and audit_asset.py (index_audit).

Every corpus (rag_assets.corpus) gets its own set, built by `build_ingestion_assets`: the default
corpus's keys are plain (`document_chunks`), another's carry its name (`my_docs/document_chunks`),
with partitions, group and settings of its own. The assets read their settings from their corpus.
"""

import warnings
from dataclasses import dataclass

import dagster as dg

from rag_assets.corpus import Corpus

from .audit_asset import build_index_audit
from .catalog_asset import build_document_catalog
from .document_assets import build_document_assets
from .naming import CorpusNames

# multi-run backfills are what bound a UI backfill's runs; Dagster still labels the policy beta
warnings.filterwarnings("ignore", message=".*backfill_policy.*", category=dg.BetaWarning)

INGESTION = "ingestion"


@dataclass(frozen=True)
class IngestionAssets:
    """One corpus's ingestion assets, in lineage order."""

    names: CorpusNames
    partitions: dg.DynamicPartitionsDefinition
    document_catalog: dg.AssetsDefinition
    per_document: tuple[dg.AssetsDefinition, ...]  # parsed_documents ... vector_index
    index_audit: dg.AssetsDefinition

    @property
    def vector_index(self) -> dg.AssetsDefinition:
        return self.per_document[-1]

    @property
    def ingestion(self) -> list[dg.AssetsDefinition]:
        return [self.document_catalog, *self.per_document]


def build_ingestion_assets(corpus: Corpus) -> IngestionAssets:
    """The catalog, the five per-document assets and the audit of one corpus."""
    names = CorpusNames(corpus)
    group = names.group(INGESTION)
    partitions = dg.DynamicPartitionsDefinition(name=names.scoped("documents"))
    per_doc = dict(
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=corpus.settings().documents_per_run),
        group_name=group,
        key_prefix=names.prefix,
    )
    document_catalog = build_document_catalog(corpus, names, partitions, group)
    per_document = build_document_assets(corpus, names, per_doc, document_catalog)
    index_audit = build_index_audit(corpus, names, group, per_document[-1])
    return IngestionAssets(names, partitions, document_catalog, per_document, index_audit)
