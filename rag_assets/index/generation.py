"""The index generation: a token that changes whenever the vector index changes.

Readers (the search snapshot, the query cache, a long-lived RAGPipeline) compare it with the
generation they were built for. Stored in the state database (one small row per collection), so every
process, and with a shared state database every machine, sees the same value; reading it is one
indexed lookup. An ingest sets it when it commits a change to the search snapshot
(rag_assets.retrieval.snapshot_writer), to the generation that snapshot carries.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from rag_assets.index.state_file import UNKNOWN, read_meta

KEY = "index_generation"
EMPTY = "empty"


def _db(where):
    """A StateDB, Settings or their paths group (RAG_STATE_URL honoured) or a state folder (its local SQLite state)."""
    from rag_assets.index.state_db import StateDB, local_state_url

    if isinstance(where, StateDB):
        return where
    if isinstance(where, (str, Path)):
        return StateDB.open(local_state_url(where))
    return StateDB.for_settings(where)


def read_generation(where) -> str:
    return _db(where).get_meta(KEY, EMPTY)


def new_generation() -> str:
    return uuid.uuid4().hex


def bump_generation(where, conn=None) -> str:
    value = new_generation()
    set_generation(where, value, conn)
    return value


def set_generation(where, value: str, conn=None) -> None:
    _db(where).set_meta(KEY, value, conn)


def current_generation(where) -> str:
    """The index generation now, as every reader asks for it: cheap, one indexed lookup, called on every
    query. `where`: the Settings (RAG_STATE_URL honoured), a StateDB, or a local state folder. The local
    SQLite state is read without importing SQLAlchemy (rag_assets.index.state_file)."""
    state_url = getattr(where, "state_url", None)
    folder = where if isinstance(where, (str, Path)) else (getattr(where, "state_dir", None) if not state_url else None)
    if folder is not None:
        value = read_meta(folder, KEY, EMPTY)
        if value is not UNKNOWN:
            return value
    return read_generation(where)
