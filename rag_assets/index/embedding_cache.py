"""Embedding cache: (model, content hash) -> vector, in the state database.

The same text is never embedded twice for the same model, across documents, runs, renames and,
with a shared state database (RAG_STATE_URL), across machines. Inserts ignore a key that is
already there, so two writers racing on one text are harmless (both computed the same vector).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import sqlalchemy as sa

from rag_assets.index.state_db import StateDB, embeddings

log = logging.getLogger(__name__)
_IN_CHUNK = 500
LEGACY_FILE = "embeddings.sqlite"  # the cache's own file before it moved into the state database


class EmbeddingCache:
    def __init__(self, db: StateDB):
        self.db = db

    @classmethod
    def for_settings(cls, paths) -> "EmbeddingCache":
        """The cache in the state database of these paths (rag_assets.config.PathSettings)."""
        cache = cls(StateDB.for_settings(paths))
        if cache.db.is_sqlite:
            cache.import_legacy(Path(paths.state_dir) / LEGACY_FILE)
        return cache

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        wanted = list(dict.fromkeys(hashes))
        t = embeddings.c
        with self.db.read() as conn:
            for start in range(0, len(wanted), _IN_CHUNK):
                part = wanted[start : start + _IN_CHUNK]
                rows = conn.execute(sa.select(t.content_hash, t.vector).where(t.model == model, t.content_hash.in_(part)))
                for content_hash, blob in rows:
                    found[content_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = [
            {"model": model, "content_hash": h, "dimension": int(v.shape[0]), "vector": v.tobytes()}
            for h, v in zip(hashes, vectors)
        ]
        with self.db.write() as conn:
            for start in range(0, len(rows), 1000):
                self.db.insert_ignore(conn, embeddings, rows[start : start + 1000], ["model", "content_hash"])

    def count(self, model: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(embeddings)
        if model is not None:
            query = query.where(embeddings.c.model == model)
        with self.db.read() as conn:
            return int(conn.execute(query).scalar() or 0)

    def import_legacy(self, path: Path) -> int:
        """Move the vectors of the pre-state-database cache file in, once (embeddings are the
        expensive part of an index), then rename that file so this never runs again."""
        if not path.is_file():
            return 0
        try:
            source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            rows = source.execute("SELECT model, content_hash, dimension, vector FROM embeddings").fetchall()
            source.close()
        except sqlite3.Error as exc:
            log.warning("could not import the old embedding cache %s: %s", path, exc)
            return 0
        keys = ("model", "content_hash", "dimension", "vector")
        with self.db.write() as conn:
            for start in range(0, len(rows), 1000):
                part = [dict(zip(keys, r)) for r in rows[start : start + 1000]]
                self.db.insert_ignore(conn, embeddings, part, ["model", "content_hash"])
        try:
            path.rename(path.with_name(path.name + ".imported"))
        except FileNotFoundError:
            pass  # another process imported it at the same time (the inserts above were harmless)
        log.info("imported %d cached embeddings from %s", len(rows), path)
        return len(rows)

    def close(self) -> None:
        """Kept for callers that scope a cache: the engine is shared by the process."""
