"""Rank metrics over distinct units (see :mod:`rag_assets.evaluation.matching`).

Input of every function: ``satisfied`` = for each retrieved unit in rank order, the collection of
expected-entry indices it satisfies (empty = not relevant), and ``n_expected`` = number of
(deduplicated) expected entries. Rank order is taken as given: ties in score are never re-sorted.

Definitions (binary relevance; a unit is *relevant* when it satisfies at least one entry):

- ``hit@k``: 1 if a relevant unit is among the first k units, else 0.
- ``precision@k``: relevant units in the first k / **k** (fixed denominator: a result list shorter
  than k is penalised, so a question with zero results scores 0).
- ``precision_retrieved@k``: relevant units in the first k / **min(k, units retrieved)** — the
  denominator the upstream Claude-docs guide (and ragas' IDBasedContextPrecision) uses;
  0 when nothing was retrieved.
- ``recall@k``: expected entries satisfied by the first k units / n_expected.
- ``mrr@10``: 1 / rank of the first relevant unit within the first 10 (0 if none); averaged over
  questions this is MRR.
- ``ndcg@10``: DCG = Σ gain_i / log2(i + 1) over ranks i ≤ 10, with gain 1 for a unit that satisfies
  an entry no earlier unit satisfied (so two units matching the same single label do not count
  twice and nDCG stays ≤ 1); IDCG = Σ_{i=1..min(n_expected, 10)} 1 / log2(i + 1).
"""

from __future__ import annotations

import math
from typing import Collection, Iterable, Mapping, Sequence

KS: tuple[int, ...] = (1, 3, 5, 10)
RANK_CUTOFF = 10

Satisfied = Sequence[Collection[int]]


def hit_at_k(satisfied: Satisfied, k: int) -> float:
    return 1.0 if any(satisfied[:k]) else 0.0


def precision_at_k(satisfied: Satisfied, k: int, denominator: str = "k") -> float:
    """``denominator="k"`` (default) or ``"retrieved"`` (min(k, units retrieved))."""
    relevant = sum(1 for s in satisfied[:k] if s)
    if denominator == "k":
        return relevant / k
    if denominator == "retrieved":
        n = min(k, len(satisfied))
        return relevant / n if n else 0.0
    raise ValueError(f"denominator must be 'k' or 'retrieved', got {denominator!r}")


def recall_at_k(satisfied: Satisfied, n_expected: int, k: int) -> float:
    if n_expected <= 0:
        return math.nan
    found = set().union(*satisfied[:k]) if satisfied[:k] else set()
    return len(found) / n_expected


def reciprocal_rank(satisfied: Satisfied, k: int = RANK_CUTOFF) -> float:
    for rank, s in enumerate(satisfied[:k], start=1):
        if s:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(satisfied: Satisfied, n_expected: int, k: int = RANK_CUTOFF) -> float:
    if n_expected <= 0:
        return math.nan
    seen: set[int] = set()
    dcg = 0.0
    for rank, s in enumerate(satisfied[:k], start=1):
        new = set(s) - seen
        if new:
            dcg += 1.0 / math.log2(rank + 1)
            seen |= new
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(n_expected, k) + 1))
    return dcg / idcg


def metric_names(ks: Iterable[int] = KS) -> list[str]:
    ks = list(ks)
    return (
        [f"hit@{k}" for k in ks]
        + [f"precision@{k}" for k in ks]
        + [f"precision_retrieved@{k}" for k in ks]
        + [f"recall@{k}" for k in ks]
        + [f"mrr@{RANK_CUTOFF}", f"ndcg@{RANK_CUTOFF}"]
    )


def question_metrics(satisfied: Satisfied, n_expected: int, ks: Iterable[int] = KS) -> dict[str, float]:
    """Every metric for one question, keyed as in :func:`metric_names`."""
    ks = list(ks)
    out: dict[str, float] = {}
    for k in ks:
        out[f"hit@{k}"] = hit_at_k(satisfied, k)
    for k in ks:
        out[f"precision@{k}"] = precision_at_k(satisfied, k)
    for k in ks:
        out[f"precision_retrieved@{k}"] = precision_at_k(satisfied, k, "retrieved")
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(satisfied, n_expected, k)
    out[f"mrr@{RANK_CUTOFF}"] = reciprocal_rank(satisfied, RANK_CUTOFF)
    out[f"ndcg@{RANK_CUTOFF}"] = ndcg_at_k(satisfied, n_expected, RANK_CUTOFF)
    return out


def mean_metrics(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Mean per metric over questions, NaN values (not applicable) left out; NaN if none."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for name, value in row.items():
            sums.setdefault(name, 0.0)
            counts.setdefault(name, 0)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            sums[name] += float(value)
            counts[name] += 1
    return {name: (sums[name] / counts[name] if counts[name] else math.nan) for name in sums}
