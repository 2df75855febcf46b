"""BM25 scored at query time from raw term frequencies equals bm25s' index, bit for bit."""

from collections import Counter

import bm25s
import numpy as np

from rag_assets.retrieval import bm25
from rag_assets.retrieval.terms import tokenize
from rag_assets_tests.support.corpus import SAMPLE_DOCS

EXTRA = ["", "streaming streaming streaming events", "rate limits and HTTP 429 retry-after headers",
         "a chunk about tapirs feeding at dusk by the river"]


def _corpus() -> list[list[str]]:
    docs = [tokenize(text) for text in SAMPLE_DOCS.values()] + [tokenize(t) for t in EXTRA]
    # the header counted again, as the snapshot's body index does it
    return [d + d[:3] * 3 for d in docs]


def _postings(corpus: list[list[str]]) -> dict[str, bm25.Postings]:
    found: dict[str, list[tuple[int, int]]] = {}
    for row, doc in enumerate(corpus):
        for term, count in Counter(doc).items():
            found.setdefault(term, []).append((row, count))
    return {t: bm25.Postings(np.array([r for r, _ in p]), np.array([c for _, c in p], dtype=np.float32))
            for t, p in found.items()}


def test_scores_equal_bm25s_bit_for_bit():
    corpus = _corpus()
    index = bm25s.BM25()
    index.index([doc or ["\x00"] for doc in corpus], show_progress=False)  # what the earlier snapshot built
    postings = _postings(corpus)
    dl = bm25.lengths([len(d) for d in corpus])
    avg = bm25.mean_length(dl)
    for query in ("How do I stream responses?", "HTTP 429 retry-after", "streaming streaming events",
                  "tapirs feeding", "evaluation test case", "pasta carbonara"):
        terms = tokenize(query)
        ids = [index.vocab_dict[t] for t in terms if t in index.vocab_dict]
        expected = np.asarray(index.get_scores_from_ids(ids), dtype=np.float32) if ids else None
        got = bm25.score([[postings[t]] if t in postings else [] for t in terms], len(corpus), dl, avg)
        if expected is None:
            assert got is None, query
        else:
            assert got.dtype == np.float32 and np.array_equal(got, expected), query


def test_postings_split_in_parts_score_as_one():
    corpus = _corpus()
    postings = _postings(corpus)
    dl = bm25.lengths([len(d) for d in corpus])
    avg = bm25.mean_length(dl)
    terms = tokenize("streaming events and rate limits")
    whole = bm25.score([[postings[t]] for t in terms if t in postings], len(corpus), dl, avg)
    split = []
    for t in terms:
        if t in postings:
            p, half = postings[t], len(postings[t].rows) // 2
            split.append([bm25.Postings(p.rows[:half], p.tf[:half]), bm25.Postings(p.rows[half:], p.tf[half:])])
    assert np.array_equal(bm25.score(split, len(corpus), dl, avg), whole)


def test_a_chunk_without_terms_has_length_one():
    assert bm25.lengths([0, 3]).tolist() == [1, 3]
    assert bm25.mean_length(bm25.lengths([0, 3])) == 2.0
