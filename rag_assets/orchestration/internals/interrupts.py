"""How a run's log records say that a step was interrupted (Ctrl-C / SIGTERM inside the step, or
noted between steps and raised as the next one starts): for interrupt_logging's logger."""

from __future__ import annotations

import logging


def interrupted_run_id(record: logging.LogRecord) -> str | None:
    """The run id when this record (as a @dg.logger's logger receives it) is a STEP_FAILURE event
    whose error source is an interrupt (ErrorSource.INTERRUPT); else None. Dagster puts the event
    and the run id on the record under its metadata attribute (dagster._core.log_manager)."""
    from dagster._core.execution.plan.objects import ErrorSource
    from dagster._core.log_manager import get_log_record_metadata, has_log_record_metadata

    if not has_log_record_metadata(record):
        return None
    meta = get_log_record_metadata(record)
    event = meta.get("dagster_event")
    if event is None or not event.is_step_failure or event.step_failure_data is None:
        return None
    return meta.get("run_id") if event.step_failure_data.error_source == ErrorSource.INTERRUPT else None
