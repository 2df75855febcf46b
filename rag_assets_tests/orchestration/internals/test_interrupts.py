"""The assumption about how a run's log records say a step was interrupted."""

import logging
import os
import signal
import threading

import dagster as dg

from rag_assets.orchestration.internals import interrupts as internals
from rag_assets_tests.support.dagster_assumptions import assumption

SEEN: list[str | None] = []


class _Record(logging.Handler):
    def emit(self, record):
        SEEN.append(internals.interrupted_run_id(record))


@dg.logger
def recording(_init_context):
    logger = logging.Logger("recording", level=logging.DEBUG)
    logger.addHandler(_Record())
    return logger


@dg.op
def fine() -> int:
    return 1


@dg.op
def interrupted(_x: int) -> None:
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C while the step runs
    threading.Event().wait(30)


@dg.job(logger_defs={"recording": recording})
def stopped_job():
    interrupted(fine())


def test_interrupted_run_id_names_the_run_of_a_step_stopped_by_an_interrupt(tmp_path):
    with assumption("interrupts.interrupted_run_id"):
        SEEN.clear()
        with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
            result = stopped_job.execute_in_process(instance=instance, raise_on_error=False,
                                                    run_config={"loggers": {"recording": {}}})
        assert not result.success
        assert [s for s in SEEN if s is not None] == [result.run_id]  # one record: the interrupted step's failure
        assert len(SEEN) > 5  # every other record (run start, step events, ...) reads None


@dg.op
def first() -> int:
    return 1


@dg.job
def one_step_job():
    first()


def test_interrupts_held_notes_a_signal_and_the_run_raises_it(tmp_path):
    with assumption("interrupts.interrupts_held"):
        before = signal.getsignal(signal.SIGINT)
        with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
            with internals.interrupts_held():
                os.kill(os.getpid(), signal.SIGINT)  # as Dagster creates a run: noted, not raised
                threading.Event().wait(0.2)
                result = one_step_job.execute_in_process(instance=instance, raise_on_error=False)
            run = instance.get_run_by_id(result.run_id)
        assert signal.getsignal(signal.SIGINT) is before
        # the run raised the noted interrupt at its first checkpoint (its resources' start) and ended
        # as an interrupted run, which ended_by_an_interrupt recognises
        assert not result.success and run.status == dg.DagsterRunStatus.FAILURE
        assert internals.ended_by_an_interrupt(run)


def test_ended_by_an_interrupt_reads_the_failure_reason_of_an_unexpected_termination(tmp_path):
    from dagster._core.events import JobFailureData, RunFailureReason

    with assumption("interrupts.ended_by_an_interrupt"):
        with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
            interrupted_run = instance.create_run_for_job(one_step_job)
            other = instance.create_run_for_job(one_step_job)
            instance.report_run_failed(interrupted_run, job_failure_data=JobFailureData(
                error=None, failure_reason=RunFailureReason.UNEXPECTED_TERMINATION))
            instance.report_run_failed(other, job_failure_data=JobFailureData(
                error=None, failure_reason=RunFailureReason.STEP_FAILURE))
            assert internals.ended_by_an_interrupt(instance.get_run_by_id(interrupted_run.run_id))
            assert not internals.ended_by_an_interrupt(instance.get_run_by_id(other.run_id))
