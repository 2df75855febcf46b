"""Embedding cache: (model, content hash) -> vector, in SQLite.

The same text is never embedded twice for the same model, across documents, runs and renames.
SQLite in WAL mode lets two ingest processes read and add entries at once; `INSERT OR IGNORE`
makes a race between them harmless (both computed the same vector).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np


class EmbeddingCache:
    def __init__(self, path: Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
        # Switching to WAL needs an exclusive lock and SQLite does not always wait for it (no busy
        # handler on some paths): two processes opening a new cache at once could get "database is
        # locked". Only switch when needed, and retry briefly.
        _retry_locked(lambda: self._ensure_wal())
        self._db.execute("PRAGMA synchronous=NORMAL")
        _retry_locked(
            lambda: self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " model TEXT NOT NULL, content_hash TEXT NOT NULL, dimension INTEGER NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, content_hash)) WITHOUT ROWID"
            )
        )

    def _ensure_wal(self) -> None:
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        wanted = list(dict.fromkeys(hashes))
        for start in range(0, len(wanted), 500):  # stay under SQLite's bound-parameter limit
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT content_hash, vector FROM embeddings WHERE model = ? AND content_hash IN ({marks})",
                [model, *part],
            )
            for content_hash, blob in rows:
                found[content_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = [(model, h, int(v.shape[0]), v.tobytes()) for h, v in zip(hashes, vectors)]
        with self._db:  # one transaction; IMMEDIATE takes the write lock up front (waits on the busy timeout)
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT OR IGNORE INTO embeddings (model, content_hash, dimension, vector) VALUES (?, ?, ?, ?)", rows
            )

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]

    def close(self) -> None:
        self._db.close()


def _retry_locked(action, attempts: int = 50, pause: float = 0.1):
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(pause)
