"""Embedding cache: (model, content hash) -> vector, in SQLite.

The same text is never embedded twice for the same model, across documents, runs and renames.
SQLite in WAL mode lets two ingest processes read and add entries at once; `INSERT OR IGNORE`
makes a race between them harmless (both computed the same vector).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np


class EmbeddingCache:
    def __init__(self, path: Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings ("
            " model TEXT NOT NULL, content_hash TEXT NOT NULL, dimension INTEGER NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (model, content_hash)) WITHOUT ROWID"
        )

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
        with self._db:  # one transaction
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR IGNORE INTO embeddings (model, content_hash, dimension, vector) VALUES (?, ?, ?, ?)", rows
            )

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]

    def close(self) -> None:
        self._db.close()
