"""document_catalog: every markdown file under the docs folder, fingerprinted. Unpartitioned; keeps the
`documents` dynamic partitions, the stage records and the vector store in step with the folder
(vanished documents removed, orphaned vectors reconciled away, behind the deletion guard)."""

import time

import dagster as dg

from rag_assets.corpus import Corpus
from rag_assets.index.locks import DocumentLocks
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.catalog import deletion_refusal, vanished_documents
from rag_assets.ingest.discovery import discover_for, partition_key_for
from rag_assets.ingest.scope import left_out_counts
from rag_assets.ingest.stages import delete_orphans, find_orphans, remove_documents
from rag_assets.retrieval.snapshot_writer import SnapshotWriter

from .naming import CorpusNames
from .resources import EmbedderResource, RunSettingsResource, VectorStoreResource


class CatalogConfig(dg.Config):
    allow_mass_delete: bool = False  # remove documents even when most (or all) of the index would go


def build_document_catalog(corpus: Corpus, names: CorpusNames, partitions: dg.DynamicPartitionsDefinition,
                           group: str) -> dg.AssetsDefinition:
    """The corpus's document_catalog asset (its partitions: `partitions`)."""
    key = names.key

    @dg.asset(
        key_prefix=names.prefix,
        group_name=group,
        check_specs=[dg.AssetCheckSpec(
            "no_removal_refused", asset=key("document_catalog"),
            description="the deletion guard did not have to keep vanished documents (see removal_refused)")],
    )
    def document_catalog(
        context: dg.AssetExecutionContext,
        config: CatalogConfig,
        embedder: EmbedderResource,
        vector_store: VectorStoreResource,
        run_settings: RunSettingsResource,
    ) -> dg.MaterializeResult:
        """Every markdown file under the docs folder, fingerprinted; keeps the `documents` partitions,
        the stage records and the vector store in step with the folder."""
        settings = embedder.settings(run_settings.settings_for(corpus))
        started = time.perf_counter()
        try:
            catalog = discover_for(settings)
        except FileNotFoundError as exc:
            raise dg.Failure(description=f"{exc}; nothing was removed from the index") from None
        stages = StageStore.for_settings(settings.paths)
        current_keys = [d.partition_key for d in catalog.documents]
        existing_keys = set(context.instance.get_dynamic_partitions(partitions.name))
        # a file that exists but failed discovery keeps its partition (and what is indexed of it)
        failed_keys = {partition_key_for(e.path) for e in catalog.errors}
        stale_keys = sorted(existing_keys - set(current_keys) - failed_keys)
        with vector_store.writer(embedder.get(settings), settings) as store:
            # vanished = known to the state and gone; orphans = only the store still has them
            orphans = find_orphans(store, [d.doc_path for d in catalog.documents] + [e.path for e in catalog.errors])
            vanished = vanished_documents(catalog, stages)
            orphans = orphans.without(vanished.doc_paths)
            refusal = deletion_refusal(
                catalog, vanished.with_orphans(list(orphans.ids_by_document), orphans.documents_in_store),
                settings.max_delete_share, settings.mass_delete_min_documents,
                config.allow_mass_delete or settings.allow_mass_delete,
            )
            added = [k for k in current_keys if k not in existing_keys]
            if added:  # new documents are registered (and then indexed) whatever the guard says
                context.instance.add_dynamic_partitions(partitions.name, added)
            deleted: dict[str, int] = {}
            orphan_vectors = 0
            if refusal:
                # nothing removed, the stored catalog kept: the vanished documents stay known (and guarded)
                context.log.warning(refusal)
                orphans = orphans.without(list(orphans.ids_by_document))
            else:
                locks = DocumentLocks(stages.db, settings.state_dir)
                snapshot = SnapshotWriter(settings, store, stages.db)
                deleted = remove_documents(vanished.doc_paths, stages, store, locks, snapshot)
                orphan_vectors = delete_orphans(store, orphans, stages, locks, snapshot)
        if not refusal:
            for key in stale_keys:
                context.instance.delete_dynamic_partition(partitions.name, key)
            # written last: if this run dies above, the next one still knows the vanished documents' paths
            stages.write_catalog(catalog)

        metadata = _catalog_metadata(catalog, added, stale_keys, deleted, orphans, orphan_vectors, refusal,
                                     vanished.doc_paths, started)
        metadata.update(left_out_table(catalog, corpus.name))
        guard = dg.AssetCheckResult(
            check_name="no_removal_refused", passed=not refusal, severity=dg.AssetCheckSeverity.WARN,
            metadata={"refusal": refusal or "", "documents_to_remove": len(vanished.doc_paths) if refusal else 0})
        return dg.MaterializeResult(metadata=metadata, check_results=[guard])

    return document_catalog


