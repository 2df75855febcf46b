"""Reciprocal Rank Fusion and the per-query weights: pure functions, hand-computed numbers."""

import pytest

from rag_assets.retrieval.fusion import adaptive_weights, margin, rrf


def test_rrf_hand_computed_equal_weights():
    fused = dict(rrf([["a", "b", "c"], ["b", "d"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)
    assert [item for item, _ in rrf([["a", "b", "c"], ["b", "d"]], k=60)] == ["b", "a", "d", "c"]


def test_rrf_weights_and_k():
    # w=(0.5, 2), k=1: a = 0.5/2 = 0.25, b = 0.5/3 + 2/2 = 1.1667, c = 2/3 = 0.6667
    fused = rrf([["a", "b"], ["b", "c"]], weights=[0.5, 2.0], k=1)
    assert [i for i, _ in fused] == ["b", "c", "a"]
    assert [s for _, s in fused] == pytest.approx([0.5 / 3 + 1.0, 2 / 3, 0.25])


def test_rrf_ties_are_deterministic_and_duplicates_count_once():
    # a and x tie (1/61 each): a comes from the first list -> first
    assert [i for i, _ in rrf([["a"], ["x"]], k=60)] == ["a", "x"]
    fused = dict(rrf([["a", "a", "b"]], k=60))
    assert fused == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 63)}


def test_rrf_rejects_bad_arguments():
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 1.0])
    with pytest.raises(ValueError):
        rrf([["a"]], k=0)
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[-1.0])
    assert rrf([[], []]) == []


def test_margin():
    assert margin([10.0, 8.0, 6.0, 5.0, 5.0, 1.0]) == pytest.approx(0.5)
    assert margin([0.8, 0.7, 0.6, 0.5, 0.4]) == pytest.approx(0.5)
    # shorter than n: the missing entries count as 0, so a lone hit is fully confident
    assert margin([0.8, 0.4]) == 1.0
    assert margin([0.5]) == 1.0
    assert margin([]) == 0.0


def test_adaptive_weights_flat_dense_list_defers_to_peaked_bm25():
    flat_dense = [0.50, 0.50, 0.49, 0.49, 0.49]  # margin 0.02 -> floor
    peaked_bm25 = [12.0, 5.0, 4.0, 3.0, 2.0]  # margin 0.83 -> full weight
    wd, wk = adaptive_weights(flat_dense, peaked_bm25)
    assert wd == pytest.approx(0.1) and wk == pytest.approx(1.0)
    # configured weights scale the result; an empty list leaves them as configured
    assert adaptive_weights(flat_dense, peaked_bm25, 2.0, 0.5) == pytest.approx((0.2, 0.5))
    assert adaptive_weights([], peaked_bm25, 1.0, 1.0) == (1.0, 1.0)


def test_fusion_with_weak_dense_list_keeps_bm25_top_hit():
    dense = ["d1", "d2", "d3", "kw1", "d4"]
    bm25 = ["kw1", "kw2", "d1"]
    equal = [i for i, _ in rrf([dense, bm25], [1, 1])]
    weighted = [i for i, _ in rrf([dense, bm25], adaptive_weights([0.5, 0.5, 0.49, 0.49, 0.49], [9, 3, 2, 1, 1]))]
    assert equal[0] == "d1"  # equal weights: a flat dense list wins the top spot
    assert weighted[0] == "kw1"  # adaptive: BM25 keeps its top hit
    assert weighted.index("kw2") < weighted.index("d2")


# -- convex fusion and the confident-hit guard ------------------------------------------------
import numpy as np  # noqa: E402

from rag_assets.retrieval.fusion import confident, convex, keep_within, standardise  # noqa: E402


def test_standardise_against_a_reference():
    z = standardise(np.array([3.0, 1.0]), np.array([1.0, 2.0, 3.0]))
    assert z == pytest.approx([(3 - 2) / np.std([1, 2, 3]), (1 - 2) / np.std([1, 2, 3])])
    assert list(standardise(np.array([5.0]), np.array([2.0, 2.0]))) == [0.0]  # no spread: no signal
    assert list(standardise(np.array([5.0]), np.array([]))) == [0.0]


def test_convex_hand_computed_and_weights_normalised():
    dense, dense_ref = np.array([0.6, 0.4]), np.array([0.6, 0.5, 0.4])
    keyword, keyword_ref = np.array([0.0, 9.0]), np.array([9.0, 0.0, 0.0, 0.0])
    zd = (dense - 0.5) / np.std(dense_ref)
    zk = (keyword - 2.25) / np.std(keyword_ref)
    assert convex(dense, keyword, dense_ref, keyword_ref) == pytest.approx((zd + zk) / 2)
    assert convex(dense, keyword, dense_ref, keyword_ref, 3, 1) == pytest.approx((3 * zd + zk) / 4)
    assert convex(dense, keyword, dense_ref, keyword_ref, 2, 2) == pytest.approx((zd + zk) / 2)
    with pytest.raises(ValueError):
        convex(dense, keyword, dense_ref, keyword_ref, 0, 0)


def test_lone_bm25_hit_stands_out_when_the_reference_keeps_the_zeros():
    # one exact-code match among 50 candidates: its z-score beats a dense list's flat best
    keyword_ref = np.array([3.0] + [0.0] * 49)
    dense_ref = np.linspace(0.52, 0.40, 50)
    fused = convex(np.array([0.52, 0.30]), np.array([0.0, 3.0]), dense_ref, keyword_ref)
    assert fused[1] > fused[0]


def test_confident_and_keep_within():
    assert confident([8.9, 3.5], 0.4) and not confident([8.9, 8.0], 0.4)
    assert confident([2.0], 0.4)  # a lone hit leads over nothing
    assert not confident([], 0.4) and not confident([0.0, 0.0], 0.1)
    assert keep_within(list("abcdef"), "e") == list("abecdf")
    assert keep_within(list("abcdef"), "b") == list("abcdef")
    assert keep_within(list("abc"), "z") == list("abc")
