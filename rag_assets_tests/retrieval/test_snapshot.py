"""The search snapshot (BM25 keyword index, headings, rows, vectors): tokenisation, search, persistence
tied to the index generation."""

import pytest

from rag_assets.index.generation import bump_generation, read_generation
from rag_assets.config import Settings
from rag_assets.retrieval.snapshot import DEFAULT_HEADING_REPEATS, SearchSnapshot
from rag_assets.retrieval.terms import chunk_headings_text, chunk_index_text, tokenize
from rag_assets.retrieval.retriever import Retriever
from rag_assets_tests.support.index_builder import build_sample_index


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
    kw = SearchSnapshot(store, settings.state_dir)
    hits = kw.search("HTTP 429 retry-after", 5)
    assert hits and store.get([hits[0].chunk_id])[0].metadata["doc_path"] == "rate-limits.md"
    assert kw.search("pasta carbonara", 5) == []  # no known term: nothing, not noise
    assert all(h.score > 0 for h in kw.search("test case", 10))


def test_persisted_and_not_rebuilt_until_generation_changes(index):
    settings, store = index
    first = SearchSnapshot(store, settings.state_dir)
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
    second = SearchSnapshot(store, settings.state_dir)
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
    cos = retriever.snapshot.cosines(vec, [h.chunk_id for h in dense])
    for h in dense:
        assert cos[h.chunk_id] == pytest.approx(h.score, abs=1e-4)


def test_header_repeats_weight_heading_terms_and_are_part_of_the_build(index):
    settings, store = index
    assert Settings.from_env({}).keyword_heading_repeats == DEFAULT_HEADING_REPEATS == 3
    assert Settings.from_env({"RAG_KEYWORD_HEADING_REPEATS": "0"}).keyword_heading_repeats == 0
    # a term of some chunk's header, to query with
    cid, _, meta = next((c, t, m) for c, t, m in store.iter_all() if tokenize(chunk_headings_text(m or {})))
    term = tokenize(chunk_headings_text(meta))[-1]
    plain = SearchSnapshot(store, settings.state_dir, heading_repeats=0)
    flat = plain.scores(term)
    row = plain.row(cid)
    weighted = SearchSnapshot(store, settings.state_dir, heading_repeats=3)
    boosted = weighted.scores(term)
    # the same build is not reused for another field weight: rebuilt, and it says so
    assert (weighted.builds, weighted.loads) == (1, 0) and weighted.meta["heading_repeats"] == 3
    assert boosted[weighted.row(cid)] > flat[row] > 0
    with pytest.raises(ValueError):
        SearchSnapshot(store, settings.state_dir, heading_repeats=-1)
    # back to the default: rebuilt again, and the default index is what Retriever.from_settings uses
    assert Retriever.from_settings(settings).snapshot.heading_repeats == DEFAULT_HEADING_REPEATS


def test_rare_terms_are_query_terms_few_chunks_contain(index):
    settings, store = index
    kw = SearchSnapshot(store, settings.state_dir)
    hit = kw.search("HTTP 429 retry-after", 1)[0]
    counts = {}
    for _, text, meta in store.iter_all():
        for term in set(tokenize(chunk_index_text(text, meta or {}))):
            counts[term] = counts.get(term, 0) + 1
    terms = tokenize("HTTP 429 retry-after")
    rare = kw.rare_terms("HTTP 429 retry-after", hit.row, 2)
    assert rare and set(rare) <= set(terms) and all(counts[t] <= 2 for t in rare)
    assert kw.rare_terms("HTTP 429 retry-after", hit.row, 10**6) == [t for t in dict.fromkeys(terms) if t in counts
                                                                      and hit.row in _rows_with(kw, store, t)]
    assert kw.rare_terms("pasta carbonara", hit.row, 2) == []  # unknown terms are not rare, just absent


def _rows_with(kw, store, term):
    return {kw.row(cid) for cid, text, meta in store.iter_all() if term in tokenize(chunk_index_text(text, meta or {}))}
