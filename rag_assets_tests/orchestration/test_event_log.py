"""The batching event-log storage records exactly what Dagster's stock SQLite storage records."""

import sqlite3

import dagster as dg
import pytest

from rag_assets.orchestration import event_log
from rag_assets.orchestration.partition_ranges import range_tags
from rag_assets_tests.support.dagster_instance import instance_yaml

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")

parts = dg.DynamicPartitionsDefinition(name="pages")
_P = dict(partitions_def=parts, backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=100))


@dg.asset(**_P)
def first(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"pages": len(context.partition_keys)})


@dg.asset(deps=[first], check_specs=[dg.AssetCheckSpec("complete", asset="second")], **_P)
def second(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"pages": len(context.partition_keys)},
                                check_results=[dg.AssetCheckResult(check_name="complete", passed=True)])


def _run(home, storage: dict | None, monkeypatch) -> dict:
    """Two runs on an instance at home: the repo's (batching) storage, or the given `storage:` block."""
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home, storage=storage))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        keys = [f"p{i:03d}" for i in range(40)]
        instance.add_dynamic_partitions("pages", keys)
        job = dg.Definitions(assets=[first, second]).resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance, tags=range_tags(keys[0], keys[29])).success
        assert job.execute_in_process(instance=instance, partition_key="p035").success
        out = {}
        for key in (first.key, second.key):
            events = instance.fetch_materializations(key, limit=1000).records
            out[key.to_user_string()] = {
                "materialized": sorted(instance.get_materialized_partitions(key)),
                "events": sorted((e.partition_key, e.asset_materialization.metadata["pages"].value) for e in events),
                "planned": len(instance.get_event_records(dg.EventRecordsFilter(
                    dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED, asset_key=key))),
                "latest_run": instance.get_latest_materialization_event(key).run_id is not None,
            }
        out["checks"] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(second.key, "complete"), limit=10).__len__()
        return out


def test_batched_writes_record_what_the_stock_storage_records(tmp_path, monkeypatch):
    batches = []
    original = event_log.BatchingSqliteEventLogStorage.store_event_batch

    def counting(self, events):
        batches.append(len(events))
        return original(self, events)

    monkeypatch.setattr(event_log.BatchingSqliteEventLogStorage, "store_event_batch", counting)
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    stock = _run(tmp_path / "stock", {"sqlite": {"base_dir": f"{tmp_path}/stock/storage"}}, monkeypatch)
    batched = _run(tmp_path / "batched", None, monkeypatch)
    assert batched == stock
    assert stock["first"]["materialized"] == [f"p{i:03d}" for i in range(30)] + ["p035"]
    assert max(batches) >= 30, f"the range run's events were not batched: {batches}"


def _shards(runs_dir) -> list[tuple]:
    """(tables and indexes, alembic revision, journal mode) of each run's database."""
    out = []
    for path in sorted(p for p in runs_dir.glob("*.db") if p.name != "index.db"):
        with sqlite3.connect(path) as conn:
            out.append((
                sorted(r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")),
                conn.execute("SELECT version_num FROM alembic_version").fetchall(),
                conn.execute("PRAGMA journal_mode").fetchone()[0],
            ))
        conn.close()
    return out


def test_a_new_run_database_is_the_stock_one(tmp_path, monkeypatch):
    """Copied from an empty database made once by the stock code: same schema, stamp and WAL mode,
    without the stock per-run load of every alembic migration script."""
    _run(tmp_path / "stock", {"sqlite": {"base_dir": f"{tmp_path}/stock/storage"}}, monkeypatch)
    _run(tmp_path / "batched", None, monkeypatch)
    stock, batched = _shards(tmp_path / "stock/storage/history/runs"), _shards(tmp_path / "batched/storage/history/runs")
    assert len(stock) == len(batched) == 2
    assert batched == stock
    assert stock[0][1] and stock[0][2] == "wal"
    templates = list((tmp_path / "batched/storage/history/runs").glob(".run-shard-template-*.sqlite"))
    assert [t.name for t in templates] == [f".run-shard-template-{event_log.DAGSTER_VERSION}.sqlite"]
    assert not list((tmp_path / "batched/storage/history/runs").glob(".rag-shard-*"))  # no scratch copy left


def test_dynamic_partition_keys_are_read_again_only_after_a_change(tmp_path, monkeypatch):
    """Dagster reads every key of a definition many times a run; the storage keeps them until any
    writer changes them. Two storages on the same files stand for two processes."""
    base = str(tmp_path / "runs")
    mine, other = event_log.BatchingSqliteEventLogStorage(base), event_log.BatchingSqliteEventLogStorage(base)
    reads = []
    stock_read = event_log.SqliteEventLogStorage.get_dynamic_partitions

    def counted(self, name):
        reads.append(name)
        return stock_read(self, name)

    monkeypatch.setattr(event_log.SqliteEventLogStorage, "get_dynamic_partitions", counted)
    assert mine.get_dynamic_partitions("pages") == []
    other.add_dynamic_partitions("pages", ["a.md", "b.md", "c.md"])
    assert mine.get_dynamic_partitions("pages") == ["a.md", "b.md", "c.md"]
    reads.clear()
    for _ in range(5):
        assert mine.get_dynamic_partitions("pages") == ["a.md", "b.md", "c.md"]
    assert reads == [], "unchanged keys were read again"

    other.delete_dynamic_partition("pages", "b.md")  # a deletion alone
    assert mine.get_dynamic_partitions("pages") == ["a.md", "c.md"]
    # the newest key renamed: SQLite gives the new row the deleted row's id (count and largest id unchanged)
    other.delete_dynamic_partition("pages", "c.md")
    other.add_dynamic_partitions("pages", ["d.md"])
    assert mine.get_dynamic_partitions("pages") == ["a.md", "d.md"]
    other.add_dynamic_partitions("docs", ["x.md"])  # another definition: at most one read more
    assert mine.get_dynamic_partitions("pages") == ["a.md", "d.md"]
    reads.clear()
    assert mine.get_dynamic_partitions("pages") == ["a.md", "d.md"] and reads == []
    mine.get_dynamic_partitions("pages").append("not kept")  # callers get a copy
    assert mine.get_dynamic_partitions("pages") == ["a.md", "d.md"]
    # a writer with Dagster's stock storage (no counter) adding keys is seen through the largest id
    stock = event_log.SqliteEventLogStorage(base)
    stock.add_dynamic_partitions("pages", ["e.md"])
    assert mine.get_dynamic_partitions("pages") == ["a.md", "d.md", "e.md"]
