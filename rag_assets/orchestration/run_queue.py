"""RunQueue: Dagster's QueuedRunCoordinator (the queue dagster.yaml configures), which also sets how
often the sensor daemon wakes (`sensor_daemon_seconds`, default 1).

Why here: Dagster's sensor daemon wakes every 5 s whatever a sensor's own interval, so a page saved
just after a wake-up waited up to 5 s (2.5 s on average) before docs_sensor even looked: the largest
part of the time from saving a page to finding it under `dagster dev` (benchmarks/freshness.md). The
daemon process builds its run coordinator when it starts, before its sensor loop's first wake-up, and
no setting of Dagster's changes that loop (rag_assets.orchestration.internals.sensor_daemon). A
sensor still ticks no more often than its minimum interval (RAG_SENSOR_INTERVAL_SECONDS)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster import Field, IntSource, QueuedRunCoordinator

from .internals.sensor_daemon import set_sensor_daemon_pace

SENSOR_DAEMON_SECONDS = 1


class RunQueue(QueuedRunCoordinator):
    def __init__(self, sensor_daemon_seconds: int = SENSOR_DAEMON_SECONDS, **kwargs: Any):
        super().__init__(**kwargs)
        self.sensor_daemon_seconds = max(1, int(sensor_daemon_seconds))
        set_sensor_daemon_pace(self.sensor_daemon_seconds)

    @classmethod
    def config_type(cls):
        return {**super().config_type(), "sensor_daemon_seconds": Field(
            IntSource, is_required=False, default_value=SENSOR_DAEMON_SECONDS,
            description="how often the sensor daemon wakes to tick the sensors that are due (Dagster's: 5)")}

    @classmethod
    def from_config_value(cls, inst_data, config_value: Mapping[str, Any]) -> "RunQueue":
        queue = super().from_config_value(inst_data, config_value)
        seconds = config_value.get("sensor_daemon_seconds", SENSOR_DAEMON_SECONDS)
        queue.sensor_daemon_seconds = max(1, int(seconds))
        set_sensor_daemon_pace(queue.sensor_daemon_seconds)
        return queue
