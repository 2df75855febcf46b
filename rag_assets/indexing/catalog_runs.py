"""The catalog side of an ingest: new files registered as partitions directly when they are all that
changed (documents from code), else the document_catalog run, which registers new documents and
removes vanished ones behind the deletion guard."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from rag_assets.errors import RagError
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.catalog import only_added
from rag_assets.models import Catalog, IngestSummary
from rag_assets.orchestration import stopping
from rag_assets.orchestration.corpus_definitions import CorpusDefinitions
from rag_assets.orchestration.execution import execute, first_error, materialization_metadata, signal_name, was_stopped

class CatalogRunFailed(RagError):
    """The document_catalog run failed (e.g. the deletion guard refused): nothing else ran."""


def register_added(instance, corpus: CorpusDefinitions, stages: StageStore, stored: Catalog | None, seen: Catalog,
                    only_doc_paths: Sequence[str]) -> Catalog | None:
    """New files of these paths, when they are all that changed: registered here (partitions and
    catalog), no catalog run. The stored catalog with them."""
    # no stored catalog yet: a folder never catalogued is empty to begin with
    base = stored if stored is not None else Catalog(docs_dir=seen.docs_dir, documents=[])
    added = only_added(base, seen, set(only_doc_paths))
    if not added:
        return stored
    instance.add_dynamic_partitions(corpus.ingestion.partitions.name, [d.partition_key for d in added])
    if stored is None:
        stages.write_catalog(replace(base, documents=added))
    else:
        stages.add_to_catalog(added)
    return replace(base, documents=[*base.documents, *added])


def run_catalog(instance, corpus: CorpusDefinitions, summary: IngestSummary, stages: StageStore, seen: Catalog,
                 allow_mass_delete: bool, watch: stopping.StopWatch | None) -> Catalog | None:
    """The document_catalog run; the catalog the document runs then index (None: it was stopped,
    `summary` says so). Raises CatalogRunFailed when it failed."""
    document_catalog = corpus.ingestion.document_catalog
    config = {"ops": {document_catalog.op.name: {"config": {"allow_mass_delete": allow_mass_delete}}}}
    catalog_run = execute(instance, corpus, [document_catalog], run_config=config)
    summary.run_ids.append(catalog_run.run_id)
    if was_stopped(instance, catalog_run):
        summary.documents_discovered = len(seen.documents) + len(seen.errors)
        summary.interrupted = signal_name(watch)
        return None
    if not catalog_run.success:
        raise CatalogRunFailed(f"{first_error(catalog_run)} (document_catalog run {catalog_run.run_id})")
    catalog_meta = materialization_metadata(catalog_run).get(document_catalog.key.to_user_string(), {})
    summary.documents_deleted = int(catalog_meta.get("documents_removed", 0))
    summary.vectors_deleted = int(catalog_meta.get("vectors_deleted", 0))
    summary.removal_refused = str(catalog_meta.get("removal_refused") or "")
    # refused: the stored catalog still lists the vanished documents; the folder as just seen is
    # what the runs index
    return seen if summary.removal_refused else stages.read_catalog()

