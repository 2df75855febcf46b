"""Dagster's run launcher interface as rag_assets.orchestration.warm_launcher implements it: the base
classes of a launcher configured in dagster.yaml, and the health answers it gives the daemon."""

from __future__ import annotations

from dagster._core.launcher.base import CheckRunHealthResult, LaunchRunContext, RunLauncher, WorkerStatus
from dagster._serdes import ConfigurableClass, ConfigurableClassData

# the types a launcher's methods are annotated with
__all__ = ["CheckRunHealthResult", "ConfigurableClassData", "LaunchRunContext", "run_launcher_bases", "worker_health"]


def run_launcher_bases() -> tuple[type, type]:
    """(RunLauncher, ConfigurableClass): what a run launcher named by module and class in
    dagster.yaml subclasses (launch_run, terminate, check_run_worker_health; config_type,
    from_config_value, inst_data)."""
    return RunLauncher, ConfigurableClass


def worker_health(status: str, message: str | None = None) -> CheckRunHealthResult:
    """The answer to check_run_worker_health: status "RUNNING", "FAILED" or "UNKNOWN" (WorkerStatus)."""
    return CheckRunHealthResult(WorkerStatus[status], message)
