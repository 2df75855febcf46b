"""A throwaway PostgreSQL server for tests: a fresh cluster in a temporary folder, on 127.0.0.1 and a
free port, trust authentication, stopped at the end. As root, the cluster runs as `nobody`
(PostgreSQL refuses root). Needs Debian's `postgresql` (initdb/pg_ctl) and a driver (psycopg2, from
dagster-postgres); tests that use it skip with the reason otherwise.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_db_user(args: list[str]) -> list[str]:
    return [RUNUSER, "-u", "nobody", "--", *args] if AS_ROOT else args


@contextmanager
def postgres_server(databases: tuple[str, ...] = ("dagster",)):
    """A throwaway PostgreSQL cluster with these databases; yields its base URL (no database)."""
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
        for name in databases:
            created = run(str(PG_BIN / "createdb") if (PG_BIN / "createdb").exists() else "createdb",
                          "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", name)
            assert created.returncode == 0, created.stderr
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}"
    finally:
        if started:
            run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop", timeout=60)
        shutil.rmtree(root, ignore_errors=True)




def createdb(base_url: str, name: str) -> str:
    """Another database on the same server; its URL."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"{base_url}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return f"{base_url}/{name}"


requires_postgres = [
    pytest.mark.skipif(PG_BIN is None, reason="PostgreSQL server binaries (initdb, pg_ctl) not installed: "
                                              "apt-get install postgresql (.ci/run does it)"),
    pytest.mark.skipif(importlib.util.find_spec("psycopg2") is None,
                       reason="psycopg2 not installed (pip install -e '.[dev]' or '.[postgres]')"),
    pytest.mark.skipif(AS_ROOT and RUNUSER is None, reason="running as root and no runuser to run PostgreSQL as nobody"),
    pytest.mark.postgres,  # after the three skips (test_state_db uses them one by one)
]
