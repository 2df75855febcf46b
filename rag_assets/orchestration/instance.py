"""The Dagster instance the CLI's and the Python API's runs land on, and its creation lock.

The instance is the one at DAGSTER_HOME (by default the repository's own dagster.yaml, SQLite under
data/), so a run started by `rag ingest` or `RAGPipeline.ingest` shows up in the UI like one launched
there. Creating a fresh SQLite instance is serialised across processes: two processes initialising a
fresh DAGSTER_HOME at once stamp its runs.db with two alembic heads, and every later command fails.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import dagster as dg
from filelock import FileLock

from .internals.compute_logs import without_compute_log_capture
from .noop_check import dagster_home


def get_instance() -> dg.DagsterInstance:
    """The instance at DAGSTER_HOME; by default the repo's own dagster.yaml (SQLite under data/). Its
    in-process runs (this process's) capture no compute logs: what they print is the CLI's own, and
    the capture's child processes took the terminal's Ctrl-C too (internals.compute_logs)."""
    home = dagster_home()
    # Opening a fresh SQLite instance creates and alembic-stamps its databases: two processes doing
    # it at once leave runs.db with two version heads ("more than one head present") for good.
    home_key = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    with FileLock(str(Path(tempfile.gettempdir()) / f"rag-dagster-instance-{home_key}.lock")):
        return without_compute_log_capture(dg.DagsterInstance.get())

