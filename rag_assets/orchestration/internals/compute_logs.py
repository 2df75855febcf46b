"""Compute-log capture of the CLI's in-process runs: off.

A run captures its process's stdout and stderr into compute-log files (what the UI shows as a run's
stdout/stderr) and mirrors them back to the terminal through a `tail -F` child and a Python watcher
child per stream, started with every run. In `rag ingest` that output is the CLI's own (progress
bars, its one-line errors; every event is in the event log as before), the mirror shows it up to a
second late, and the children are in the terminal's process group: Ctrl-C reached the watchers too,
and each printed a KeyboardInterrupt traceback."""

from __future__ import annotations


def without_compute_log_capture(instance):
    """The instance, its compute-log manager Dagster's no-op one (no capture, no child processes);
    its storages and everything else as they are."""
    from dagster._core.storage.noop_compute_log_manager import NoOpComputeLogManager

    manager = NoOpComputeLogManager()
    manager.register_instance(instance)
    instance._compute_log_manager = manager
    return instance
