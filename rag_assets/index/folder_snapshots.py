"""The docs folder as a sensor last saw it, kept in the state database; the sensor's cursor names it.

A look at the folder needs every file's size, mtime and hash from the look before (~110 bytes a file:
11 MB of JSON at 100,000 files). Dagster writes a sensor's cursor into its tick table on every tick
(once a second here, skipped ticks kept 7 days), so a cursor holding all that would be written ~86,000
times a day. Instead the cursor is a few bytes — `{"snapshot": <id>, "tick": n}` — and the look
itself is stored here once per change, under a content hash.

Snapshots are immutable: a tick Dagster evaluates again from an older cursor finds the snapshot that
cursor named (the newest KEEP of each owner are kept). The process that stored or read a snapshot
keeps it parsed, so a quiet tick in the long-lived code server neither reads nor parses anything.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import zlib

import sqlalchemy as sa

from rag_assets.index.state_db import StateDB, folder_snapshots

KEEP = 8  # snapshots kept per owner: a cursor this many changes old can still be evaluated again
# a process-wide cache of the last snapshot read per owner (a sensor tick or `rag watch` look reads
# the one it wrote last time); keyed by database, so processes and folders never mix
_CACHE: dict[tuple[str, str], tuple[str, dict]] = {}  # (database, owner) -> (snapshot id, look)
_CACHE_LOCK = threading.Lock()


def save(db: StateDB, owner: str, look: dict) -> str:
    """Store `look` (JSON-serialisable) for `owner`; returns its id. The oldest beyond KEEP go."""
    body = json.dumps(look, separators=(",", ":"), sort_keys=True).encode()
    snapshot_id = hashlib.sha256(body).hexdigest()[:32]
    with db.write() as conn:
        db.insert_ignore(conn, folder_snapshots, [{"owner": owner, "snapshot_id": snapshot_id,
                                                   "body": zlib.compress(body, 1), "created_at": time.time()}],
                         ["owner", "snapshot_id"])
        kept = sa.select(folder_snapshots.c.snapshot_id).where(folder_snapshots.c.owner == owner) \
            .order_by(folder_snapshots.c.created_at.desc()).limit(KEEP)
        conn.execute(folder_snapshots.delete().where(folder_snapshots.c.owner == owner,
                                                     folder_snapshots.c.snapshot_id.not_in(kept.scalar_subquery())))
    _remember(db, owner, snapshot_id, look)
    return snapshot_id


def load(db: StateDB, owner: str, snapshot_id: str) -> dict | None:
    """The look stored as `snapshot_id`, or None when it is not there (pruned, or the state was wiped).
    The caller must not change what it gets: it is shared with later calls."""
    with _CACHE_LOCK:
        cached = _CACHE.get((db.url, owner))
    if cached and cached[0] == snapshot_id:
        return cached[1]
    with db.read() as conn:
        body = conn.execute(sa.select(folder_snapshots.c.body).where(
            folder_snapshots.c.owner == owner, folder_snapshots.c.snapshot_id == snapshot_id)).scalar()
    if body is None:
        return None
    look = json.loads(zlib.decompress(body))
    _remember(db, owner, snapshot_id, look)
    return look


def _remember(db: StateDB, owner: str, snapshot_id: str, look: dict) -> None:
    with _CACHE_LOCK:
        _CACHE[(db.url, owner)] = (snapshot_id, look)
