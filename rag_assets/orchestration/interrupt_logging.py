"""`rag_interrupt`: the logger that ends an interrupted in-process run CANCELED, not FAILURE.

Dagster ends a run whose step was interrupted as CANCELED when the run's status is CANCELING by
then (a termination was asked for), else as FAILURE ("interrupted unexpectedly"). A Ctrl-C or
SIGTERM to `rag ingest` is the user asking for exactly that, so this logger, which sees the run's
events as they happen in the run's own thread, marks the run CANCELING when its step fails by an
interrupt: after the step stopped, before Dagster decides how the run ends. The run then ends
CANCELED, with this message, and its finished steps' work stays (stopping.py says why the signal
reaches the step at all).

Only the CLI's and RAGPipeline.ingest's in-process runs configure it (orchestration.execution); a run launched from
the UI or the daemon is cancelled by Dagster's own termination (status first, then the signal).
"""

from __future__ import annotations

import logging

import dagster as dg

from . import stopping
from .internals.interrupts import ended_by_an_interrupt, interrupted_run_id

LOGGER_NAME = "rag_interrupt"
MESSAGE = ("stopped by Ctrl-C or SIGTERM: the runs before this one are kept; this run's finished stages are "
           "kept and its documents are not indexed yet; the next `rag ingest` continues")


class _CancelInterruptedRun(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        run_id = interrupted_run_id(record)
        watch = stopping.active()
        if run_id is None or watch is None or watch.instance is None:
            return
        run = watch.instance.get_run_by_id(run_id)
        if run is not None and run.status in (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING):
            watch.instance.report_run_canceling(run, message=MESSAGE)


@dg.logger(description="Marks an in-process run canceling when Ctrl-C or SIGTERM interrupted it (rag ingest)")
def rag_interrupt_logger(_init_context) -> logging.Logger:
    logger = logging.Logger(LOGGER_NAME, level=logging.DEBUG)
    logger.addHandler(_CancelInterruptedRun())
    return logger


def cancel_if_stopped(instance: dg.DagsterInstance, run_id: str) -> None:
    """After an in-process run of a stopped ingest: a run Dagster ended FAILURE for an interrupt that
    reached it outside any step (no step failure for this logger to see: Dagster's generators can
    leave a step's raising handler installed while the executor handles the step's events) is marked
    CANCELED with MESSAGE, as its interrupted step would have made it. Only when the ingest was told
    to stop: any other FAILURE stays one."""
    watch = stopping.active()
    if watch is None or not watch.requested:
        return
    run = instance.get_run_by_id(run_id)
    if run is not None and run.status == dg.DagsterRunStatus.FAILURE and ended_by_an_interrupt(run):
        instance.report_run_canceled(run, message=MESSAGE)


def interrupt_logging_config() -> dict:
    """Run config that switches the logger on (beside the console logger's)."""
    return {LOGGER_NAME: {}}
