"""The pipeline as Dagster assets, in lineage order:

document_catalog -> parsed_documents -> markdown_blocks -> document_chunks -> chunk_embeddings
-> vector_index -> index_audit

The catalog is unpartitioned and keeps the `documents` dynamic partitions in step with the docs
folder (and the store in step with the folder: vanished documents removed, orphaned vectors
reconciled away). The five per-document assets are partitioned per document; each run covers a
range of documents (each asset loops over `context.partition_keys`), at most
RAG_DOCUMENTS_PER_RUN of them (UI backfills fan out into runs of that size). Their checks verify
the documents of the run; `index_audit` verifies the whole index on demand and every night.
The work itself lives in the plain modules (rag_assets.ingest.stages, catalog, invariants).

Every corpus (rag_assets.corpus) gets its own set, built by `build_ingestion_assets`: the default
corpus's keys are plain (`document_chunks`), another's carry its name (`my_docs/document_chunks`),
with partitions, group and settings of its own. The assets read their settings from their corpus.
"""

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg

from rag_assets.index import invariants
from rag_assets.ingest.catalog import deletion_refusal, vanished_documents
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.document_metadata import MetadataPolicy
from rag_assets.config import Settings
from rag_assets.ingest.discovery import DocumentTooLarge, discover_for, fingerprint_file, partition_key_for
from rag_assets.ingest.stages import (
    Fingerprints,
    StageReport,
    index_fingerprint,
    chunking_fingerprint,
    delete_orphans,
    find_orphans,
    remove_documents,
    run_chunk,
    run_embed,
    run_index,
    run_parse,
    run_split,
    stale_documents,
)
from rag_assets.corpus import Corpus
from rag_assets.index.locks import DocumentLocks
from rag_assets.models import DocumentRef
from rag_assets.progress import ProgressEvent, Reporter, Throttle, describe, publish
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.tokens import TokenCounter

from .naming import CorpusNames
from .resources import EmbedderResource, VectorStoreResource

# multi-run backfills are what bound a UI backfill's runs; Dagster still labels the policy beta
warnings.filterwarnings("ignore", message=".*backfill_policy.*", category=dg.BetaWarning)

# Up to this many documents a run gives each partition its own metadata. Dagster's
# add_asset_metadata(partition_key=...) re-reads the run's partition range on every call
# (quadratic in the run's size: +11 ms a document at 1,000, benchmarks/ingest_overhead.md).
INGESTION = "ingestion"
_PER_PARTITION_METADATA_MAX = 25
_PROGRESS_LOG_SECONDS = 5.0


class CatalogConfig(dg.Config):
    allow_mass_delete: bool = False  # remove documents even when most (or all) of the index would go


# -- the per-document assets ----------------------------------------------------------------------
def _refs(context: dg.AssetExecutionContext, settings: Settings, stages: StageStore) -> list[DocumentRef]:
    """This run's documents as they are now. The catalog's fingerprint is reused for a file whose
    size, mtime and inode have not moved (no re-read); any other file is hashed again, so a run
    acts on the file as it is, not as the catalog last saw it. A vanished file is skipped (the next
    catalog run removes it); a key the catalog has not seen yet (added by the sensor) is its path."""
    known = stages.catalog_by_partition_key(context.partition_keys)
    refs = []
    for key in context.partition_keys:
        last = known.get(key)
        doc_path = last.doc_path if last else key
        try:
            refs.append(fingerprint_file(settings.docs_dir, doc_path, max_file_bytes=settings.max_file_bytes, known=last))
        except FileNotFoundError:
            context.log.warning(f"{doc_path}: vanished; the next document_catalog run removes it from the index")
        except (OSError, DocumentTooLarge) as exc:
            context.log.error(f"{doc_path}: {exc}")
    return refs


def _reporter(context: dg.AssetExecutionContext) -> Reporter:
    """Progress to in-process listeners (the CLI's bar) and, every few seconds, to the run log."""
    throttle, started = Throttle(_PROGRESS_LOG_SECONDS), time.monotonic()

    def report(event: ProgressEvent) -> None:
        publish(event)
        if event.total and throttle.due(event):
            context.log.info(describe(event, started))

    return report


