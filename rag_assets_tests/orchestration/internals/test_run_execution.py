"""The assumptions the warm worker makes about executing a run as `dagster api execute_run` does."""

import dagster as dg
import pytest
from click.testing import CliRunner

from rag_assets.orchestration.internals import run_execution as internals
from rag_assets_tests.support.dagster_assumptions import assumption


@dg.op
def _noop() -> None:
    pass


@dg.job
def tiny_job() -> None:
    _noop()


@pytest.fixture
def planned_run(tmp_path):
    """A run of tiny_job created as a launcher finds it (code origin set), not started; with the
    instance and its serialised ref."""
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        origin = dg.reconstructable(tiny_job).get_python_origin()
        run = instance.create_run_for_job(job_def=tiny_job, job_code_origin=origin)
        yield instance, run.run_id, dg.serialize_value(instance.get_ref())


@pytest.mark.system
def test_execute_run_here_runs_a_planned_run_to_success(planned_run):
    instance, run_id, ref = planned_run
    with assumption("run_execution.execute_run_here"):
        assert internals.execute_run_here(run_id, ref) == 0
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS


def test_execute_run_args_name_the_run_its_origin_and_the_instance(planned_run):
    instance, run_id, ref = planned_run
    with assumption("run_execution.execute_run_args"):
        args = dg.deserialize_value(internals.execute_run_args(run_id, ref))
        assert type(args).__name__ == "ExecuteRunArgs" and args.run_id == run_id
        assert args.instance_ref == instance.get_ref()
        assert args.job_origin == instance.get_run_by_id(run_id).job_code_origin


def test_execute_run_cold_runs_dagster_api_execute_run_with_the_args_as_argument():
    with assumption("run_execution.execute_run_cold"):
        from dagster._cli.api import api_cli

        command = api_cli.commands["execute_run"]
        assert command.params[0].name == "input_json" and command.params[0].param_type_name == "argument"
        assert CliRunner().invoke(api_cli, ["execute_run", "--help"]).exit_code == 0
