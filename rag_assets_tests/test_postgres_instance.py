"""A Dagster instance on a real PostgreSQL: `rag ingest` on the tiny corpus records its runs there.

Needs Debian's `postgresql` (initdb / pg_ctl, on PATH or under /usr/lib/postgresql/*/bin) and the
`dagster-postgres` package; skips with the reason otherwise. The server is private to the test: a
fresh cluster in a temporary folder, listening on 127.0.0.1 on a free port, trust authentication,
stopped at the end. As root, the cluster is created and run as `nobody` (PostgreSQL refuses root).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .conftest import instance_yaml, subprocess_env, write_corpus

REPO = Path(__file__).resolve().parents[1]


def _pg_bin() -> Path | None:
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(f"{candidate}/initdb", os.X_OK) and os.access(f"{candidate}/pg_ctl", os.X_OK):
            return Path(candidate)
    return None


PG_BIN = _pg_bin()
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
RUNUSER = shutil.which("runuser")

pytestmark = [
    pytest.mark.skipif(PG_BIN is None, reason="PostgreSQL server binaries (initdb, pg_ctl) not installed: "
                                              "apt-get install postgresql (.ci/run does it)"),
    pytest.mark.skipif(importlib.util.find_spec("dagster_postgres") is None,
                       reason="dagster-postgres not installed (pip install -e '.[dev]')"),
    pytest.mark.skipif(AS_ROOT and RUNUSER is None, reason="running as root and no runuser to run PostgreSQL as nobody"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_db_user(args: list[str]) -> list[str]:
    return [RUNUSER, "-u", "nobody", "--", *args] if AS_ROOT else args


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL cluster; yields its URL (database `dagster`)."""
    # not under pytest's tmp_path: as root that is mode 700, and the server runs as nobody
    root = Path(tempfile.mkdtemp(prefix="rag-pg-"))
    data = root / "data"
    if AS_ROOT:
        shutil.chown(root, "nobody")
        root.chmod(0o700)
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(_as_db_user(list(args)), capture_output=True, text=True, timeout=timeout, env=env, cwd=root)

    started = False
    try:
        init = run(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                   "--no-sync")
        assert init.returncode == 0, init.stdout + init.stderr
        opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
        start = run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "server.log"),
                    "-w", "-t", "60", "start", timeout=90)
        started = start.returncode == 0
        assert started, start.stdout + start.stderr + (root / "server.log").read_text(errors="replace")
        created = run(str(PG_BIN / "createdb") if (PG_BIN / "createdb").exists() else "createdb",
                      "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "dagster")
        assert created.returncode == 0, created.stderr
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/dagster"
    finally:
        if started:
            run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop", timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def test_rag_ingest_records_its_runs_in_postgres(postgres, tmp_path):
    import sqlalchemy as sa

    write_corpus(tmp_path / "docs")
    home = tmp_path / "dagster_home"
    home.mkdir()
    # the same instance config as docs/postgres-dagster.yaml, with this server's URL
    (home / "dagster.yaml").write_text(instance_yaml(tmp_path, f"  postgres:\n    postgres_url: {postgres}"))
    env = subprocess_env(tmp_path, DAGSTER_HOME=str(home))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["documents_discovered"] == 3 and summary["documents_processed"] == 3
    assert summary["documents_failed"] == 0 and summary["chunks_written"] > 0
    assert len(summary["run_ids"]) == 2  # the catalog, then one run over every document
    print(f"rag ingest on PostgreSQL: {time.monotonic() - started:.1f} s")

    # the runs, their events and the dynamic partitions live in PostgreSQL, not in SQLite files
    engine = sa.create_engine(postgres)
    try:
        with engine.connect() as conn:
            runs = dict(conn.execute(sa.text("SELECT run_id, status FROM runs")).all())
            events = conn.execute(sa.text("SELECT count(*) FROM event_logs WHERE run_id = :r"),
                                  {"r": summary["run_ids"][-1]}).scalar_one()
            partitions = sorted(conn.execute(sa.text(
                "SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'documents'")).scalars())
    finally:
        engine.dispose()
    assert {runs[r] for r in summary["run_ids"]} == {"SUCCESS"}, runs
    assert events > 10
    assert partitions == ["guide/evaluation.md", "guide/streaming.md", "rate-limits.md"]
    assert not list(tmp_path.glob("dagster/**/*.db")), "SQLite storage was used"

    # a second ingest finds nothing to do: the instance's memory is the database
    again = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["documents_unchanged"] == 3