def _result(
    context: dg.AssetExecutionContext, report: StageReport, check_results=(), **extra
) -> dg.MaterializeResult:
    """Metadata that tells a stage's story: counts, timings, and what failed and why."""
    for reason in report.failed.values():
        context.log.error(f"{report.stage}: {reason}")
    metadata: dict = {
        "documents_processed": len(report.processed),
        "documents_unchanged": len(report.unchanged),
        "documents_failed": len(report.failed),
        "documents_skipped": len(report.skipped),
        "seconds": round(report.seconds, 3),
        **report.stats,
        **extra,
    }
    keys = context.partition_keys
    # Dagster copies a run's MaterializeResult metadata into every partition's event (two rows each,
    # run and index database): a large range run puts its summary on its last partition only (its
    # log names every failure); a small one also gets per-document details
    small = len(keys) <= _PER_PARTITION_METADATA_MAX
    if report.failed:
        metadata["errors"] = dg.MetadataValue.json(report.errors[: 200 if small else 20])
    if not small:
        context.add_asset_metadata(metadata, partition_key=keys[-1])
        context.log.info(f"{report.stage} over {len(keys)} documents: " + ", ".join(
            f"{k}={v}" for k, v in metadata.items() if isinstance(v, (int, float, str))))
        return dg.MaterializeResult(check_results=list(check_results))
    if len(keys) == 1 and report.per_document:
        metadata.update(next(iter(report.per_document.values())))
    elif report.per_document and small:
        rows = list(report.per_document.items())
        columns = sorted({k for _, d in rows for k in d})
        table = "| document | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns) + "\n"
        table += "\n".join(f"| `{p}` | " + " | ".join(str(d.get(c, "")) for c in columns) + " |" for p, d in rows)
        metadata["per_document"] = dg.MetadataValue.md(table)
        by_path = {partition_key_for(p): d for p, d in report.per_document.items()}
        for key in keys:
            if key in by_path:
                context.add_asset_metadata({f"document.{k}": v for k, v in by_path[key].items()}, partition_key=key)
    return dg.MaterializeResult(metadata=metadata, check_results=list(check_results))


def _check(name: str, finding: invariants.Finding) -> dg.AssetCheckResult:
    metadata: dict = dict(finding.counts)
    if finding.problems:
        metadata["problems"] = dg.MetadataValue.md("\n".join(f"- {p}" for p in finding.problems[:100]))
    return dg.AssetCheckResult(check_name=name, passed=finding.passed, severity=dg.AssetCheckSeverity.ERROR, metadata=metadata)


def chunking_setup(embedder_resource: EmbedderResource, settings: Settings):
    """(embedder, chunking config, token counter, chunk fingerprint): what document_chunks chunks with."""
    settings = embedder_resource.settings(settings)
    embedder = embedder_resource.get(settings)
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    return embedder, ChunkingConfig.from_settings(settings), counter, chunking_fingerprint_for(settings, embedder)


def chunking_fingerprint_for(settings: Settings, embedder) -> str:
    """What a chunk record must carry to be current (no model or tokenizer is loaded for it)."""
    config = ChunkingConfig.from_settings(settings)
    return chunking_fingerprint(config, settings.tiktoken_encoding, embedder.model_name, embedder.max_input_tokens,
                                MetadataPolicy.from_settings(settings).fingerprint)


def current_fingerprints(embedder: EmbedderResource, vector_store: VectorStoreResource, settings: Settings) -> Fingerprints:
    """What every stage record must carry right now to count as current (stale_documents' input)."""
    settings = embedder.settings(settings)
    model = embedder.get(settings)
    return Fingerprints(
        parsed=MetadataPolicy.from_settings(settings).fingerprint,
        chunks=chunking_fingerprint_for(settings, model),
        embedded=model.model_name,
        indexed=index_fingerprint(vector_store.settings(settings).collection, vector_store.collection_id(model, settings),
                                   model.model_name),
    )


def stale_now(refs: Sequence[DocumentRef], stages: StageStore, settings: Settings) -> dict[str, str]:
    """ingestion.stale_documents against the corpus's embedder and store: the one staleness rule
    that `rag ingest`, the sensor and the schedule ask (doc_path -> why)."""
    return stale_documents(refs, stages, current_fingerprints(EmbedderResource(), VectorStoreResource(), settings))


