"""Fan-out: several document runs at once, launched through the instance's run launcher.

`rag ingest --workers N` plans the stale documents as contiguous partition ranges and keeps up to N
runs of the `ingest_documents` job in flight, exactly as the UI or the daemon would launch them:
the code location is served by a gRPC code server (Dagster's own), and each run goes to the run
launcher `dagster.yaml` configures (by default a local subprocess per run; in production a
Kubernetes job, a Docker container, ...). The runs' processes share the state database
(RAG_STATE_URL) and a Chroma server; per-document locks keep two runs off one document.

A run whose process dies (killed, out of memory) is noticed here, marked failed, and its
documents stay stale: the next ingest redoes them. What Dagster's log capture may leave of it (a
`tail -F` that holds our output open) is ended.
"""

from __future__ import annotations

import os
import socket
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import dagster as dg

from .partition_ranges import RangeRun

_TERMINAL = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
JOB_NAME = "ingest_documents"
LOCATION = "rag_assets"
# Runs the CLI starts (in process or fanned out) are tagged with who starts them, so a run whose
# process was killed can be told apart from one that is still going.
HOST_TAG, PID_TAG = "rag/host", "rag/pid"


def process_tags() -> dict[str, str]:
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


@dataclass
class LaunchedRun:
    plan: RangeRun
    run_id: str
    status: dg.DagsterRunStatus | None = None
    error: str = ""


def launch_document_runs(
    instance: dg.DagsterInstance,
    plans: Sequence[RangeRun],
    workers: int,
    tags: dict[str, str],
    run_config: dict | None = None,
    on_done: Callable[[LaunchedRun], None] = lambda _run: None,
    poll_seconds: float = 0.5,
    job_name: str = JOB_NAME,
) -> list[LaunchedRun]:
    """Run every plan as an `ingest_documents` run, at most `workers` at a time; returns them all
    once each has ended (success, failure, or a dead worker marked failed)."""
    from rag_assets.orchestration.internals.workspace import module_workspace

    pending, running, finished = list(plans), [], []
    with module_workspace(instance, "rag_assets", str(_PROJECT_ROOT), LOCATION) as workspace:
        location = workspace.get_code_location(LOCATION)
        (repository,) = location.get_repositories().values()
        remote_job = repository.get_full_job(job_name)
        # one execution plan serves every run: same job, same config; only the partition range differs
        snapshot = location.get_execution_plan(
            remote_job, run_config or {}, step_keys_to_execute=None, known_state=None, instance=instance
        ).execution_plan_snapshot
        # Launched from threads: the default launcher's code server answers a launch only once the
        # new run process has started (seconds of imports), so launches in a row would stagger
        # the runs by that much each.
        launcher = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rag-launch")
        launches: list[Future] = []
        try:
            _follow(instance, workspace, repository, remote_job, snapshot, tags, run_config, pending, running, finished,
                    launches, launcher, workers, poll_seconds, on_done)
        except KeyboardInterrupt:
            # stopped (Ctrl-C, SIGTERM): nothing more is launched, and the runs in flight are
            # terminated as the UI terminates a run (its worker cancels it: CANCELED)
            for launched in running:
                try:
                    instance.run_coordinator.cancel_run(launched.run_id)
                except Exception:  # noqa: BLE001 - its code server took the terminal's Ctrl-C too: the next ingest marks it
                    pass
            launcher.shutdown(wait=False, cancel_futures=True)
            raise
        launcher.shutdown(wait=True)
    # once, for every failed run: those whose dead worker was noticed above, and any other
    failed = [r.run_id for r in finished if r.status == dg.DagsterRunStatus.FAILURE]
    if failed:
        end_orphaned_log_tails(failed)
    return finished


