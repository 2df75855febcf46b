"""BM25 keyword index: tokenisation, search, persistence tied to the index generation."""

import pytest

from rag_assets.index_generation import bump_generation, read_generation
from rag_assets.keyword import KeywordIndex, tokenize
from rag_assets.retrieval import Retriever
from rag_assets_tests.index_builder import build_sample_index


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    env, settings = build_sample_index(tmp_path_factory.mktemp("kw"))
    retriever = Retriever.from_settings(settings)
    return settings, retriever.store


def test_tokenize_stems_drops_stopwords_and_splits_identifiers():
    assert tokenize("How are the Operatives running?") == ["oper", "run"]
    toks = tokenize("content_block_delta events")
    assert {"content_block_delta", "content", "block", "delta", "event"} <= set(toks)
    assert tokenize("   ") == [] and tokenize("a I") == []


def test_search_finds_exact_terms(index):
    settings, store = index
    kw = KeywordIndex(store, settings.state_dir)
    hits = kw.search("HTTP 429 retry-after", 5)
    assert hits and store.get([hits[0].chunk_id])[0].metadata["doc_path"] == "rate-limits.md"
    assert kw.search("pasta carbonara", 5) == []  # no known term: nothing, not noise
    assert all(h.score > 0 for h in kw.search("test case", 10))


def test_persisted_and_not_rebuilt_until_generation_changes(index):
    settings, store = index
    first = KeywordIndex(store, settings.state_dir)
    first.ensure_current()
    folder = settings.state_dir / "keyword" / settings.collection
    assert (folder / "CURRENT").is_file()
    built = first.builds + first.loads
    assert built == 1
    # repeated queries in the same process: nothing rebuilt or reloaded
    for _ in range(3):
        first.search("streaming events", 3)
    assert first.builds + first.loads == 1
    # a new process (new object) loads from disk instead of rebuilding
    second = KeywordIndex(store, settings.state_dir)
    second.search("streaming", 3)
    assert (second.builds, second.loads) == (0, 1)
    assert second.meta["generation"] == read_generation(settings.state_dir)
    assert second.meta["collection_id"] == store.collection_id

    # an ingest bumps the generation: the next search rebuilds once, old builds are removed
    bump_generation(settings.state_dir)
    second.search("streaming", 3)
    assert second.builds == 1
    second.search("streaming", 3)
    assert second.builds == 1
    assert len([p for p in folder.iterdir() if p.name.startswith("build-")]) == 1
    # the first object notices the new generation too and loads the new build (no rebuild)
    first.search("streaming", 3)
    assert first.loads + first.builds == 2 and first.meta["generation"] == read_generation(settings.state_dir)


def test_cosines_from_stored_embeddings(index):
    settings, store = index
    retriever = Retriever.from_settings(settings)
    vec = retriever.embed_query("server-sent events streaming")
    dense = store.query(vec, top_k=4)
    cos = retriever.keyword.cosines(vec, [h.chunk_id for h in dense])
    for h in dense:
        assert cos[h.chunk_id] == pytest.approx(h.score, abs=1e-4)
