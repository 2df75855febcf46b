"""A run worker for WarmRunLauncher: warm up first, then execute the one run it is handed.

Warm-up imports Dagster and the code location (rag_assets.orchestration.definitions, which imports
chromadb, onnxruntime, tiktoken) and loads the embedding model into the resource's cache, so the
run's first step starts at once. Then it reads one line from stdin, {"run_id", "instance_ref"},
and executes that run exactly as `dagster api execute_run` would. End of input before a run
(the launching process went away) means exit quietly.

If any of the package's source files changed after the warm-up (someone edited the code while the
spare waited), the run is executed by a fresh `dagster api execute_run` process instead, so a run
never executes code older than its launch.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rag_assets.process_start import imports_without_gc

PACKAGE = Path(__file__).resolve().parents[1]


def _source_mtimes() -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in PACKAGE.rglob("*.py")}


def _lower_priority() -> bool:
    """Warm up at nice 10, only where the priority can be restored afterwards (root)."""
    if os.geteuid() != 0:
        return False
    os.nice(10)
    return True


def _set_priority(nice: int) -> None:
    # niceness is per thread on Linux: the warm-up started thread pools (onnxruntime, grpc), and
    # threads started later inherit the caller's
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except (ProcessLookupError, PermissionError):
            pass


def warm_up() -> None:
    from rag_assets.orchestration.definitions import DEFAULT, RESOURCES, defs

    defs.resolve_all_job_defs()
    RESOURCES["embedder"].get(DEFAULT.corpus.settings())


def execute(run_id: str, instance_ref_json: str) -> int:
    from rag_assets.orchestration.internals.run_execution import execute_run_here

    return execute_run_here(run_id, instance_ref_json)


def execute_cold(run_id: str, instance_ref_json: str) -> int:
    """What the default launcher's code server would run: a fresh `dagster api execute_run`."""
    from rag_assets.orchestration.internals.run_execution import execute_run_cold

    return execute_run_cold(run_id, instance_ref_json)


def main() -> int:
    niced = _lower_priority()
    # what the warm-up builds lives as long as the process: out of the cycle collector's reach, so
    # the run's collections do not walk it again
    with imports_without_gc():
        warm_up()
    warmed_at = _source_mtimes()
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    order = json.loads(line)
    nice = int(order.get("nice", 0))
    if niced or nice:
        _set_priority(nice)
    if _source_mtimes() != warmed_at:
        return execute_cold(order["run_id"], order["instance_ref"])
    return execute(order["run_id"], order["instance_ref"])


if __name__ == "__main__":
    sys.exit(main())
