"""RunQueue, the repository's run coordinator: Dagster's queue, configured in dagster.yaml, whose
daemon process wakes the sensor daemon every second (Dagster's own loop: every 5 s, whatever
docs_sensor's interval, up to 5 s of a saved page's time to searchable); under `dagster dev` the
sensor then ticks about every second."""

from __future__ import annotations

import statistics
import time

import pytest

from rag_assets.orchestration.run_queue import RunQueue
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.dagster_dev import dagster_dev, dagster_dev_env


def test_the_repositorys_instance_queues_runs_with_a_run_queue_that_paces_the_sensor_daemon(dagster_home, monkeypatch):
    import dagster as dg
    import dagster._daemon.sensor as sensor_daemon

    monkeypatch.setattr(sensor_daemon, "MIN_INTERVAL_LOOP_TIME", 5)  # Dagster's, as a daemon process starts
    with dg.DagsterInstance.get() as instance:
        queue = instance.run_coordinator
        assert isinstance(queue, RunQueue) and queue.sensor_daemon_seconds == 1
        assert queue.dequeue_interval_seconds == 1
    assert sensor_daemon.MIN_INTERVAL_LOOP_TIME == 1


@pytest.mark.system
def test_under_dagster_dev_docs_sensor_ticks_about_every_second(tmp_path):
    write_corpus(tmp_path / "docs")
    env = dagster_dev_env(tmp_path)
    with dagster_dev(tmp_path, env, {"document_catalog"}) as server:
        repository = server.gql("{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }")
        node = repository["repositoriesOrError"]["nodes"][0]
        selector = {"repositoryLocationName": node["location"]["name"], "repositoryName": node["name"],
                    "sensorName": "docs_sensor"}
        started = server.gql("mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }",
                             {"s": selector})
        assert started["startSensor"]["__typename"] == "Sensor"
        deadline = time.monotonic() + 120
        ticks: list[float] = []
        while time.monotonic() < deadline and len(ticks) < 8:
            time.sleep(2)
            data = server.gql("query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor { "
                              "sensorState { ticks(limit: 50) { timestamp } } } } }", {"s": selector})
            ticks = sorted(t["timestamp"] for t in data["sensorOrError"]["sensorState"]["ticks"])
    assert len(ticks) >= 8, f"{len(ticks)} ticks\n{server.tail()}"
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert statistics.median(gaps) < 3.5, gaps  # Dagster's own loop: 5 s and more
