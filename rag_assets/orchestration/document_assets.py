"""The five per-document assets, in lineage order: parsed_documents -> markdown_blocks -> document_chunks
-> chunk_embeddings -> vector_index. Each is partitioned per document (the `documents` partitions) and
loops over its run's partition keys; the work is in rag_assets.ingest.stages, the checks in
rag_assets.index.invariants."""

import dagster as dg

from rag_assets.corpus import Corpus
from rag_assets.index import invariants
from rag_assets.index.locks import DocumentLocks
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.document_metadata import MetadataPolicy
from rag_assets.ingest.stages import run_chunk, run_embed, run_index, run_parse, run_split
from rag_assets.retrieval.snapshot_writer import SnapshotWriter

from .asset_support import check_result, check_specs, document_refs, progress_reporter, stage_result
from .fingerprints import chunking_fingerprint_for, chunking_setup
from .naming import CorpusNames
from .resources import EmbedderResource, RunSettingsResource, VectorStoreResource

CHUNK_CHECKS = ("chunks_within_embedder_limit", "chunk_metadata_present")
INDEX_CHECKS = ("all_documents_indexed", "index_matches_records")


def build_document_assets(corpus: Corpus, names: CorpusNames, per_doc: dict,
                          document_catalog: dg.AssetsDefinition) -> tuple[dg.AssetsDefinition, ...]:
    """parsed_documents ... vector_index of one corpus (per_doc: their partitions, backfill policy,
    group and key prefix), each depending on the one before."""
    parsed = _parsed_documents(corpus, per_doc, document_catalog)
    blocks = _markdown_blocks(corpus, per_doc, parsed)
    chunks = _document_chunks(corpus, names, per_doc, blocks)
    embedded = _chunk_embeddings(corpus, per_doc, chunks)
    return parsed, blocks, chunks, embedded, _vector_index(corpus, names, per_doc, embedded)


def _parsed_documents(corpus: Corpus, per_doc: dict, upstream: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """YAML frontmatter and the markdown body of each document."""
    @dg.asset(deps=[upstream], **per_doc)
    def parsed_documents(context: dg.AssetExecutionContext, run_settings: RunSettingsResource) -> dg.MaterializeResult:
        """YAML frontmatter (safe-loaded) -> title, description, tags, metadata; the markdown body."""
        settings = run_settings.settings_for(corpus)
        stages = StageStore.for_settings(settings.paths)
        refs = document_refs(context, settings, stages)
        report = run_parse(refs, stages, progress_reporter(context), MetadataPolicy.from_settings(settings.ingest), settings.max_file_bytes)
        stages.refresh_catalog(refs)  # a file edited since the catalog run is known as it is now
        return stage_result(context, report)

    return parsed_documents


def _markdown_blocks(corpus: Corpus, per_doc: dict, upstream: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The structural blocks of each parsed document."""
    @dg.asset(deps=[upstream], **per_doc)
    def markdown_blocks(context: dg.AssetExecutionContext, run_settings: RunSettingsResource) -> dg.MaterializeResult:
        """Structural blocks: headings, prose, atomic code fences, pipe tables and ::: admonitions."""
        settings = run_settings.settings_for(corpus)
        stages = StageStore.for_settings(settings.paths)
        return stage_result(context, run_split(document_refs(context, settings, stages), stages, progress_reporter(context)))

    return markdown_blocks


def _document_chunks(corpus: Corpus, names: CorpusNames, per_doc: dict, upstream: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """Heading-aware chunks of each document, with their checks."""
    @dg.asset(
        deps=[upstream],
        check_specs=check_specs(names.key("document_chunks"), {
            CHUNK_CHECKS[0]: "No chunk of the run's documents is silently truncated by the embedder",
            CHUNK_CHECKS[1]: "Every chunk of the run's documents carries its id, hash, text and metadata",
        }),
        **per_doc,
    )
    def document_chunks(context: dg.AssetExecutionContext, embedder: EmbedderResource,
                        run_settings: RunSettingsResource) -> dg.MaterializeResult:
        """Heading-aware chunks sized in tiktoken tokens to fit the embedder; deterministic ids and hashes."""
        settings = embedder.settings(run_settings.settings_for(corpus))
        model, config, counter, fingerprint = chunking_setup(embedder, settings)
        stages = StageStore.for_settings(settings.paths)
        refs = document_refs(context, settings, stages)
        report = run_chunk(refs, stages, counter, config, model.fits, fingerprint, progress_reporter(context))
        within_limit, metadata_present = invariants.chunk_checks(stages, refs, model.fits)  # one read of the chunks
        checks = [check_result(CHUNK_CHECKS[0], within_limit), check_result(CHUNK_CHECKS[1], metadata_present)]
        return stage_result(context, report, checks, max_tokens=config.max_tokens, embedder_input_limit=model.max_input_tokens)

    return document_chunks


def _chunk_embeddings(corpus: Corpus, per_doc: dict, upstream: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """One vector per distinct chunk text of each document."""
    @dg.asset(deps=[upstream], **per_doc)
    def chunk_embeddings(context: dg.AssetExecutionContext, embedder: EmbedderResource,
                         run_settings: RunSettingsResource) -> dg.MaterializeResult:
        """One vector per distinct chunk text, cached by (model, content hash): nothing is embedded twice."""
        settings = embedder.settings(run_settings.settings_for(corpus))
        model = embedder.get(settings)
        stages = StageStore.for_settings(settings.paths)
        report = run_embed(
            document_refs(context, settings, stages), stages, model, embedder.cache(settings), chunking_fingerprint_for(settings, model),
            progress_reporter(context),
        )
        return stage_result(context, report, dimension=model.dimension)

    return chunk_embeddings


def _vector_index(corpus: Corpus, names: CorpusNames, per_doc: dict, upstream: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """Each document's chunks in the vector store, with their checks."""
    @dg.asset(
        deps=[upstream],
        check_specs=check_specs(names.key("vector_index"), {
            INDEX_CHECKS[0]: "Every document of the run is indexed at its current version",
            INDEX_CHECKS[1]: "The store holds exactly the recorded chunks of the run's documents",
        }),
        **per_doc,
    )
    def vector_index(
        context: dg.AssetExecutionContext, embedder: EmbedderResource, vector_store: VectorStoreResource,
        run_settings: RunSettingsResource,
    ) -> dg.MaterializeResult:
        """The vector store: per-document replace (new chunks written first, stale ones deleted after),
        several documents per store call; then the search snapshot queries read, committed per group."""
        settings = embedder.settings(run_settings.settings_for(corpus))
        model = embedder.get(settings)
        stages = StageStore.for_settings(settings.paths)
        refs = document_refs(context, settings, stages)
        with vector_store.writer(model, settings) as store:
            report = run_index(refs, stages, store, embedder.cache(settings), chunking_fingerprint_for(settings, model),
                               progress_reporter(context), DocumentLocks(stages.db, settings.state_dir),
                               SnapshotWriter(settings, store, stages.db))
            checks = [
                check_result(INDEX_CHECKS[0], invariants.documents_indexed(stages, refs)),
                check_result(INDEX_CHECKS[1], invariants.index_matches_records(stages, refs, store)),
            ]
        return stage_result(context, report, checks, collection=store.collection_name)

    return vector_index
