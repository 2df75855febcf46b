"""A workspace over one Python module's code location, for launching runs from a process that is
not the webserver or the daemon (rag_assets.orchestration.fanout)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def module_workspace(instance, module_name: str, working_directory: str, location_name: str) -> Iterator:
    """A workspace request context whose code location `location_name` loads `module_name` (as
    `dagster dev -m module_name` would), served by a code server this process starts and stops."""
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import ModuleTarget

    target = ModuleTarget(module_name=module_name, attribute=None, working_directory=working_directory,
                          location_name=location_name)
    with WorkspaceProcessContext(instance, target, code_server_log_level="WARNING") as process_context:
        yield process_context.create_request_context()
