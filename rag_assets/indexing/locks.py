"""The ingest lock: one ingest at a time per corpus, a second one waiting (and saying so) rather than
failing, for at most RAG_INGEST_LOCK_TIMEOUT seconds."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from rag_assets.config import ENV_VARS
from rag_assets.errors import RagError
from rag_assets.index.locks import ingest_lock_file

# how long a `rag ingest` waits for another one to finish; unset or negative: as long as it takes
INGEST_LOCK_TIMEOUT_VAR = ENV_VARS["ingest_lock_timeout"]


class IngestBusyError(RagError):
    """Another ingest held the state folder's lock for longer than RAG_INGEST_LOCK_TIMEOUT."""


@contextmanager
def ingest_lock(state_dir: Path, timeout: float = -1):
    """Hold the state folder's ingest lock (waiting at most `timeout` seconds, negative: as long as
    it takes; Settings.ingest_lock_timeout); yields the seconds spent waiting for it.

    A second ingest waits (saying so on stderr) rather than failing: when it gets the lock, the
    documents the first one indexed are current and it has nothing left to do."""
    with holding(ingest_lock_file(state_dir), "another ingest is running", timeout) as waited:
        yield waited


@contextmanager
def holding(lock: FileLock, who: str, timeout: float):
    """Hold `lock`; when another process has it, say so on stderr (`who` holds it) and wait, for at
    most `timeout` seconds (RAG_INGEST_LOCK_TIMEOUT; negative: as long as it takes). Yields the
    seconds spent waiting."""
    waited = 0.0  # taken at once: no wait (an ingest given a FolderLook relies on it)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"rag: {who} ({lock.lock_file}); waiting for it to finish", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise IngestBusyError(
                f"{who}: {lock.lock_file} still held after {timeout:g} s ({INGEST_LOCK_TIMEOUT_VAR}); try again later"
            ) from None
        waited = max(time.perf_counter() - started, 1e-6)
    try:
        yield waited
    finally:
        lock.release()

