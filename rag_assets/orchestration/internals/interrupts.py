"""How a run's log records say that a step was interrupted (Ctrl-C / SIGTERM inside the step, or
noted between steps and raised as the next one starts): for interrupt_logging's logger; how a run
says Dagster ended it for an interrupt outside any step; and Dagster's interrupt capture, held
around the CLI's in-process runs."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator


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


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Dagster's own `capture_interrupts` (dagster._utils.interrupts): while held, SIGINT (and SIGTERM,
    mapped onto it) is only noted, and the next step of a run raises it as it starts (a step failure
    with an interrupt, which ends the run CANCELED: interrupt_logging). Held around a whole in-process
    run, a Ctrl-C landing while Dagster creates or winds up the run can no longer raise in the middle of
    its bookkeeping (a KeyboardInterrupt inside a SQLite write left the run STARTED and the database
    locked for the rest of the process). The handler that was installed is put back afterwards."""
    from dagster._utils.interrupts import capture_interrupts

    with capture_interrupts():
        yield


def ended_by_an_interrupt(run) -> bool:
    """A run Dagster ended FAILURE because an interrupt reached its executor outside a step (between
    the events of a suspended step, say): its RUN_FAILURE's reason, kept as a run tag, is
    UNEXPECTED_TERMINATION ("Execution was interrupted unexpectedly")."""
    from dagster._core.events import RunFailureReason
    from dagster._core.storage.tags import RUN_FAILURE_REASON_TAG

    return run.tags.get(RUN_FAILURE_REASON_TAG) == RunFailureReason.UNEXPECTED_TERMINATION.value
