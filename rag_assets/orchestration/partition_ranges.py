"""Planning runs over the `documents` partitions: which contiguous key ranges, how many per run.

One home for what the CLI, the sensor and the schedule all need: a run over a partition range
records an event for every key inside it (unchanged ones too, ~1 ms each with batched event
writes), while each extra run costs a fixed ~0.3 s; so small gaps between wanted keys are
bridged, large ones split the range. And no run holds more than `max_per_run` wanted documents,
so a large ingest commits its work in slices: a kill keeps every finished slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

# Dagster's own tags for a single run over a partition range (the UI and `dagster asset
# materialize --partition-range` write the same two tags).
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

MAX_GAP = 5  # unchanged keys a range may carry to avoid starting another run


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


def plan_runs(order: Sequence[str], wanted: Iterable[str], max_per_run: int, max_gap: int = MAX_GAP) -> list[RangeRun]:
    """Cover `wanted` keys with ranges of `order`, at most `max_per_run` wanted keys per range,
    bridging gaps of <= max_gap keys; in partition order. Keys not in `order` are ignored."""
    wanted = set(wanted)
    positions = [i for i, key in enumerate(order) if key in wanted]
    runs: list[list[int]] = []
    for pos in positions:
        if runs and pos - runs[-1][-1] - 1 <= max_gap and len(runs[-1]) < max_per_run:
            runs[-1].append(pos)
        else:
            runs.append([pos])
    return [RangeRun(order[r[0]], order[r[-1]], tuple(order[i] for i in r)) for r in runs]
