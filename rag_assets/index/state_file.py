"""The local state database's file, and the one read a query makes of it without SQLAlchemy.

Importing SQLAlchemy costs a query process ~0.4 s (more under load), and a query needs one value of
the state database: the index generation. So the local SQLite file is read here through the standard
library, read-only; anything unusual (no such table yet, a file it cannot open that way) says "don't
know" and the caller asks rag_assets.index.state_db instead.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

STATE_FILE = "state.sqlite"
UNKNOWN = object()  # read_meta could not read the file without SQLAlchemy


def read_meta(state_dir: Path | str, key: str, default: str | None = None):
    """The state_meta value of `key` in the local state file (`default` when the file or the key is
    not there); ``UNKNOWN`` when the file cannot be read this way."""
    path = Path(state_dir) / STATE_FILE
    if not path.is_file():
        return default
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM state_meta WHERE key = ?", (key,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return UNKNOWN
    return row[0] if row else default

