"""A Dagster instance on a real PostgreSQL: `rag ingest` on the tiny corpus records its runs there.

Needs Debian's `postgresql` and the `dagster-postgres` package; skips with the reason otherwise
(the server itself: rag_assets_tests/support/postgres_server.py).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.dagster_instance import POSTGRES_INSTANCE, instance_yaml
from rag_assets_tests.support.environment import subprocess_env
from rag_assets_tests.support.postgres_server import postgres_server, requires_postgres

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.system,  # `rag ingest` as a subprocess
    *requires_postgres,
    pytest.mark.skipif(importlib.util.find_spec("dagster_postgres") is None,
                       reason="dagster-postgres not installed (pip install -e '.[dev]')"),
]


@pytest.fixture
def postgres():
    with postgres_server() as base:
        yield f"{base}/dagster"


def test_rag_ingest_records_its_runs_in_postgres(postgres, tmp_path):
    import sqlalchemy as sa

    write_corpus(tmp_path / "docs")
    home = tmp_path / "dagster_home"
    home.mkdir()
    # docs/postgres-dagster.yaml, with this server's URL
    (home / "dagster.yaml").write_text(instance_yaml(tmp_path, POSTGRES_INSTANCE, storage={"postgres": {"postgres_url": postgres}}))
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
