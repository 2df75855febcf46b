"""Ranking of candidates: diversity, the second stage, the confident-hit guard (pure, hand-made numbers)."""

import numpy as np
import pytest

from rag_assets.retrieval.diversity import diversify
from rag_assets.vocabulary.modes import FusionMethod
from rag_assets.retrieval.ranking import Candidate, RankingConfig, fuse, rank_hybrid
from rag_assets.retrieval.rescoring import rescore


def cand(cid, page="p.md", section=None, text=None, dense=0.5, keyword=0.0, row=None):
    return Candidate(cid, page, section or f"{page}#{cid}", text or cid, dense, keyword, row)


def test_diversify_collapses_sections_and_texts_and_caps_pages():
    items = [("a", "p1", "s1", "t1"), ("b", "p1", "s1", "t2"),  # same section: b collapses into a
             ("c", "p2", "s2", "t1"),  # same text as a on another page: collapses
             ("d", "p1", "s3", "t3"), ("e", "p1", "s4", "t4"), ("f", "p3", "s5", "t5")]
    ranked = diversify(items, 10, page=lambda x: x[1], section=lambda x: x[2], text=lambda x: x[3], max_per_page=2)
    assert [x[0] for x in ranked] == ["a", "d", "f", "e"]  # e is over p1's cap: after everything else
    assert [x[0] for x in diversify(items, 2, page=lambda x: x[1], section=lambda x: x[2], text=lambda x: x[3],
                                    max_per_page=0)] == ["a", "d"]
    with pytest.raises(ValueError):
        diversify(items, 2, page=str, section=str, text=str, max_per_page=-1)


def test_diversify_reports_the_hits_each_section_collapsed_without_changing_the_list():
    items = [("a", "p1", "s1", "t1"), ("b", "p1", "s1", "t2"), ("c", "p2", "s2", "t1"), ("d", "p1", "s3", "t3"),
             ("e", "p2", "s2", "t9"), ("f", "p3", "s5", "t5"), ("g", "p1", "s1", "t7")]
    keys = dict(page=lambda x: x[1], section=lambda x: x[2], text=lambda x: x[3])
    for top_k in (1, 2, 10):
        mates: dict = {}
        assert diversify(items, top_k, **keys, mates=mates) == diversify(items, top_k, **keys)
        # the whole list is read for them, past the last kept result; c (same text as a) is no mate
        assert [x[0] for x in mates["s1"]] == ["b", "g"]
    assert "s2" not in mates or [x[0] for x in mates["s2"]] == ["e"]


def test_a_page_fills_the_list_only_when_nothing_else_is_left():
    items = [cand(f"c{i}", "big.md") for i in range(8)] + [cand("o1", "other.md")]
    config = RankingConfig(max_per_page=4, heading_weight=0)
    ranked = rank_hybrid(items, np.linspace(0.9, 0.1, 9), np.zeros(9), lambda c: np.zeros(len(c)), config, 6)
    pages = [c.page for c in ranked]
    assert pages[:5].count("big.md") == 4 and "other.md" in pages[:5] and len(ranked) == 6


def test_rescore_moves_a_heading_match_up_by_weight():
    fused = np.array([1.0, 0.9, 0.2])
    heading = np.array([0.0, 5.0, 0.0])
    assert np.argmax(rescore(fused, heading, 0.5)) == 1
    assert np.argmax(rescore(fused, heading, 0.0)) == 0
    assert list(rescore(np.array([1.0]), np.array([3.0]))) == [1.0]


def test_fuse_ranks_every_candidate_on_both_scores():
    a = cand("a", dense=0.70, keyword=0.0)
    b = cand("b", dense=0.55, keyword=6.0)
    c = cand("c", dense=0.40, keyword=1.0)
    dense_ref, keyword_ref = np.array([0.7, 0.55, 0.4]), np.array([6.0, 1.0, 0.0])
    convex = fuse([a, b, c], dense_ref, keyword_ref, RankingConfig())
    assert [x.chunk_id for x in convex] == ["b", "a", "c"]
    rrf = fuse([a, b, c], dense_ref, keyword_ref, RankingConfig(fusion=FusionMethod.RRF, adaptive=False))
    assert [x.chunk_id for x in rrf][0] == "b" and all(x.score > 0 for x in rrf)


def test_a_rescored_candidate_is_the_candidate_with_its_new_score_only():
    import dataclasses

    c = Candidate("c1", "a.md", "a.md#s", "t1", 0.7, 3.5, 12, 0.25)
    assert c.scored(0.9) == dataclasses.replace(c, score=0.9) and c.score == 0.25
    # scored() names every field: one added to Candidate must be added there too
    assert [f.name for f in dataclasses.fields(Candidate)] == ["chunk_id", "page", "section", "text", "dense",
                                                              "keyword", "row", "score"]


def test_confident_keyword_hit_is_kept_in_the_top_3_even_with_rrf():
    # eight pages both lists like, and one page only BM25 finds, with a clear lead (8.9 vs 3.5)
    shared = [cand(f"s{i}", f"s{i}.md", dense=0.6 - 0.01 * i, keyword=3.5 - 0.1 * i) for i in range(8)]
    rare = cand("rare", "rare.md", dense=0.1, keyword=8.9)
    dense_ref = np.array([c.dense for c in shared] + [0.3] * 42)
    keyword_ref = np.array([8.9] + [c.keyword for c in shared] + [0.0] * 41)
    config = RankingConfig(fusion=FusionMethod.RRF, adaptive=False, heading_weight=0)
    plain = fuse(shared + [rare], dense_ref, keyword_ref, config)
    assert [c.chunk_id for c in plain].index("rare") >= 3  # rank fusion alone buries it
    ranked = rank_hybrid(shared + [rare], dense_ref, keyword_ref, lambda c: np.zeros(len(c)), config, 5)
    assert "rare" in [c.chunk_id for c in ranked[:3]]


def test_bm25_hit_with_a_rare_term_is_kept_in_the_top_3_without_a_score_gap():
    # the rare-term chunk only just leads BM25 (2.16 vs 2.15: no gap for the confident guard)
    shared = [cand(f"s{i}", f"s{i}.md", dense=0.6 - 0.01 * i, keyword=2.15 - 0.1 * i) for i in range(8)]
    rare = cand("rare", "rare.md", dense=0.1, keyword=2.16)
    dense_ref = np.array([c.dense for c in shared] + [0.3] * 42)
    keyword_ref = np.array([2.16] + [c.keyword for c in shared] + [0.0] * 41)
    config = RankingConfig(heading_weight=0)
    zeros = lambda c: np.zeros(len(c))  # noqa: E731
    plain = rank_hybrid(shared + [rare], dense_ref, keyword_ref, zeros, config, 5)
    assert "rare" not in [c.chunk_id for c in plain[:3]]
    kept = rank_hybrid(shared + [rare], dense_ref, keyword_ref, zeros, config, 5, rare_term_hit="rare")
    assert [c.chunk_id for c in kept].index("rare") == 2
    # an id that is not a candidate changes nothing
    assert rank_hybrid(shared + [rare], dense_ref, keyword_ref, zeros, config, 5, rare_term_hit="gone") == plain
