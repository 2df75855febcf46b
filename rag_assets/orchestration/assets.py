"""The pipeline as Dagster assets, in lineage order:

document_catalog -> parsed_documents -> markdown_blocks -> document_chunks -> chunk_embeddings -> vector_index

The catalog is unpartitioned and keeps the `documents` dynamic partitions in step with the docs
folder. The others are partitioned per document with a single-run backfill policy: one run covers
any number of documents (each asset loops over `context.partition_keys`), so ingesting 1,000
documents is one run, not 1,000. The work itself lives in rag_assets.ingestion.
"""


import time
import warnings

import dagster as dg

from rag_assets.chunking import ChunkingConfig
from rag_assets.discovery import DocumentTooLarge, discover, fingerprint_file, partition_key_for
from rag_assets.ingestion import (
    StageReport,
    chunking_fingerprint,
    remove_documents,
    run_chunk,
    run_embed,
    run_index,
    run_parse,
    run_split,
)
from rag_assets.models import DocumentRef
from rag_assets.stage_store import INDEXED, StageStore
from rag_assets.tokens import TokenCounter

from .resources import EmbedderResource, VectorStoreResource, current_settings

# single-run backfills are what make one run cover many documents; Dagster still labels them beta
warnings.filterwarnings("ignore", message=".*backfill_policy.*", category=dg.BetaWarning)

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")

INGESTION = "ingestion"
_PER_DOC = dict(
    partitions_def=documents_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name=INGESTION,
)
_MAX_TABLE_ROWS = 50


