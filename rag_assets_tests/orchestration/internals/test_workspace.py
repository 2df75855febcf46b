"""The assumptions the CLI's fan-out makes about loading a workspace over one module."""

import inspect

from rag_assets.orchestration.internals import workspace as internals
from rag_assets_tests.support.dagster_assumptions import assumption


def test_module_workspace_builds_a_module_target_and_a_process_context():
    with assumption("workspace.module_workspace"):
        from dagster._core.workspace.context import WorkspaceProcessContext
        from dagster._core.workspace.load_target import ModuleTarget

        target = ModuleTarget(module_name="rag_assets", attribute=None, working_directory=".", location_name="x")
        assert target.location_name == "x"
        params = inspect.signature(WorkspaceProcessContext.__init__).parameters
        assert {"instance", "workspace_load_target", "code_server_log_level"} <= set(params)
        assert callable(WorkspaceProcessContext.create_request_context)
        assert inspect.isgeneratorfunction(inspect.unwrap(internals.module_workspace))
