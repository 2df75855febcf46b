"""Dagster's SQLite run storage as the no-op check reads it without starting Dagster: where runs.db
is for a dagster.yaml, and its `runs` table (read-only SQL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

FINISHED_STATUSES = ("SUCCESS", "FAILURE", "CANCELED")


def sqlite_runs_db(config: dict) -> Path | None:
    """The runs.db a dagster.yaml (parsed) configures: `run_storage:` of class SqliteRunStorage with
    a literal base_dir (this repo's layout) holds it in base_dir, `storage: sqlite: base_dir:` in
    base_dir/history; None for any other storage."""
    run_storage, storage = config.get("run_storage"), config.get("storage")
    base = None
    if isinstance(run_storage, dict) and run_storage.get("class") == "SqliteRunStorage":
        base = (run_storage.get("config") or {}).get("base_dir")
    elif isinstance(storage, dict) and set(storage) == {"sqlite"} and isinstance(storage["sqlite"], dict):
        root = storage["sqlite"].get("base_dir")
        base = f"{root}/history" if isinstance(root, str) else None
    return Path(base) / "runs.db" if isinstance(base, str) else None


def runs_summary(db: Path) -> tuple[int, int] | None:
    """(the largest run row id, the number of runs not finished) of a runs.db, read-only: the `runs`
    table has an integer `id` that grows with every new run and a `status` holding DagsterRunStatus
    names. None when it cannot be read."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            last, unfinished = conn.execute(
                "SELECT coalesce(max(id), 0), coalesce(sum(status NOT IN (?, ?, ?)), 0) FROM runs", FINISHED_STATUSES
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return int(last), int(unfinished)
