"""WarmRunLauncher: runs start in a process that has already imported the code and loaded the model.

Dagster's default launcher asks the code server to spawn `dagster api execute_run` per run; that
process imports dagster, chromadb, onnxruntime and the code location and loads the embedding model
before its first step: 3–5 s of every sensor-triggered ingest on 2 cores, most of the time from
saving a file to seeing it searchable (benchmarks/freshness.md). This launcher keeps one spare
worker (rag_assets.orchestration.warm_worker) warmed up in the launching process (the daemon under
`dagster dev`); a run is handed to the spare, and a new spare is warmed for the next run. Each
worker runs ONE run and exits, so runs stay isolated from each other as with the default launcher.

Runs carry the worker's pid and host as tags; terminate() sends it SIGINT, which Dagster turns into
a clean cancellation. A launching process that is not long-lived (the `rag` CLI's `--workers`)
gets cold workers: there is no spare to reuse, and nothing is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from typing import TYPE_CHECKING

from dagster import serialize_value

from .internals.run_launcher import run_launcher_bases, worker_health

if TYPE_CHECKING:
    from .internals.run_launcher import CheckRunHealthResult, ConfigurableClassData, LaunchRunContext

RunLauncher, ConfigurableClass = run_launcher_bases()

PID_TAG = "rag/worker_pid"
HOST_TAG = "rag/worker_host"
EVALUATION_NICE = 10


class _Worker:
    def __init__(self, cwd: str | None, instance_ref: str):
        # warmed at a lower priority where it can be restored (root): a spare warming up must not
        # slow the run that is executing beside it. The instance's ref goes first: the worker opens
        # the instance while it warms up, not when its run is waiting
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rag_assets.orchestration.warm_worker"],
            stdin=subprocess.PIPE, cwd=cwd, start_new_session=True,
        )
        self.cwd = cwd
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"instance_ref": instance_ref}) + "\n").encode())
        self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def hand(self, run_id: str, nice: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"run_id": run_id, "nice": nice}) + "\n").encode())
        self.proc.stdin.close()
        # a spare still warming up (at nice 10) is the run's now: at the run's priority at once, not
        # only when its warm-up is done (on a busy machine that warm-up held the run back seconds)
        _renice(self.proc.pid, nice)


class WarmRunLauncher(RunLauncher, ConfigurableClass):
    def __init__(self, inst_data: ConfigurableClassData | None = None, spares: int = 1):
        self._inst_data = inst_data
        self._spares = spares
        self._pool: list[_Worker] = []
        self._lock = threading.Lock()
        self._children: list[_Worker] = []
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict:
        from dagster import Field, IntSource

        return {"spares": Field(IntSource, is_required=False, default_value=1,
                                description="workers kept warm for the next runs (0: start each run cold)")}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]):
        return cls(inst_data=inst_data, spares=config_value.get("spares", 1))

    # -- launching --------------------------------------------------------------------------------
    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        cwd = _working_directory(run)
        evaluation = run.tags.get("rag/run") == "evaluation"
        # the spare is kept for the next ingestion run: an evaluation (a minute of scoring) warms a
        # worker of its own, so a page saved just after it was queued does not wait for a new spare
        worker = _Worker(cwd, self._instance_ref()) if evaluation else self._take(cwd)
        self._instance.add_run_tags(run.run_id, {PID_TAG: str(worker.proc.pid), HOST_TAG: socket.gethostname()})
        # scoring yields the CPU to ingestion: on 2 cores an evaluation beside an ingestion run
        # would otherwise stretch the time from save to searchable
        nice = EVALUATION_NICE if evaluation else 0
        worker.hand(run.run_id, nice)
        with self._lock:
            self._children = [w for w in self._children if w.alive()] + [worker]
        self._refill(cwd)

    def _take(self, cwd: str | None) -> _Worker:
        with self._lock:
            while self._pool:
                worker = self._pool.pop(0)
                if worker.alive() and worker.cwd == cwd:
                    return worker
                _stop(worker)
        return _Worker(cwd, self._instance_ref())

    def _refill(self, cwd: str | None) -> None:
        with self._lock:
            while len(self._pool) < self._spares:
                self._pool.append(_Worker(cwd, self._instance_ref()))

    def _instance_ref(self) -> str:
        return serialize_value(self._instance.get_ref())

    def spare_pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._pool if w.alive()]

    # -- termination and health -------------------------------------------------------------------
    def _pid(self, run_id: str) -> int | None:
        run = self._instance.get_run_by_id(run_id)
        if not run or run.tags.get(HOST_TAG) != socket.gethostname() or PID_TAG not in run.tags:
            return None
        return int(run.tags[PID_TAG])

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if not run or run.is_finished:
            return False
        pid = self._pid(run_id)
        if pid is None:
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(pid, signal.SIGINT)  # Dagster's interrupt handler cancels the run cleanly
        except ProcessLookupError:
            return False
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run) -> CheckRunHealthResult:
        pid = self._pid(run.run_id)
        if pid is None:
            return worker_health("UNKNOWN", "no worker on this host")
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return worker_health("FAILED", f"worker {pid} is gone")
        return worker_health("RUNNING")

    def dispose(self) -> None:
        with self._lock:
            for worker in self._pool:
                _stop(worker)
            self._pool.clear()

    def join(self, timeout: int = 30) -> None:
        for worker in list(self._children):
            try:
                worker.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass


def _working_directory(run) -> str | None:
    origin = run.job_code_origin
    try:
        return origin.repository_origin.code_pointer.working_directory if origin else None
    except AttributeError:
        return None


def _renice(pid: int, nice: int) -> None:
    """Every thread of the process at this niceness (Linux: per thread), where this user may (root
    may lower it; the workers are niced only there)."""
    if os.geteuid() != 0:
        return
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except (ProcessLookupError, PermissionError, ValueError):
            pass


def _stop(worker: _Worker) -> None:
    if worker.alive():
        worker.proc.terminate()
        try:
            worker.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
