"""How far an eval set's means can be trusted: a bootstrap interval for each mode's mean, and for the
difference between hybrid and each single mode, and between a run and the one before, paired by question.

An eval set is a sample of the questions users ask, and its means move with the sample: on 60
questions an MRR is known to about ±0.1 (95 %), so a change of 0.02 there is no evidence either way.
The same questions are asked in every mode, so the *difference* between two modes (each question's
score in one minus its score in the other, then resampled) is known far better than either mean.
Percentile bootstrap (``scipy.stats.bootstrap``), seeded: the same rows always give the same intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from rag_assets.vocabulary.modes import RetrievalMode

LEVEL = 0.95
RESAMPLES = 2000
RESAMPLED_VALUES_AT_ONCE = 4_000_000  # ~32 MB of float64 per batch of resamples, whatever the set's size
SEED = 2026
REFERENCE_MODE = RetrievalMode.HYBRID.value  # the default mode, compared with each of its parts
HEADLINE = ("section.recall@5", "section.mrr@10", "document.recall@5")  # shown first wherever space is short
QUESTION_KEY = ("mode", "question_id", "question")  # one question in one mode, in any run


@dataclass(frozen=True)
class Interval:
    """A mean (or a mean difference) and its bootstrap interval."""

    value: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        """For a difference: ``ahead`` / ``behind`` when the interval excludes 0, else ``unclear``."""
        if self.low > 0:
            return "ahead"
        if self.high < 0:
            return "behind"
        return "unclear"

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


def mean_intervals(columns: Mapping[str, Sequence[float]], level: float = LEVEL,
                   resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Interval]:
    """The mean of each column (one value per question, NaN-free columns of equal length) with its
    interval; the questions are resampled together, the same draws for every column."""
    names = list(columns)
    if not names:
        return {}
    lengths = {len(columns[n]) for n in names}
    if len(lengths) > 1:
        raise ValueError(f"columns of {sorted(lengths)} questions: resampled together, they need the same questions")
    values = np.asarray([list(map(float, columns[n])) for n in names], dtype=float)
    if values.shape[1] == 0:
        return {}
    means = values.mean(axis=1)
    if values.shape[1] == 1:  # nothing to resample: the interval is the value
        return {n: Interval(float(m), float(m), float(m)) for n, m in zip(names, means)}
    from scipy.stats import bootstrap  # imported when scored, not with the package

    batch = max(1, RESAMPLED_VALUES_AT_ONCE // values.size)
    result = bootstrap((values,), np.mean, n_resamples=resamples, batch=batch, confidence_level=level,
                       method="percentile", axis=-1, vectorized=True, rng=np.random.default_rng(seed))
    low, high = result.confidence_interval.low, result.confidence_interval.high
    return {n: Interval(float(m), float(min(lo, m)), float(max(hi, m))) for n, m, lo, hi in zip(names, means, low, high)}


def paired_differences(reference: Mapping[str, Sequence[float]], other: Mapping[str, Sequence[float]],
                       level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Interval]:
    """``reference − other`` per metric: the mean of the per-question differences and its interval.
    Both hold the same questions in the same order (an evaluation asks every mode every question)."""
    diffs: dict[str, list[float]] = {}
    for name in [n for n in reference if n in other]:
        a, b = list(reference[name]), list(other[name])
        if len(a) != len(b):
            raise ValueError(f"{name}: {len(a)} questions against {len(b)}; a paired difference needs the same questions")
        diffs[name] = [x - y for x, y in zip(a, b)]
    return mean_intervals(diffs, level, resamples, seed)


def score_columns_by_mode(rows, modes: Sequence[str], metrics: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """Per mode, each metric's per-question values (rows: a DataFrame with ``mode`` and the metric
    columns, in question order within each mode). A metric with a missing value in any mode is left out
    of every mode, so that intervals and differences describe the same questions."""
    out: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
    if rows is None or len(rows) == 0:
        return out
    for name in metrics:
        if name not in rows:
            continue
        per_mode = {m: [float(v) for v in rows.loc[rows["mode"] == m, name]] for m in modes}
        if any(not vals or any(math.isnan(v) for v in vals) for vals in per_mode.values()):
            continue
        for m, vals in per_mode.items():
            out[m][name] = vals
    return out


@dataclass(frozen=True)
class Change:
    """A metric over the questions two runs share: its mean before and now, and now − before."""

    before: float
    now: float
    change: Interval

    @property
    def verdict(self) -> str:
        return {"ahead": "better", "behind": "worse"}.get(self.change.verdict, "no clear change")

    def as_dict(self) -> dict[str, float | str]:
        return {"before": self.before, "now": self.now, "change": self.change.value, "low": self.change.low,
                "high": self.change.high, "verdict": self.verdict}


def changes_as_dict(changes: Mapping[str, Mapping[str, Change]]) -> dict[str, dict[str, dict]]:
    """mode → metric → Change.as_dict(): the JSON form of changes_between's result."""
    return {mode: {name: c.as_dict() for name, c in by_metric.items()} for mode, by_metric in changes.items()}


def run_label(created_at: str | None) -> str:
    """An earlier run named by its time to the minute (its saved ISO ``created_at``), for the reports."""
    return f"{created_at[:16].replace('T', ' ')} UTC" if created_at else "the run before"


def changes_between(previous, current, modes: Sequence[str], metrics: Sequence[str],
                    level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[int, dict[str, dict[str, Change]]]:
    """How each metric moved from one run's per-question rows to another's (DataFrames with
    QUESTION_KEY and the metric columns), paired over the questions both runs asked in a mode (same id,
    same text; a question asked twice in a run counts once). Returns (questions shared, as the fewest
    of any mode; mode → metric → Change), ({} when they share none)."""
    keys = list(QUESTION_KEY)
    if previous is None or any(k not in previous for k in keys) or any(k not in current for k in keys):
        return 0, {}
    wanted = [m for m in metrics if m in previous and m in current]
    merged = current[keys + wanted].drop_duplicates(keys).merge(
        previous[keys + wanted].drop_duplicates(keys), on=keys, suffixes=("", ":before"))
    shared, out = None, {}
    for mode in modes:
        rows = merged[merged["mode"] == mode]
        shared = len(rows) if shared is None else min(shared, len(rows))
        if rows.empty:
            continue
        now = {m: rows[m].astype(float).tolist() for m in wanted}
        before = {m: rows[f"{m}:before"].astype(float).tolist() for m in wanted}
        usable = [m for m in wanted if not any(math.isnan(v) for v in now[m] + before[m])]
        spans = paired_differences({m: now[m] for m in usable}, {m: before[m] for m in usable}, level, resamples, seed)
        out[mode] = {m: Change(float(np.mean(before[m])), float(np.mean(now[m])), spans[m]) for m in usable}
    return (shared or 0), ({} if not shared else out)
