"""Executing a run, as `dagster api execute_run` does, for rag_assets.orchestration.warm_worker: in
this (warmed) process, or in a fresh one."""

from __future__ import annotations

import subprocess
import sys


def execute_run_here(run_id: str, instance_ref_json: str) -> int:
    """Execute the run in this process as `dagster api execute_run` would (Dagster's
    _execute_run_command_body, with its interrupt handling); the exit code (0 when the run ended,
    whatever its outcome)."""
    with open_instance(instance_ref_json) as instance:
        return execute_run_on(run_id, instance)


def open_instance(instance_ref_json: str):
    """The instance of a serialised ref, opened (a context manager: closes its storages): what a
    warm worker opens before its run is handed to it."""
    from dagster._core.instance import DagsterInstance, InstanceRef
    from dagster._serdes import deserialize_value

    return DagsterInstance.from_ref(deserialize_value(instance_ref_json, InstanceRef))


def execute_run_on(run_id: str, instance) -> int:
    """execute_run_here on an instance already open."""
    from dagster._cli.api import _execute_run_command_body
    from dagster._utils.interrupts import capture_interrupts

    with capture_interrupts():
        return _execute_run_command_body(run_id, instance, lambda _event: None, set_exit_code_on_failure=False)


def execute_run_args(run_id: str, instance_ref_json: str) -> str:
    """The serialised ExecuteRunArgs `dagster api execute_run` takes for the run (its code origin
    read from the instance)."""
    from dagster._core.instance import DagsterInstance, InstanceRef
    from dagster._grpc.types import ExecuteRunArgs
    from dagster._serdes import deserialize_value, serialize_value

    ref = deserialize_value(instance_ref_json, InstanceRef)
    with DagsterInstance.from_ref(ref) as instance:
        run = instance.get_run_by_id(run_id)
        origin = run.job_code_origin if run else None
    return serialize_value(ExecuteRunArgs(job_origin=origin, run_id=run_id, instance_ref=ref))


def execute_run_cold(run_id: str, instance_ref_json: str) -> int:
    """What the default launcher's code server would run: a fresh `dagster api execute_run`."""
    return subprocess.call([sys.executable, "-m", "dagster", "api", "execute_run",
                            execute_run_args(run_id, instance_ref_json)])
