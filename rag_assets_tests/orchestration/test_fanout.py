"""fanout's clean-up after a dead worker, with real processes (the scale-out run itself: test_scale_out.py)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from rag_assets.orchestration.fanout import end_orphaned_log_tails

pytestmark = pytest.mark.system

# What Dagster's compute-log capture does in a run worker (dagster._core.execution.compute_logs):
# a `tail -F` of the run's log file writing to the worker's stdout. This worker is killed before
# it starts the watcher that would end the tail. A second tail (another run's) writes elsewhere.
WORKER = """
import subprocess, sys, time
subprocess.Popen(["tail", "-F", "-c", "+0", sys.argv[1]])
subprocess.Popen(["tail", "-F", "-c", "+0", sys.argv[2]], stdout=subprocess.DEVNULL)
time.sleep(120)
"""


def _tails(worker: subprocess.Popen, deadline: float = 30) -> list[psutil.Process]:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        tails = [p for p in psutil.Process(worker.pid).children() if p.name() == "tail"]
        if len(tails) == 2:
            return tails
        time.sleep(0.05)
    raise AssertionError("the worker did not start its two tails")


def test_a_killed_workers_log_tail_is_ended_so_its_output_reaches_an_end(tmp_path):
    dead_run, other_run = str(uuid.uuid4()), str(uuid.uuid4())
    paths = []
    for run_id in (dead_run, other_run):
        folder = tmp_path / "logs" / run_id / "compute_logs"
        folder.mkdir(parents=True)
        (folder / "step.out").write_text("")
        paths.append(str(folder / "step.out"))

    read_end, write_end = os.pipe()
    worker = subprocess.Popen([sys.executable, "-c", WORKER, *paths], stdout=write_end)
    os.close(write_end)
    tails: list[psutil.Process] = []
    try:
        tails = _tails(worker)
        other = next(t for t in tails if paths[1] in t.cmdline())
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        # the orphaned tail holds the worker's stdout: a reader of it never sees its end
        assert select.select([read_end], [], [], 1.0)[0] == []

        assert end_orphaned_log_tails([dead_run]) == 1

        assert select.select([read_end], [], [], 10.0)[0] == [read_end]
        assert os.read(read_end, 1024) == b""  # the end of the output, not more of it
        assert other.status() != psutil.STATUS_ZOMBIE, "another run's tail is left alone"
        assert end_orphaned_log_tails([str(uuid.uuid4())]) == 0
    finally:
        os.close(read_end)
        if worker.poll() is None:  # it did not start its tails
            worker.kill()
            worker.wait()
        for tail in tails:
            try:
                tail.kill()
            except psutil.Error:
                pass
