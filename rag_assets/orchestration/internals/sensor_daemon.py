"""Dagster's sensor daemon loop as rag_assets.orchestration.event_log paces it: the daemon wakes every
`MIN_INTERVAL_LOOP_TIME` seconds (5) whatever a sensor's minimum interval, and reads that module
global at every wake-up (dagster._daemon.sensor.execute_sensor_iteration_loop)."""

from __future__ import annotations

import sys

LOOP_GLOBAL = "MIN_INTERVAL_LOOP_TIME"


def set_sensor_daemon_pace(seconds: float) -> bool:
    """Wake the sensor daemon every `seconds`, in a process where the daemon's module is loaded (the
    daemon's; nothing is imported elsewhere). True when it was set."""
    module = sys.modules.get("dagster._daemon.sensor")
    if module is None or not hasattr(module, LOOP_GLOBAL):
        return False
    setattr(module, LOOP_GLOBAL, seconds)
    return True
