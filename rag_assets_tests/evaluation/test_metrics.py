"""Rank metrics over distinct units: hand-computed values."""

import math

import pytest

from rag_assets.evaluation.evalset import ExpectedSource
from rag_assets.evaluation.matching import SECTION, rank_units
from rag_assets.evaluation.metrics import (
    hit_at_k,
    mean_metrics,
    metric_names,
    ndcg_at_k,
    precision_at_k,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
)
from rag_assets.retrieval.retriever import SearchResult

L2 = math.log2


def test_mixed_ranking_hand_computed():
    # ranks: 1 miss, 2 satisfies entry 0, 3 miss, 4 satisfies entry 1
    sat = [set(), {0}, set(), {1}]
    m = question_metrics(sat, n_expected=2)
    assert m["hit@1"] == 0.0 and m["hit@3"] == 1.0
    assert m["precision@1"] == 0.0
    assert m["precision@3"] == pytest.approx(1 / 3)
    assert m["precision@5"] == pytest.approx(2 / 5)
    assert m["precision@10"] == pytest.approx(2 / 10)
    assert m["precision_retrieved@10"] == pytest.approx(2 / 4)
    assert m["precision_retrieved@3"] == pytest.approx(1 / 3)
    assert (m["recall@1"], m["recall@3"], m["recall@5"]) == (0.0, 0.5, 1.0)
    assert m["mrr@10"] == 0.5
    expected_ndcg = (1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3))
    assert m["ndcg@10"] == pytest.approx(expected_ndcg)
    assert m["ndcg@10"] == pytest.approx(0.6509209298)
    assert set(m) == set(metric_names())


def test_zero_results_score_zero_not_error():
    m = question_metrics([], n_expected=3)
    assert all(v == 0.0 for v in m.values()), m


def test_precision_denominators_differ_on_short_lists():
    sat = [{0}, set()]
    assert precision_at_k(sat, 5) == pytest.approx(0.2)  # fixed k
    assert precision_at_k(sat, 5, "retrieved") == pytest.approx(0.5)  # min(k, retrieved)
    assert precision_at_k(sat, 1, "retrieved") == 1.0
    assert precision_at_k([], 3, "retrieved") == 0.0
    with pytest.raises(ValueError):
        precision_at_k(sat, 3, "bogus")


def test_several_expected_sources_one_unit_satisfies_two():
    sat = [{0, 1}, set(), {2}]
    assert recall_at_k(sat, 3, 1) == pytest.approx(2 / 3)
    assert recall_at_k(sat, 3, 3) == 1.0
    assert precision_at_k(sat, 3) == pytest.approx(2 / 3)
    # ideal: 3 relevant units at ranks 1..3; we have gains at 1 and 3
    assert ndcg_at_k(sat, 3) == pytest.approx((1 + 1 / L2(4)) / (1 + 1 / L2(3) + 1 / L2(4)))


def test_same_label_twice_counts_once_for_ndcg_and_recall():
    sat = [{0}, {0}]
    assert ndcg_at_k(sat, 1) == 1.0  # never above 1
    assert recall_at_k(sat, 1, 10) == 1.0
    assert precision_at_k(sat, 2) == 1.0  # both units are relevant
    assert hit_at_k(sat, 1) == 1.0


def test_perfect_and_late_rankings():
    assert ndcg_at_k([{0}, {1}], 2) == pytest.approx(1.0)
    assert reciprocal_rank([set()] * 9 + [{0}]) == pytest.approx(0.1)
    assert reciprocal_rank([set()] * 10 + [{0}]) == 0.0  # outside the cut-off
    assert ndcg_at_k([set()] * 10 + [{0}], 1) == 0.0
    assert ndcg_at_k([set(), {0}], 1) == pytest.approx(1 / L2(3))


def test_ties_keep_given_rank_order():
    expected = [ExpectedSource(doc_path="a.md", section="Right")]
    wrong = SearchResult("w", "b.md", "Other", "Other", "x", score=0.5)
    right = SearchResult("r", "a.md", "Right", "Right", "y", score=0.5)
    first = rank_units([wrong, right], expected, SECTION)
    second = rank_units([right, wrong], expected, SECTION)
    assert reciprocal_rank([u.satisfies for u in first]) == 0.5
    assert reciprocal_rank([u.satisfies for u in second]) == 1.0


def test_mean_skips_nan_and_keeps_names():
    means = mean_metrics([{"a": 1.0, "b": math.nan}, {"a": 0.0, "b": 0.5}, {"a": 0.5, "b": math.nan}])
    assert means["a"] == pytest.approx(0.5)
    assert means["b"] == 0.5
    assert math.isnan(mean_metrics([{"c": math.nan}])["c"])


def test_recall_and_ndcg_nan_without_expected_entries():
    assert math.isnan(recall_at_k([{0}], 0, 3))
    assert math.isnan(ndcg_at_k([{0}], 0))
