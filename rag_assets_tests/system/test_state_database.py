"""A state database that cannot be written, or is damaged: queries keep working on the first, and the
second is named with its fix in one line (a real index, the real CLI, a real read-only mount).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from rag_assets.config import Settings
from rag_assets.errors import StateDatabaseError
from rag_assets.index.state_db import STATE_FILE, StateDB
from rag_assets.retrieval.retriever import Retriever
from rag_assets_tests.support.index_builder import build_index

QUESTION = "What HTTP status comes back when I exceed the requests per minute?"


def rag(*args, env=None, codes=(0,)) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=300)
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture
def indexed(rag_env, dagster_home):
    build_index(rag_env / "docs", Settings.from_env())
    return rag_env


def checkpoint(state_dir: Path) -> None:
    """Fold the WAL into the file and drop it, as after the last writer closed."""
    with sqlite3.connect(state_dir / STATE_FILE) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        (state_dir / f"{STATE_FILE}{suffix}").unlink(missing_ok=True)


@contextmanager
def read_only_mount(source: Path, target: Path):
    target.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    if subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode:
        pytest.skip("mount --bind is not permitted here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], check=True, capture_output=True)
        yield target
    finally:
        # lazily: a reader in this process may still hold the state database open
        subprocess.run(["umount", "--lazy", str(target)], check=True)


@pytest.mark.system
def test_a_query_reads_a_state_folder_it_cannot_write_and_an_ingest_says_why_it_cannot(indexed):
    checkpoint(indexed / "state")  # the hardest case: no -shm file, and SQLite may not create one
    with read_only_mount(indexed / "state", indexed / "state_ro") as state_ro:
        env = {**os.environ, "RAG_STATE_DIR": str(state_ro)}
        for mode in ("hybrid", "vector", "keyword"):
            out = rag("query", QUESTION, "--top-k", "2", "--mode", mode, env=env).stdout
            assert "rate-limits.md" in out, (mode, out)
        failed = rag("ingest", env=env, codes=(1,))
        assert failed.stderr.count("\n") == 1 and "read-only file system" in failed.stderr, failed.stderr
        assert str(state_ro) in failed.stderr and "unexpected" not in failed.stderr


@pytest.mark.system
def test_a_reader_on_a_read_only_mount_builds_a_missing_search_snapshot_for_itself(rag_env, dagster_home):
    build_index(rag_env / "docs", Settings.from_env(), snapshot=False)  # an index an earlier version wrote
    checkpoint(rag_env / "state")
    with read_only_mount(rag_env / "state", rag_env / "state_ro") as state_ro:
        env = {**os.environ, "RAG_STATE_DIR": str(state_ro)}
        proc = rag("query", QUESTION, "--top-k", "2", env=env)
        assert "rate-limits.md" in proc.stdout
        lines = proc.stderr.splitlines()
        assert len(lines) == 2 and "cannot be written" in lines[0] and "for this process only" in lines[0], lines
        assert "building it from the store once" in lines[1], lines
        # a long-lived reader (in process) builds its own once and keeps its view while nothing changes
        reader = Retriever.from_settings(Settings.from_env(env)).snapshot
        view = reader.view()
        assert len(view) and reader.view() is reader.view() is view and (reader.loads, reader.rebuilds) == (1, 1)
        assert not list((state_ro / "keyword").glob("*/seg-*"))  # nothing was written there


def test_opening_the_state_database_never_writes(indexed):
    settings = Settings.from_env()
    checkpoint(settings.state_dir)
    path = settings.state_dir / STATE_FILE
    db = StateDB(f"sqlite:///file:{path}?mode=ro&uri=true")  # SQLite itself refuses every write
    assert db.get_meta("schema_version") == "1"
    with pytest.raises(StateDatabaseError, match="is read-only") as caught:
        db.set_meta("probe", "1")
    assert str(path) in str(caught.value)
    db.dispose()


@pytest.mark.system
def test_a_damaged_state_database_is_named_with_its_fix_and_the_fix_works(indexed):
    state = indexed / "state"
    checkpoint(state)
    path = state / STATE_FILE
    with open(path, "r+b") as f:  # scribble over every other page after the first
        size = path.stat().st_size
        for offset in range(4096, size, 8192):
            f.seek(offset)
            f.write(os.urandom(512))

    failed = rag("query", QUESTION, codes=(1,))
    line = failed.stderr.strip()
    assert "\n" not in line and "[SQL:" not in line, failed.stderr
    assert str(path) in line and "damaged" in line and "rag ingest" in line, line

    # the advice, as written: move it aside and ingest; the vector index was kept
    shutil.move(path, f"{path}.damaged")
    rag("ingest")
    assert "rate-limits.md" in rag("query", QUESTION, "--top-k", "2").stdout