LEFT_OUT_ROWS = 200  # the run's table of pages left out shows this many; `rag corpora --left-out` lists them all


def left_out_table(catalog, corpus_name: str) -> dict:
    """The pages the corpus's scope left out, as a table in the run's metadata (the first LEFT_OUT_ROWS
    by path: page, reason, language for a translation) and how many of them it shows."""
    if not catalog.left_out:
        return {}
    rows = sorted(catalog.left_out.items())[:LEFT_OUT_ROWS]
    records = [dg.TableRecord({"page": page, "reason": reason, "language": catalog.left_out_languages.get(page, "")})
               for page, reason in rows]
    schema = dg.TableSchema(columns=[
        dg.TableColumn("page", "string", "the page's path under the docs folder"),
        dg.TableColumn("reason", "string", "why it is out of the corpus's scope (rag_assets.ingest.scope)"),
        dg.TableColumn("language", "string", "a translation's language"),
    ])
    every = "" if len(rows) == len(catalog.left_out) else f"; every one: rag corpora --left-out {corpus_name}"
    return {"left_out_pages": dg.MetadataValue.table(records, schema),
            "left_out_pages_shown": dg.MetadataValue.text(f"{len(rows)} of {len(catalog.left_out)}{every}")}


def _catalog_metadata(catalog, added: list[str], stale_keys: list[str], deleted: dict[str, int], orphans,
                      orphan_vectors: int, refusal: str | None, to_remove: list[str], started: float) -> dict:
    """What a catalog run did: documents, partitions added and removed, what was deleted or refused."""
    metadata = {
        "docs_dir": str(catalog.docs_dir),
        "documents": len(catalog.documents),
        "partitions_added": len(added),
        "partitions_removed": 0 if refusal else len(stale_keys),
        "documents_removed": len(deleted) + len(orphans.ids_by_document),
        "vectors_deleted": sum(deleted.values()) + orphan_vectors,
        "orphan_vectors_removed": orphan_vectors,
        "total_bytes": sum(d.size_bytes for d in catalog.documents),
        "discovery_errors": len(catalog.errors),
        # the pages found but out of the corpus's scope, by reason (rag_assets.ingest.scope)
        "documents_left_out": len(catalog.left_out),
        "left_out": dg.MetadataValue.json(left_out_counts(catalog.left_out)),
        "default_language": catalog.default_language,
        "languages": dg.MetadataValue.json(catalog.languages),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if catalog.errors:
        metadata["errors"] = dg.MetadataValue.md(
            "| file | problem |\n|---|---|\n" + "\n".join(f"| `{e.path}` | {e.reason} |" for e in catalog.errors[:200])
        )
    if deleted or orphans.ids_by_document:
        metadata["deleted_documents"] = dg.MetadataValue.json(
            {**deleted, **{f"{d} (orphaned vectors)": len(v) for d, v in orphans.ids_by_document.items()}}
        )
    if refusal:
        metadata["removal_refused"] = refusal
        metadata["documents_to_remove"] = len(to_remove)
    return metadata
