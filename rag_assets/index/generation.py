"""The index generation: a token that changes whenever the vector index changes.

Readers (the keyword index, the query cache, a long-lived RAGPipeline) compare it with the
generation they were built for: equal means still valid, different means rebuild or reload.
Stored in the state database (one small row per collection), so every process, and with a shared
state database every machine, sees the same value; reading it is one indexed lookup.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from rag_assets.index.state_db import StateDB, local_state_url

_KEY = "index_generation"
EMPTY = "empty"


def _db(where) -> StateDB:
    """A StateDB, Settings (RAG_STATE_URL honoured) or a state folder (its local SQLite state)."""
    if isinstance(where, StateDB):
        return where
    if isinstance(where, (str, Path)):
        return StateDB.open(local_state_url(where))
    return StateDB.for_settings(where)


def read_generation(where) -> str:
    return _db(where).get_meta(_KEY, EMPTY)


def bump_generation(where, conn=None) -> str:
    value = uuid.uuid4().hex
    _db(where).set_meta(_KEY, value, conn)
    return value


def current_generation(where) -> str:
    """The index generation now, as every reader asks for it (the keyword index, the query cache, a
    Retriever's Chroma client): cheap, one indexed lookup, called on every query. `where`: the
    Settings (RAG_STATE_URL honoured), a StateDB, or a local state folder."""
    return read_generation(where)
