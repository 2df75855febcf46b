"""The assumptions the no-op check makes about Dagster's SQLite run storage (runs.db)."""

import uuid

import dagster as dg
import yaml

from rag_assets.orchestration.internals import run_storage as internals
from rag_assets_tests.support.dagster_assumptions import assumption


def _instance(home, config: str) -> dg.DagsterInstance:
    (home / "dagster.yaml").write_text(config + "telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def test_sqlite_runs_db_is_where_dagster_keeps_the_runs(tmp_path):
    with assumption("run_storage.sqlite_runs_db"):
        for name, config in {
            "stock": f"storage:\n  sqlite:\n    base_dir: {tmp_path / 'stock'}\n",
            "repo": ("run_storage:\n  module: dagster._core.storage.runs\n  class: SqliteRunStorage\n"
                     f"  config:\n    base_dir: {tmp_path / 'repo'}\n"),
        }.items():
            home = tmp_path / f"home-{name}"
            home.mkdir()
            with _instance(home, config) as instance:
                instance.add_run(dg.DagsterRun(job_name="j", run_id=str(uuid.uuid4())))
            db = internals.sqlite_runs_db(yaml.safe_load((home / "dagster.yaml").read_text()))
            assert db is not None and db.is_file(), f"{name}: no runs.db at {db}"


def test_runs_summary_counts_runs_and_unfinished_ones(tmp_path):
    with assumption("run_storage.runs_summary"):
        config = f"storage:\n  sqlite:\n    base_dir: {tmp_path / 'storage'}\n"
        with _instance(tmp_path, config) as instance:
            db = internals.sqlite_runs_db(yaml.safe_load((tmp_path / "dagster.yaml").read_text()))
            instance.add_run(dg.DagsterRun(job_name="j", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.SUCCESS))
            assert internals.runs_summary(db) == (1, 0)
            for status in (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.CANCELED):
                instance.add_run(dg.DagsterRun(job_name="j", run_id=str(uuid.uuid4()), status=status))
            assert internals.runs_summary(db) == (4, 2)
        assert internals.runs_summary(tmp_path / "missing.db") is None
