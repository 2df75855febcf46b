"""The resources every corpus's assets use, defined once for the project."""

import dagster as dg

from rag_assets.orchestration.resources import project_resources


@dg.definitions
def resources() -> dg.Definitions:
    # One process per run, not per step: steps share the loaded model (rag_assets.orchestration.definitions).
    return dg.Definitions(resources=project_resources(), executor=dg.in_process_executor)