def _follow(instance, workspace, repository, remote_job, snapshot, tags, run_config, pending: list, running: list,
            finished: list, launches: list, launcher: ThreadPoolExecutor, workers: int, poll_seconds: float,
            on_done: Callable[[LaunchedRun], None]) -> None:
    """Launch and follow the runs until every one has ended (launch_document_runs)."""
    while pending or running:
        while pending and len(running) < workers:
            plan = pending.pop(0)
            run = _create_run(instance, repository, remote_job, snapshot, {**tags, **plan.tags}, run_config or {})
            launches.append(launcher.submit(instance.launch_run, run.run_id, workspace))
            running.append(LaunchedRun(plan, run.run_id))
        time.sleep(poll_seconds)
        for launch in [f for f in launches if f.done()]:
            launches.remove(launch)
            launch.result()  # a launch that failed raises here (its run is marked failed by Dagster)
        for launched in list(running):
            run = instance.get_run_by_id(launched.run_id)
            if run.status not in _TERMINAL and _worker_died(instance, run):
                # read again: a worker that ended normally after the first read has written its
                # final status by now, and must not be reported failed
                run = instance.get_run_by_id(launched.run_id)
                if run.status not in _TERMINAL:
                    instance.report_run_failed(
                        run, "its worker process died (killed?); its documents are redone by the next ingest")
                    run = instance.get_run_by_id(launched.run_id)
            if run.status in _TERMINAL:
                launched.status = run.status
                running.remove(launched)
                finished.append(launched)
                on_done(launched)


def _create_run(instance, repository, remote_job, snapshot, tags: dict[str, str], run_config: dict) -> dg.DagsterRun:
    """What `dagster job launch` does: the run (with its planned events) for a ready execution plan."""
    return instance.create_run(
        job_name=remote_job.name,
        run_id=None,
        run_config=run_config,
        resolved_op_selection=remote_job.resolved_op_selection,
        step_keys_to_execute=snapshot.step_keys_to_execute,
        op_selection=None,
        status=None,
        root_run_id=None,
        parent_run_id=None,
        tags={**remote_job.tags, **tags},
        job_snapshot=remote_job.job_snapshot,
        execution_plan_snapshot=snapshot,
        parent_job_snapshot=remote_job.parent_job_snapshot,
        remote_job_origin=remote_job.get_remote_origin(),
        job_code_origin=remote_job.get_python_origin(),
        asset_selection=None,
        asset_check_selection=None,
        asset_graph=repository.asset_graph,
    )


def _worker_died(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """A local run worker (the default launcher) whose process is gone while its run is unfinished.
    Other launchers (Kubernetes, Docker) are watched by Dagster's own run monitoring instead."""
    if run.status != dg.DagsterRunStatus.STARTED or run.tags.get(HOST_TAG) != socket.gethostname():
        return False
    pid = _worker_pid(instance, run.run_id)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    # a killed child stays a zombie until its parent (the code server) reaps it
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def end_orphaned_log_tails(run_ids: Sequence[str]) -> int:
    """End the compute-log `tail -F` processes that dead workers of these runs left behind; how many.

    Dagster mirrors a run's captured stdout and stderr to its worker's own through a `tail -F`
    child each, and starts a watcher process that ends the tail once the worker dies. A worker
    killed after a tail started but before its watcher did leaves that tail running for ever,
    holding the worker's stdout open. That stdout is ours (inherited through the code server), so
    whoever reads `rag ingest --workers N` to its end (a pipe, `| jq`, a test) would wait for ever.
    A tail is known by its command line: `tail -F -c +0 <log path>` with the run id a folder of
    the path (LocalComputeLogManager keeps each run's logs in a folder named by its id)."""
    import psutil

    wanted, ended = set(run_ids), 0
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if proc.info.get("name") != "tail" or cmd[:4] != ["tail", "-F", "-c", "+0"]:
            continue
        if any(wanted.intersection(Path(arg).parts) for arg in cmd[4:]):
            try:
                # SIGKILL: a tail has nothing to clean up, and one started where SIGTERM was ignored ignores it too
                proc.kill()
                ended += 1
            except psutil.Error:
                pass  # gone meanwhile
    return ended


def _worker_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = record.dagster_event.event_specific_data if record.dagster_event else None
        pid = getattr(data, "metadata", {}).get("pid") if data is not None else None
        if pid is not None:
            return int(pid.value)
    return None