@dg.asset(group_name=INGESTION)
def document_catalog(
    context: dg.AssetExecutionContext, embedder: EmbedderResource, vector_store: VectorStoreResource
) -> dg.MaterializeResult:
    """Every markdown file under the docs folder, fingerprinted; keeps the `documents` partitions in step."""
    settings = current_settings()
    started = time.perf_counter()
    catalog = discover(settings.docs_dir, max_file_bytes=settings.max_file_bytes)
    stages = StageStore(settings.state_dir)
    previous = stages.read_catalog()

    current_keys = [d.partition_key for d in catalog.documents]
    existing_keys = set(context.instance.get_dynamic_partitions(documents_partitions.name))
    added = [k for k in current_keys if k not in existing_keys]
    # a file that exists but failed discovery (too large, unreadable) is reported, not forgotten:
    # what is indexed of it stays until it can be read again or is really gone
    failed_paths = {e.path for e in catalog.errors}
    failed_keys = {partition_key_for(p) for p in failed_paths}
    vanished_keys = sorted(existing_keys - set(current_keys) - failed_keys)
    if added:
        context.instance.add_dynamic_partitions(documents_partitions.name, added)

    # a vanished file: its vectors go first, then its records, then its partition
    known = {d.partition_key: d.doc_path for d in (previous.documents if previous else [])}
    current_docs = {d.doc_path for d in catalog.documents}
    # also documents indexed earlier whose partition is gone (e.g. a wiped Dagster storage)
    vanished_docs = sorted(
        ({known.get(k, k) for k in vanished_keys} | (set(stages.doc_paths(INDEXED)) - current_docs)) - failed_paths
    )
    deleted: dict[str, int] = {}
    if vanished_docs:
        with vector_store.writer(embedder.get()) as store:
            deleted = remove_documents(vanished_docs, stages, store)
        for key in vanished_keys:
            context.instance.delete_dynamic_partition(documents_partitions.name, key)
    # written last: if this run dies above, the next one still knows the vanished documents' paths
    stages.write_catalog(catalog)

    metadata = {
        "docs_dir": str(catalog.docs_dir),
        "documents": len(catalog.documents),
        "partitions_added": len(added),
        "partitions_removed": len(vanished_keys),
        "vectors_deleted": sum(deleted.values()),
        "total_bytes": sum(d.size_bytes for d in catalog.documents),
        "discovery_errors": len(catalog.errors),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if catalog.errors:
        metadata["errors"] = dg.MetadataValue.md(
            "| file | problem |\n|---|---|\n" + "\n".join(f"| `{e.path}` | {e.reason} |" for e in catalog.errors)
        )
    if deleted:
        metadata["deleted_documents"] = dg.MetadataValue.json(deleted)
    return dg.MaterializeResult(metadata=metadata)


def _refs(context: dg.AssetExecutionContext) -> list[DocumentRef]:
    """This run's documents, fingerprinted now: the file as it is, not as the catalog last saw it.

    A vanished file is skipped (the next catalog run removes it); a key the catalog has not seen
    yet (added by the sensor) is its own doc_path.
    """
    settings = current_settings()
    catalog = StageStore(settings.state_dir).read_catalog()
    doc_paths = {d.partition_key: d.doc_path for d in catalog.documents} if catalog else {}
    refs = []
    for key in context.partition_keys:
        doc_path = doc_paths.get(key, key)
        try:
            refs.append(fingerprint_file(settings.docs_dir, doc_path, max_file_bytes=settings.max_file_bytes))
        except FileNotFoundError:
            context.log.warning(f"{doc_path}: vanished; the next document_catalog run removes it from the index")
        except (OSError, DocumentTooLarge) as exc:
            context.log.error(f"{doc_path}: {exc}")
    return refs


def _result(context: dg.AssetExecutionContext, report: StageReport, **extra) -> dg.MaterializeResult:
    """Metadata that tells a stage's story: counts, timings, and what failed and why."""
    for doc_path, reason in report.failed.items():
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
    if report.failed:
        metadata["errors"] = dg.MetadataValue.json(report.errors)
    if len(context.partition_keys) == 1 and report.per_document:
        metadata.update(next(iter(report.per_document.values())))
    elif report.per_document:
        rows = list(report.per_document.items())[:_MAX_TABLE_ROWS]
        columns = sorted({k for _, d in rows for k in d})
        table = "| document | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns) + "\n"
        table += "\n".join(f"| `{p}` | " + " | ".join(str(d.get(c, "")) for c in columns) + " |" for p, d in rows)
        metadata["per_document"] = dg.MetadataValue.md(table)
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(deps=[document_catalog], **_PER_DOC)
def parsed_documents(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """YAML frontmatter (safe-loaded) -> title, description, tags, metadata; the markdown body."""
    return _result(context, run_parse(_refs(context), StageStore(current_settings().state_dir)))


@dg.asset(deps=[parsed_documents], **_PER_DOC)
def markdown_blocks(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Structural blocks: headings, prose, atomic code fences, pipe tables and ::: admonitions."""
    return _result(context, run_split(_refs(context), StageStore(current_settings().state_dir)))


def chunking_setup(embedder_resource: EmbedderResource):
    settings = embedder_resource.settings()
    embedder = embedder_resource.get()
    config = ChunkingConfig.from_settings(settings)
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    fingerprint = chunking_fingerprint(config, settings.tiktoken_encoding, embedder.model_name, embedder.max_input_tokens)
    return embedder, config, counter, fingerprint


@dg.asset(deps=[markdown_blocks], **_PER_DOC)
def document_chunks(context: dg.AssetExecutionContext, embedder: EmbedderResource) -> dg.MaterializeResult:
    """Heading-aware chunks sized in tiktoken tokens to fit the embedder; deterministic ids and hashes."""
    model, config, counter, fingerprint = chunking_setup(embedder)
    report = run_chunk(
        _refs(context), StageStore(current_settings().state_dir), counter, config, model.fits, fingerprint
    )
    return _result(context, report, max_tokens=config.max_tokens, embedder_input_limit=model.max_input_tokens)


@dg.asset(deps=[document_chunks], **_PER_DOC)
def chunk_embeddings(context: dg.AssetExecutionContext, embedder: EmbedderResource) -> dg.MaterializeResult:
    """One vector per distinct chunk text, cached by (model, content hash): nothing is embedded twice."""
    model, _, _, fingerprint = chunking_setup(embedder)
    cache = embedder.cache()
    try:
        report = run_embed(_refs(context), StageStore(current_settings().state_dir), model, cache, fingerprint)
    finally:
        cache.close()
    return _result(context, report, dimension=model.dimension)


@dg.asset(deps=[chunk_embeddings], **_PER_DOC)
def vector_index(
    context: dg.AssetExecutionContext, embedder: EmbedderResource, vector_store: VectorStoreResource
) -> dg.MaterializeResult:
    """Chroma: per-document replace (write the new chunks, then delete the stale ones)."""
    model, _, _, fingerprint = chunking_setup(embedder)
    cache = embedder.cache()
    try:
        with vector_store.writer(model) as store:
            report = run_index(_refs(context), StageStore(current_settings().state_dir), store, cache, fingerprint)
    finally:
        cache.close()
    return _result(context, report, collection=store.collection_name)


INGESTION_ASSETS = [document_catalog, parsed_documents, markdown_blocks, document_chunks, chunk_embeddings, vector_index]
PER_DOCUMENT_ASSETS = INGESTION_ASSETS[1:]
