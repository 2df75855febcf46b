"""The search snapshot as a query reads it: BM25, heading scores, rare terms and cosines from the
committed snapshot, a reader that follows commits without waiting for them, heading weights chosen at
query time, and an index an earlier version wrote: its snapshot built once, saying so."""

import logging
import threading

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.retrieval.retriever import Retriever
from rag_assets.retrieval.snapshot import DEFAULT_HEADING_REPEATS, SearchSnapshot
from rag_assets.retrieval.snapshot_builds import builds_for, snapshot_root
from rag_assets.retrieval.terms import chunk_headings_text, chunk_index_text, tokenize
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index, build_sample_index


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    env, settings = build_sample_index(tmp_path_factory.mktemp("kw"))
    return settings, Retriever.from_settings(settings).store


def test_tokenize_stems_drops_stopwords_and_splits_identifiers():
    assert tokenize("How are the Operatives running?") == ["oper", "run"]
    toks = tokenize("content_block_delta events")
    assert {"content_block_delta", "content", "block", "delta", "event"} <= set(toks)
    assert tokenize("   ") == [] and tokenize("a I") == []


def test_search_finds_exact_terms(index):
    settings, _ = index
    view = SearchSnapshot(settings).view()
    hits = view.search("HTTP 429 retry-after", 5)
    assert hits and view.table(hits[0].row).doc_path == "rate-limits.md" and view.chunk_id(hits[0].row) == hits[0].chunk_id
    assert view.search("pasta carbonara", 5) == []  # no known term: nothing, not noise
    assert all(h.score > 0 for h in view.search("test case", 10))


def test_a_new_reader_opens_the_committed_snapshot_and_builds_nothing(index):
    settings, store = index
    reader = SearchSnapshot(settings)
    view = reader.view()
    assert len(view) == store.count() and (reader.loads, reader.rebuilds) == (1, 0)
    for _ in range(3):  # repeated queries: the same view, nothing opened again
        assert reader.view() is view
    assert reader.loads == 1


def test_cosines_from_stored_embeddings(index):
    settings, store = index
    retriever = Retriever.from_settings(settings)
    vec = retriever.embed_query("server-sent events streaming")
    view = retriever.view()
    dense = store.query(vec, top_k=4)
    cos = view.cosines(vec, [view.row(h.chunk_id) for h in dense])
    assert cos == pytest.approx([h.score for h in dense], abs=1e-4)
    rows, sims = view.nearest(vec, 4)
    assert [view.chunk_id(int(r)) for r in rows] == [h.chunk_id for h in dense]  # exact search: the same neighbours here
    assert np.all(np.diff(sims) <= 0)


def test_header_repeats_are_chosen_at_query_time(index):
    settings, store = index
    assert Settings.from_env({}).keyword_heading_repeats == DEFAULT_HEADING_REPEATS == 3
    assert Settings.from_env({"RAG_KEYWORD_HEADING_REPEATS": "0"}).keyword_heading_repeats == 0
    cid, _, meta = next((c, t, m) for c, t, m in store.iter_all() if tokenize(chunk_headings_text(m or {})))
    term = tokenize(chunk_headings_text(meta))[-1]
    plain, weighted = SearchSnapshot(settings, heading_repeats=0), SearchSnapshot(settings, heading_repeats=3)
    flat, boosted = plain.view(), weighted.view()
    assert boosted.scores(term)[boosted.row(cid)] > flat.scores(term)[flat.row(cid)] > 0
    assert plain.rebuilds == weighted.rebuilds == 0  # one snapshot serves every weight
    with pytest.raises(ValueError):
        SearchSnapshot(settings, heading_repeats=-1)
    assert Retriever.from_settings(settings).snapshot.heading_repeats == DEFAULT_HEADING_REPEATS


def test_rare_terms_are_query_terms_few_chunks_contain(index):
    settings, store = index
    view = SearchSnapshot(settings).view()
    hit = view.search("HTTP 429 retry-after", 1)[0]
    counts: dict[str, int] = {}
    for _, text, meta in store.iter_all():
        for term in set(tokenize(chunk_index_text(text, meta or {}))):
            counts[term] = counts.get(term, 0) + 1
    terms = tokenize("HTTP 429 retry-after")
    rare = view.rare_terms("HTTP 429 retry-after", hit.row, 2)
    assert rare and set(rare) <= set(terms) and all(counts[t] <= 2 for t in rare)
    holding = {t for cid, text, meta in store.iter_all() if cid == hit.chunk_id
               for t in tokenize(chunk_index_text(text, meta or {}))}
    assert view.rare_terms("HTTP 429 retry-after", hit.row, 10**6) == [t for t in dict.fromkeys(terms) if t in holding]
    assert view.rare_terms("pasta carbonara", hit.row, 2) == []  # unknown terms are not rare, just absent
    rows = [h.row for h in view.search("HTTP 429 retry-after", 3)]
    assert view.rare_terms_of("HTTP 429 retry-after", rows, 2) == [view.rare_terms("HTTP 429 retry-after", r, 2) for r in rows]


