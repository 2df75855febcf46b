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
