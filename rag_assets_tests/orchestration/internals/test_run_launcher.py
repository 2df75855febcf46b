"""The assumptions the warm run launcher makes about Dagster's run launcher interface."""

from rag_assets.orchestration.internals import run_launcher as internals
from rag_assets.orchestration.warm_launcher import WarmRunLauncher
from rag_assets_tests.support.dagster_assumptions import assumption


def test_run_launcher_bases_ask_for_what_the_warm_launcher_defines():
    with assumption("run_launcher.run_launcher_bases"):
        launcher, configurable = internals.run_launcher_bases()
        assert issubclass(WarmRunLauncher, launcher) and issubclass(WarmRunLauncher, configurable)
        assert launcher.__abstractmethods__ == {"launch_run", "terminate"}
        assert configurable.__abstractmethods__ == {"inst_data", "config_type", "from_config_value"}
        assert not WarmRunLauncher.__abstractmethods__
        for hook in ("supports_check_run_worker_health", "check_run_worker_health", "dispose", "join"):
            assert hasattr(launcher, hook), f"RunLauncher.{hook} is gone"


def test_worker_health_answers_with_each_status():
    with assumption("run_launcher.worker_health"):
        for status in ("RUNNING", "FAILED", "UNKNOWN"):
            result = internals.worker_health(status, "why")
            assert result.status.name == status and result.msg == "why"