def test_term_presence_gives_idf_what_the_index_knows_and_where_each_term_is(index):
    """What calibrated relevance reads of the keyword index (rag_assets.retrieval.relevance)."""
    settings, _ = index
    view = SearchSnapshot(settings).view()
    [limits, streaming] = [view.search(q, 1)[0].row for q in ("requests per minute 429", "server-sent events")]
    idf, known, present, in_header = view.term_presence("During which minute does pasta hit the rate limits?",
                                                        [limits, streaming])
    terms = [t for t in view.query_terms("During which minute does pasta hit the rate limits?") if t != "dure"]
    assert len(idf) == len(terms) == present.shape[0] and present.shape == in_header.shape == (len(terms), 2)
    by_term = dict(zip(terms, zip(known, present.tolist(), in_header.tolist())))
    assert "dure" not in by_term  # "during": a function word names no topic
    assert by_term["pasta"][0] is np.False_ and by_term["pasta"][1] == [False, False]
    assert by_term["minut"][1] == [True, False] and by_term["limit"][2] == [True, False]  # "# Rate limits"
    assert idf[terms.index("pasta")] == idf.max()  # a term no chunk holds: the rarest there is


def test_a_reader_follows_commits_and_never_waits_for_a_writer(tmp_path):
    root = tmp_path
    write_corpus(root / "docs")
    settings = Settings.from_env({}, docs_dir=root / "docs", chroma_path=root / "chroma", state_dir=root / "state",
                                 cache_dir=root / "cache")
    build_index(None, settings)
    reader = SearchSnapshot(settings)
    bounded = SearchSnapshot(settings, recheck_seconds=3600)  # `rag serve`'s kind: checks once per bound
    before = reader.view()
    assert bounded.view() is not None and bounded.checks == 1
    assert not before.search("ZK-4411 valve grease", 3)
    write_corpus(root / "docs", {"parts/valves.md": "# Valves\n\nGrease the ZK-4411 valve every quarter.\n"})
    build_index(None, settings)  # a commit
    after = reader.view()
    assert after.generation != before.generation and after.search("ZK-4411 valve grease", 3)
    assert len(after) == len(before) + 1 and not before.search("ZK-4411 valve grease", 3)  # views are immutable
    assert reader.checks == 2  # the default: the generation and CURRENT read on every view()
    stale = bounded.view()  # within its bound: the view it confirmed, nothing read
    assert stale.generation == before.generation and not stale.search("ZK-4411 valve grease", 3) and bounded.checks == 1
    with pytest.raises(ValueError):
        SearchSnapshot(settings, recheck_seconds=-1)
    # a writer holding the snapshot's lock (a commit or a merge in progress) does not hold a reader up
    locked, release = threading.Event(), threading.Event()

    def writer():
        with builds_for(settings).lock():
            locked.set()
            release.wait(300)  # let go once the reader is done (or the test ended): never before

    found = []

    def read():
        found.append(SearchSnapshot(settings).view().search("ZK-4411 valve grease", 3))

    reader = threading.Thread(target=read, daemon=True)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert locked.wait(300)  # only a guard against a hang
        reader.start()
        reader.join(timeout=120)  # a reader that took the lock would still wait here: the writer holds it
        assert not reader.is_alive() and found and found[0]
    finally:
        release.set()
        thread.join()


def test_an_index_an_earlier_version_wrote_gets_its_snapshot_once(tmp_path, caplog):
    write_corpus(tmp_path / "docs")
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    build_index(None, settings, snapshot=False)  # the store and the generation, no snapshot committed
    retriever = Retriever.from_settings(settings)
    with caplog.at_level(logging.WARNING, logger="rag_assets.retrieval.snapshot_writer"):
        results = retriever.search("HTTP 429 retry-after", "hybrid", 3)
    assert results[0].doc_path == "rate-limits.md"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "building it from the store once" in warnings[0] and "found by a query" in warnings[0]
    assert retriever.snapshot.rebuilds == 1
    other = Retriever.from_settings(settings)  # another reader: the snapshot is there now
    assert other.search("HTTP 429 retry-after", "hybrid", 3)[0].chunk_id == results[0].chunk_id
    assert other.snapshot.rebuilds == 0


def test_a_keyword_build_of_the_version_before_the_snapshot_is_replaced_once(tmp_path, caplog):
    """The state folder of the version before: CURRENT names a keyword build folder, not a manifest."""
    write_corpus(tmp_path / "docs")
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    build_index(None, settings, snapshot=False)
    root = snapshot_root(settings.state_dir, settings.collection)
    (root / "build-0d28a7d2947a467f-491cf028").mkdir(parents=True)
    (root / "CURRENT").write_text("build-0d28a7d2947a467f-491cf028", encoding="utf-8")
    retriever = Retriever.from_settings(settings)
    with caplog.at_level(logging.WARNING, logger="rag_assets.retrieval.snapshot_writer"):
        assert retriever.search("HTTP 429 retry-after", "hybrid", 3)[0].doc_path == "rate-limits.md"
        assert retriever.search("HTTP 429 retry-after", "keyword", 3)[0].doc_path == "rate-limits.md"
    assert retriever.snapshot.rebuilds == 1 and sum("building it from the store once" in r.getMessage()
                                                    for r in caplog.records) == 1
    assert not (root / "build-0d28a7d2947a467f-491cf028").exists()  # collected with the old manifests