def _check_specs(asset: dg.AssetKey, described: dict[str, str]) -> list[dg.AssetCheckSpec]:
    return [dg.AssetCheckSpec(name, asset=asset, description=text) for name, text in described.items()]


CHUNK_CHECKS = ("chunks_within_embedder_limit", "chunk_metadata_present")
INDEX_CHECKS = ("all_documents_indexed", "index_matches_records")


AUDIT_CHECKS = ("audit_all_documents_indexed", "audit_no_orphan_vectors", "audit_chunks_within_embedder_limit",
                "audit_chunk_metadata_present")


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
    key, group = names.key, names.group(INGESTION)
    partitions = dg.DynamicPartitionsDefinition(name=names.scoped("documents"))
    per_doc = dict(
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=corpus.settings().documents_per_run),
        group_name=group,
        key_prefix=names.prefix,
    )

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
    ) -> dg.MaterializeResult:
        """Every markdown file under the docs folder, fingerprinted; keeps the `documents` partitions,
        the stage records and the vector store in step with the folder."""
        settings = embedder.settings(corpus.settings())
        started = time.perf_counter()
        try:
            catalog = discover_for(settings)
        except FileNotFoundError as exc:
            raise dg.Failure(description=f"{exc}; nothing was removed from the index") from None
        stages = StageStore.for_settings(settings)
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
                deleted = remove_documents(vanished.doc_paths, stages, store, locks)
                orphan_vectors = delete_orphans(store, orphans, stages, locks)
        if not refusal:
            for key in stale_keys:
                context.instance.delete_dynamic_partition(partitions.name, key)
            # written last: if this run dies above, the next one still knows the vanished documents' paths
            stages.write_catalog(catalog)

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
            metadata["documents_to_remove"] = len(vanished.doc_paths)
        guard = dg.AssetCheckResult(
            check_name="no_removal_refused", passed=not refusal, severity=dg.AssetCheckSeverity.WARN,
            metadata={"refusal": refusal or "", "documents_to_remove": len(vanished.doc_paths) if refusal else 0})
        return dg.MaterializeResult(metadata=metadata, check_results=[guard])



    @dg.asset(deps=[document_catalog], **per_doc)
    def parsed_documents(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """YAML frontmatter (safe-loaded) -> title, description, tags, metadata; the markdown body."""
        settings = corpus.settings()
        stages = StageStore.for_settings(settings)
        refs = _refs(context, settings, stages)
        report = run_parse(refs, stages, _reporter(context), MetadataPolicy.from_settings(settings), settings.max_file_bytes)
        stages.refresh_catalog(refs)  # a file edited since the catalog run is known as it is now
        return _result(context, report)



    @dg.asset(deps=[parsed_documents], **per_doc)
    def markdown_blocks(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """Structural blocks: headings, prose, atomic code fences, pipe tables and ::: admonitions."""
        settings = corpus.settings()
        stages = StageStore.for_settings(settings)
        return _result(context, run_split(_refs(context, settings, stages), stages, _reporter(context)))



    @dg.asset(
        deps=[markdown_blocks],
        check_specs=_check_specs(key("document_chunks"), {
            CHUNK_CHECKS[0]: "No chunk of the run's documents is silently truncated by the embedder",
            CHUNK_CHECKS[1]: "Every chunk of the run's documents carries its id, hash, text and metadata",
        }),
        **per_doc,
    )
    def document_chunks(context: dg.AssetExecutionContext, embedder: EmbedderResource) -> dg.MaterializeResult:
        """Heading-aware chunks sized in tiktoken tokens to fit the embedder; deterministic ids and hashes."""
        settings = embedder.settings(corpus.settings())
        model, config, counter, fingerprint = chunking_setup(embedder, settings)
        stages = StageStore.for_settings(settings)
        refs = _refs(context, settings, stages)
        report = run_chunk(refs, stages, counter, config, model.fits, fingerprint, _reporter(context))
        checks = [
            _check(CHUNK_CHECKS[0], invariants.chunks_within_limit(stages, refs, model.fits)),
            _check(CHUNK_CHECKS[1], invariants.chunk_metadata_complete(stages, refs)),
        ]
        return _result(context, report, checks, max_tokens=config.max_tokens, embedder_input_limit=model.max_input_tokens)



    @dg.asset(deps=[document_chunks], **per_doc)
    def chunk_embeddings(context: dg.AssetExecutionContext, embedder: EmbedderResource) -> dg.MaterializeResult:
        """One vector per distinct chunk text, cached by (model, content hash): nothing is embedded twice."""
        settings = embedder.settings(corpus.settings())
        model = embedder.get(settings)
        stages = StageStore.for_settings(settings)
        report = run_embed(
            _refs(context, settings, stages), stages, model, embedder.cache(settings), chunking_fingerprint_for(settings, model),
            _reporter(context),
        )
        return _result(context, report, dimension=model.dimension)



    @dg.asset(
        deps=[chunk_embeddings],
        check_specs=_check_specs(key("vector_index"), {
            INDEX_CHECKS[0]: "Every document of the run is indexed at its current version",
            INDEX_CHECKS[1]: "The store holds exactly the recorded chunks of the run's documents",
        }),
        **per_doc,
    )
    def vector_index(
        context: dg.AssetExecutionContext, embedder: EmbedderResource, vector_store: VectorStoreResource
    ) -> dg.MaterializeResult:
        """The vector store: per-document replace (new chunks written first, stale ones deleted after),
        several documents per store call."""
        settings = embedder.settings(corpus.settings())
        model = embedder.get(settings)
        stages = StageStore.for_settings(settings)
        refs = _refs(context, settings, stages)
        with vector_store.writer(model, settings) as store:
            report = run_index(refs, stages, store, embedder.cache(settings), chunking_fingerprint_for(settings, model),
                               _reporter(context), DocumentLocks(stages.db, settings.state_dir))
            checks = [
                _check(INDEX_CHECKS[0], invariants.documents_indexed(stages, refs)),
                _check(INDEX_CHECKS[1], invariants.index_matches_records(stages, refs, store)),
            ]
        return _result(context, report, checks, collection=store.collection_name)



    @dg.asset(
        deps=[vector_index],
        key_prefix=names.prefix,
        group_name=group,
        check_specs=_check_specs(key("index_audit"), {
            AUDIT_CHECKS[0]: "Every discovered document is indexed at its current version",
            AUDIT_CHECKS[1]: "The store holds exactly the recorded chunks: no orphans, no gaps",
            AUDIT_CHECKS[2]: "No chunk is silently truncated by the embedder",
            AUDIT_CHECKS[3]: "Every chunk carries its id, hash, text and metadata",
        }),
    )
    def index_audit(
        context: dg.AssetExecutionContext, embedder: EmbedderResource, vector_store: VectorStoreResource
    ) -> dg.MaterializeResult:
        """The whole index checked against the catalog and the records (run by nightly_reconcile, or
        on demand): what the per-run checks verify for their documents, for every document."""
        settings = embedder.settings(corpus.settings())
        model = embedder.get(settings)
        stages = StageStore.for_settings(settings)
        catalog = stages.read_catalog()
        if catalog is None:
            raise dg.Failure(description="no catalog yet: materialize document_catalog (or run `rag ingest`) first")
        started = time.perf_counter()
        store = vector_store.open(model, settings)
        refs = catalog.documents
        findings = {
            AUDIT_CHECKS[0]: invariants.documents_indexed(stages, refs, catalog.errors),
            AUDIT_CHECKS[1]: invariants.index_matches_records(stages, refs, store, whole_store=True),
            AUDIT_CHECKS[2]: invariants.chunks_within_limit(stages, refs, model.fits),
            AUDIT_CHECKS[3]: invariants.chunk_metadata_complete(stages, refs),
        }
        metadata = {
            "documents": len(refs),
            "vectors": findings[AUDIT_CHECKS[1]].counts["vectors"],
            "problems": sum(len(f.problems) for f in findings.values()),
            "seconds": round(time.perf_counter() - started, 3),
        }
        return dg.MaterializeResult(metadata=metadata, check_results=[_check(n, f) for n, f in findings.items()])



    return IngestionAssets(names, partitions, document_catalog,
                           (parsed_documents, markdown_blocks, document_chunks, chunk_embeddings, vector_index), index_audit)
