"""The Dagster instance the CLI's and the Python API's runs land on, and its creation lock.

The instance is the one at DAGSTER_HOME (by default the repository's own dagster.yaml, SQLite under
data/), so a run started by `rag ingest` or `RAGPipeline.ingest` shows up in the UI like one launched
there. Creating a fresh SQLite instance is serialised across processes: two processes initialising a
fresh DAGSTER_HOME at once stamp its runs.db with two alembic heads, and every later command fails.
The lock is a flock on the DAGSTER_HOME folder itself: it lives where the instance lives, leaves no
file anywhere (a lock file in /tmp per home piled up, one per test's instance), and a read-only home
(a mounted dagster.yaml) locks as well.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from filelock import FileLock

from .internals.compute_logs import without_compute_log_capture
from .noop_check import dagster_home


def get_instance() -> dg.DagsterInstance:
    """The instance at DAGSTER_HOME; by default the repo's own dagster.yaml (SQLite under data/). Its
    in-process runs (this process's) capture no compute logs: what they print is the CLI's own, and
    the capture's child processes took the terminal's Ctrl-C too (internals.compute_logs)."""
    # Opening a fresh SQLite instance creates and alembic-stamps its databases: two processes doing
    # it at once leave runs.db with two version heads ("more than one head present") for good.
    with creation_lock(dagster_home()):
        return without_compute_log_capture(dg.DagsterInstance.get())


@contextmanager
def creation_lock(home: Path) -> Iterator[None]:
    """Held by one process at a time (the others wait): an exclusive flock on the folder `home`,
    released when its descriptor closes (or the process dies). No folder: nothing to lock, and
    Dagster's own error names DAGSTER_HOME. A filesystem without flock on folders: a lock file in
    the temporary folder, named by the home's path, as before."""
    try:
        fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # e.g. NFS, whose emulated flock wants a descriptor open for writing
            home_key = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
            with FileLock(str(Path(tempfile.gettempdir()) / f"rag-dagster-instance-{home_key}.lock")):
                yield
            return
        yield
    finally:
        os.close(fd)  # releases the flock

