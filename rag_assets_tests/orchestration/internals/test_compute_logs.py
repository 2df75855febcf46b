"""The assumption about switching off compute-log capture on an instance."""

import dagster as dg
import psutil

from rag_assets.orchestration.internals import compute_logs as internals
from rag_assets_tests.support.dagster_assumptions import assumption

CHILDREN: list[list[str]] = []


@dg.op
def look_at_children() -> None:
    CHILDREN.append([" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)])


@dg.job
def one_step():
    look_at_children()


def test_without_compute_log_capture_runs_start_no_child_process(tmp_path):
    with assumption("compute_logs.without_compute_log_capture"):
        CHILDREN.clear()
        with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
            assert one_step.execute_in_process(instance=instance).success
            assert any("tail" in c for c in CHILDREN[-1]), CHILDREN  # the stock capture: tail -F per stream
            internals.without_compute_log_capture(instance)
            assert one_step.execute_in_process(instance=instance).success
        assert CHILDREN[-1] == []
