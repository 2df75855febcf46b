"""Planning runs over the `documents` partitions: which contiguous key ranges, how many per run.

One home for what the CLI, the sensor and the schedule all need: a run over a partition range
records an event for every key inside it (unchanged ones too, ~1 ms each with batched event
writes), while each extra run costs a fixed ~0.3 s; so small gaps between wanted keys are
bridged, large ones split the range. And no run holds more than `max_per_run` wanted documents,
so a large ingest commits its work in slices: a kill keeps every finished slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from rag_assets.orchestration.internals.tags import partition_range_tags

# Dagster's own tags for a single run over a partition range (the UI and `dagster asset
# materialize --partition-range` write the same two tags).
ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG = partition_range_tags()

MAX_GAP = 5  # unchanged keys a range may carry to avoid starting another run
# ... for runs that go through the run queue (docs_sensor, `rag watch`): each of those waits for the
# queue's dequeue and a launch (~2 s measured, one index run at a time), not ~0.3 s, so a burst of
# edits across a folder is worth one run that also passes over the unchanged pages between them
QUEUED_MAX_GAP = 100


@dataclass(frozen=True)
class RangeRun:
    first: str
    last: str
    keys: tuple[str, ...]  # the wanted keys inside [first, last]

    @property
    def tags(self) -> dict[str, str]:
        return range_tags(self.first, self.last)


def range_tags(first: str, last: str) -> dict[str, str]:
    return {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}


def is_range_run(tags: dict[str, str]) -> bool:
    return ASSET_PARTITION_RANGE_START_TAG in tags


def plan_runs(
    order: Sequence[str],
    wanted: Iterable[str],
    max_per_run: int,
    max_gap: int = MAX_GAP,
    weights: Mapping[str, float] | None = None,
    max_weight: float | None = None,
) -> list[RangeRun]:
    """Cover `wanted` keys with ranges of `order`, at most `max_per_run` wanted keys per range
    (and, given `weights`, about `max_weight` of work: runs that run side by side should end
    together), bridging gaps of <= max_gap keys; in partition order. Keys not in `order` are ignored."""
    wanted = set(wanted)
    positions = [i for i, key in enumerate(order) if key in wanted]
    runs: list[list[int]] = []
    load = 0.0
    for pos in positions:
        weight = weights.get(order[pos], 0.0) if weights else 0.0
        fits = max_weight is None or not runs or load + weight <= max_weight
        if runs and pos - runs[-1][-1] - 1 <= max_gap and len(runs[-1]) < max_per_run and fits:
            runs[-1].append(pos)
            load += weight
        else:
            runs.append([pos])
            load = weight
    return [RangeRun(order[r[0]], order[r[-1]], tuple(order[i] for i in r)) for r in runs]


def balanced_runs(
    order: Sequence[str], weights: Mapping[str, float], workers: int, max_per_run: int, max_gap: int = MAX_GAP
) -> list[RangeRun]:
    """Contiguous ranges over the weighted keys for `workers` runs side by side: the smallest
    per-run load for which the ranges number at most `workers` (a binary search over the load;
    more ranges only where max_per_run or a large gap forces them)."""
    if not weights:
        return []
    low, high = max(weights.values()), sum(weights.values())
    best = plan_runs(order, weights, max_per_run, max_gap, weights, high)
    for _ in range(30):
        if high - low <= max(1.0, 0.001 * high):
            break
        middle = (low + high) / 2
        runs = plan_runs(order, weights, max_per_run, max_gap, weights, middle)
        if len(runs) <= max(workers, len(best)):
            best, high = runs, middle
        else:
            low = middle
    return best
