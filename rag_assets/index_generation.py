"""The index generation: a token that changes whenever the vector index changes.

Readers (the keyword index, the query cache) compare it with the generation they were built for:
equal means still valid, different means rebuild or drop. Stored as a small file in the state
folder so every process sees the same value.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

_FILE = "index_generation"


def read_generation(state_dir: Path) -> str:
    try:
        return (Path(state_dir) / _FILE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return "empty"


def bump_generation(state_dir: Path) -> str:
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    value = uuid.uuid4().hex
    tmp = state_dir / f".{_FILE}.{os.getpid()}.tmp"
    tmp.write_text(value, encoding="utf-8")
    os.replace(tmp, state_dir / _FILE)
    return value
