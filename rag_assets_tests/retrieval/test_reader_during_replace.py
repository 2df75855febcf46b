"""A document being replaced by another process is old or new in a reader's results, never neither.

The window: the writer has written the new version's chunks and deleted the old ones, and has not
bumped the index generation yet (it does so once per run). A long-lived reader still holds the
keyword index of the old generation and an embedded Chroma client whose cached vector index lists
the deleted chunks. Before, its results lost the document in every mode (the deleted chunks came
back empty or were dropped after ranking, taking the places of live ones).
"""

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.index.generation import current_generation
from rag_assets.ingest.chunking import ChunkingConfig, chunk_document
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document_metadata import MetadataPolicy, complete
from rag_assets.ingest.frontmatter import read_document
from rag_assets.ingest.folder_index import embed_chunks
from rag_assets.ingest.ids import assign_ids, distinct_chunks
from rag_assets.ingest.markdown import split_markdown
from rag_assets.ingest.tokens import TokenCounter
from rag_assets_tests.retrieval.test_reader_follows_index import MODES, Reader, reader_env  # noqa: F401
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index

pytestmark = pytest.mark.system

LONG = "manual/zebras.md"
QUERY = "zebra protocol step stripes enclosure logbook"


def zebra_manual(revision: int) -> str:
    return "# Zebra manual\n\n" + "\n\n".join(
        f"## Step {i}\n\nThe zebra protocol step {i} (revision {revision}) says to check the stripes of "
        f"enclosure {i} and to record the count of animals {i * 7} in the logbook before feeding time."
        for i in range(30))


def replace_without_bumping(settings: Settings, embedder, doc_path: str) -> int:
    """What an ingest does to one document's vectors (new chunks first, stale ones deleted), stopped
    before it bumps the generation. Returns the chunks written."""
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    ref = next(r for r in discover(settings.docs_dir).documents if r.doc_path == doc_path)
    doc = complete(read_document(ref), ref, MetadataPolicy.from_settings(settings.ingest))
    chunks = distinct_chunks(assign_ids(chunk_document(doc, split_markdown(doc.body), counter,
                                                       ChunkingConfig.from_settings(settings.chunking), fits=embedder.fits)))
    store = ChromaStore.for_settings(settings.paths, embedder)
    result = store.replace_document(doc_path, chunks, embed_chunks(embedder, None, chunks))
    assert result.deleted == len(chunks) == result.written  # every chunk of the old version is gone
    return result.written


def test_a_document_being_replaced_is_old_or_new_never_neither(rag_env, reader_env):
    write_corpus(rag_env / "docs", {LONG: zebra_manual(1)})
    settings = Settings.from_env()
    embedder = load_embedder(settings.embedding)
    build_index(None, settings, embedder=embedder)

    reader = Reader(reader_env)
    try:
        for mode in MODES:  # the reader has opened Chroma and built its keyword index
            before = reader.ask(mode, QUERY)
            assert "error" not in before and before["docs"][0] == LONG, (mode, before)

        generation = current_generation(settings)
        write_corpus(rag_env / "docs", {LONG: zebra_manual(2)})
        replace_without_bumping(settings, embedder, LONG)
        assert current_generation(settings) == generation  # the window

        for mode in MODES:
            during = reader.ask(mode, QUERY)
            assert "error" not in during, (mode, during)
            assert during["docs"] and during["docs"][0] == LONG, (mode, during)
            assert "" not in during["docs"], (mode, during)  # no emptied (deleted) chunk either
    finally:
        reader.close()
