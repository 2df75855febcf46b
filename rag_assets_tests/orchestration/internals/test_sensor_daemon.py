"""The assumption RunQueue makes about Dagster's sensor daemon: its loop waits MIN_INTERVAL_LOOP_TIME,
a module global of dagster._daemon.sensor read at every wake-up, whatever a sensor's own interval."""

import inspect

from rag_assets.orchestration.internals import sensor_daemon as internals
from rag_assets_tests.support.dagster_assumptions import assumption


def test_the_sensor_loop_reads_its_pace_from_the_module_global_each_time(monkeypatch):
    with assumption("sensor_daemon.set_sensor_daemon_pace"):
        import dagster._daemon.sensor as module

        loop = inspect.getsource(module.execute_sensor_iteration_loop)
        assert f"{internals.LOOP_GLOBAL} - loop_duration" in loop  # read where it sleeps, not bound at import
        monkeypatch.setattr(module, internals.LOOP_GLOBAL, getattr(module, internals.LOOP_GLOBAL))
        assert internals.set_sensor_daemon_pace(1) is True
        assert getattr(module, internals.LOOP_GLOBAL) == 1
