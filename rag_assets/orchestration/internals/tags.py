"""Dagster's own tags for one run over a range of partitions (the UI and `dagster asset materialize
--partition-range` write the same two)."""

from __future__ import annotations

from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG


def partition_range_tags() -> tuple[str, str]:
    """(start tag, end tag) of a run over the partition keys first..last."""
    return ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG
