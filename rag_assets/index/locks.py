"""Per-document locks: two writers of one document never interleave; writers of different
documents never wait on each other.

With a PostgreSQL state database they are advisory locks in that database (so they hold across
machines); with the local SQLite state, a lock file per document under `<state_dir>/locks/`.
Several documents are always taken in one order (sorted keys), so two holders cannot deadlock.
"""

from __future__ import annotations

import hashlib
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import sqlalchemy as sa
from filelock import FileLock

from rag_assets.index.state_db import StateDB

INGEST_LOCK_NAME = "ingest.lock"


def ingest_lock_file(state_dir: Path) -> FileLock:
    """The state folder's ingest lock: one `rag ingest` plans and launches at a time (a second one
    waits, then finds everything current). One object per process, re-entrant in it."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(str(state_dir / INGEST_LOCK_NAME), is_singleton=True, thread_local=False)


def _key(doc_path: str) -> int:
    """A signed 64-bit key per document (PostgreSQL's advisory-lock key space)."""
    return int.from_bytes(hashlib.sha256(doc_path.encode()).digest()[:8], "big", signed=True)


class DocumentLocks:
    def __init__(self, db: StateDB, state_dir: Path):
        self.db = db
        self.folder = Path(state_dir) / "locks"

    @contextmanager
    def hold(self, doc_paths: Iterable[str]) -> Iterator[None]:
        keys = sorted({_key(p) for p in doc_paths})
        if not keys:
            yield
            return
        if self.db.is_sqlite:
            with ExitStack() as stack:
                for key in keys:
                    path = self.folder / f"{key & 0xFF:02x}" / f"{key & 0xFFFFFFFFFFFFFFFF:016x}.lock"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    stack.enter_context(FileLock(str(path)))
                yield
            return
        # session-level advisory locks on a connection of their own, released when the block ends
        # (also when this process dies: PostgreSQL drops them with the connection)
        with self.db.engine.connect() as conn:
            try:
                for key in keys:
                    conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
                    conn.commit()
                yield
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock_all()"))
                conn.commit()
