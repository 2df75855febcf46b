"""Reciprocal Rank Fusion and the per-query weights: pure functions, hand-computed numbers."""

import pytest

from rag_assets.fusion import adaptive_weights, margin, rrf


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
