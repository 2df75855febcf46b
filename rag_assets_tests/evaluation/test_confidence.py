"""Bootstrap intervals of an eval set's means, and paired differences between modes."""

import math

import numpy as np
import pandas as pd
import pytest

from rag_assets.evaluation.confidence import (
    Interval, changes_between, mean_intervals, paired_differences, score_columns_by_mode)


def test_an_interval_holds_its_mean_and_narrows_with_more_questions():
    few = [1.0] * 42 + [0.0] * 18  # 60 questions, mean 0.7
    many = few * 10  # the same mean over 600
    small, large = mean_intervals({"m": few})["m"], mean_intervals({"m": many})["m"]
    assert small.value == pytest.approx(0.7) and large.value == pytest.approx(0.7)
    assert 0.0 <= small.low < 0.7 < small.high <= 1.0
    # the standard error shrinks with sqrt(n): 10x the questions, about a third of the width
    assert (large.high - large.low) == pytest.approx((small.high - small.low) / math.sqrt(10), rel=0.25)
    # 60 Bernoulli(0.7) answers: the half-width is about 1.96 * sqrt(.21 / 60) = 0.116
    assert (small.high - small.low) / 2 == pytest.approx(0.116, abs=0.02)


def test_intervals_are_seeded_and_cover_the_true_mean_about_95_in_100_times():
    rng = np.random.default_rng(7)
    values = list(rng.random(50))
    assert mean_intervals({"m": values}) == mean_intervals({"m": values})  # same rows, same interval
    covered = 0
    trials = 200
    for _ in range(trials):
        sample = (rng.random(60) < 0.7).astype(float)
        span = mean_intervals({"m": sample}, resamples=1000)["m"]
        covered += span.low <= 0.7 <= span.high
    assert 0.88 <= covered / trials <= 0.99


def test_degenerate_columns():
    assert mean_intervals({"all": [1.0] * 20})["all"] == Interval(1.0, 1.0, 1.0)
    assert mean_intervals({"one": [0.25]})["one"] == Interval(0.25, 0.25, 0.25)
    assert mean_intervals({}) == {} and mean_intervals({"m": []}) == {}
    with pytest.raises(ValueError, match="the same questions"):
        mean_intervals({"a": [1.0, 0.0], "b": [1.0]})


def test_pairing_tells_apart_what_two_separate_intervals_cannot():
    rng = np.random.default_rng(3)
    other = (rng.random(100) < 0.6).astype(float)
    better = other.copy()
    better[np.flatnonzero(other == 0)[:8]] = 1.0  # the same questions, 8 of them now answered
    alone = mean_intervals({"better": better, "other": other})
    assert alone["better"].low < alone["other"].high  # the two means' intervals overlap...
    ahead = paired_differences({"m": better}, {"m": other})["m"]
    assert ahead.value == pytest.approx(0.08) and ahead.low > 0 and ahead.verdict == "ahead"  # ...their difference does not
    assert paired_differences({"m": other}, {"m": better})["m"].verdict == "behind"
    same = paired_differences({"m": other}, {"m": other})["m"]
    assert same == Interval(0.0, 0.0, 0.0) and same.verdict == "unclear"
    mixed = other.copy()
    mixed[np.flatnonzero(other == 0)[:3]] = 1.0
    mixed[np.flatnonzero(other == 1)[:3]] = 0.0  # as many won as lost
    assert paired_differences({"m": mixed}, {"m": other})["m"].verdict == "unclear"


def test_paired_differences_keep_the_metric_order_and_need_the_same_questions():
    diffs = paired_differences({"b": [1, 0], "a": [1, 1], "only_here": [0, 0]}, {"a": [0, 1], "b": [1, 1]})
    assert list(diffs) == ["b", "a"]
    with pytest.raises(ValueError, match="the same questions"):
        paired_differences({"a": [1, 0, 1]}, {"a": [1, 0]})


def test_score_columns_by_mode_leaves_out_a_metric_missing_anywhere():
    rows = pd.DataFrame({
        "mode": ["hybrid", "hybrid", "vector", "vector"],
        "section.mrr@10": [1.0, 0.5, 0.5, 0.0],
        "section.recall@5": [1.0, 1.0, math.nan, 1.0],
    })
    columns = score_columns_by_mode(rows, ["hybrid", "vector"], ["section.mrr@10", "section.recall@5", "absent"])
    assert columns == {"hybrid": {"section.mrr@10": [1.0, 0.5]}, "vector": {"section.mrr@10": [0.5, 0.0]}}
    assert score_columns_by_mode(pd.DataFrame(), ["hybrid"], ["section.mrr@10"]) == {"hybrid": {}}


def _rows(mode_scores):
    """Per-question rows as the runner saves them: {mode: [(question_id, question, mrr)]}."""
    return pd.DataFrame([{"mode": m, "question_id": qid, "question": q, "section.mrr@10": v}
                         for m, scored in mode_scores.items() for qid, q, v in scored])


def test_changes_pair_the_questions_both_runs_asked():
    before = _rows({"hybrid": [(f"q{i}", f"question {i}?", 1.0 if i < 30 else 0.0) for i in range(40)]})
    # now: q0-q9 lost, one question dropped from the set, one added, one asked twice
    now_scores = [(f"q{i}", f"question {i}?", 0.0 if i < 10 else 1.0 if i < 30 else 0.0) for i in range(1, 40)]
    now = _rows({"hybrid": now_scores + [("new", "a new question?", 1.0), ("q5", "question 5?", 1.0)]})
    shared, changes = changes_between(before, now, ["hybrid"], ["section.mrr@10", "absent"])
    assert shared == 39  # q0 is gone, "new" was never asked before, q5 counts once (its first row)
    change = changes["hybrid"]["section.mrr@10"]
    assert change.before == pytest.approx(29 / 39) and change.now == pytest.approx(20 / 39)
    assert change.change.value == pytest.approx(-9 / 39) and change.verdict == "worse"
    assert change.as_dict()["verdict"] == "worse" and change.as_dict()["before"] == change.before


def test_changes_need_shared_questions_and_the_key_columns():
    before = _rows({"hybrid": [("q1", "one?", 1.0)]})
    renamed = _rows({"hybrid": [("q1", "one, reworded?", 1.0)]})  # same id, another question: not the same
    assert changes_between(before, renamed, ["hybrid"], ["section.mrr@10"]) == (0, {})
    assert changes_between(None, before, ["hybrid"], ["section.mrr@10"]) == (0, {})
    assert changes_between(before.drop(columns=["question"]), before, ["hybrid"], ["section.mrr@10"]) == (0, {})
    same = changes_between(before, before, ["hybrid"], ["section.mrr@10"])[1]["hybrid"]["section.mrr@10"]
    assert same.change == Interval(0.0, 0.0, 0.0) and same.verdict == "no clear change"
