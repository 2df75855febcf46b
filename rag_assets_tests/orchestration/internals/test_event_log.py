"""The assumptions the batching event-log storage makes about Dagster's SQLite event-log storage."""

import inspect
import sqlite3

import dagster as dg
import pytest
import sqlalchemy as sa

from rag_assets.orchestration.internals import event_log as internals
from rag_assets_tests.support.dagster_assumptions import assumption


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    """A stock SQLite instance (`storage: sqlite:`) with one materialization and two dynamic keys."""
    home = tmp_path_factory.mktemp("stock-home")
    (home / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {home / 'storage'}\n"
                                       "telemetry:\n  enabled: false\n")
    instance = dg.DagsterInstance.from_config(str(home))

    @dg.asset
    def one() -> int:
        return 1

    assert dg.materialize([one], instance=instance).success
    instance.add_dynamic_partitions("docs", ["a.md", "b.md"])
    yield instance
    instance.dispose()


def test_stock_sqlite_event_log_storage_has_what_the_batching_storage_uses(stock):
    with assumption("event_log.stock_sqlite_event_log_storage"):
        cls = internals.stock_sqlite_event_log_storage()
        assert type(stock.event_log_storage) is cls, "`storage: sqlite:` no longer uses this class"
        missing = [m for m in internals.STOCK_MEMBERS if not hasattr(stock.event_log_storage, m)]
        assert not missing, f"members gone: {missing}"
        assert list(inspect.signature(cls._initdb).parameters) == ["self", "engine", "for_index_shard"]


def test_config_class_data_is_what_a_configured_storage_holds(tmp_path):
    with assumption("event_log.config_class_data"):
        (tmp_path / "dagster.yaml").write_text(
            "event_log_storage:\n  module: rag_assets.orchestration.event_log\n  class: BatchingSqliteEventLogStorage\n"
            f"  config:\n    base_dir: {tmp_path / 'runs'}\ntelemetry:\n  enabled: false\n")
        with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
            data = instance.event_log_storage.inst_data
            assert isinstance(data, internals.config_class_data())
            assert (data.module_name, data.class_name) == ("rag_assets.orchestration.event_log",
                                                           "BatchingSqliteEventLogStorage")


def test_events_table_holds_the_stored_events(stock):
    with assumption("event_log.events_table"):
        table = internals.events_table()
        assert [c.name for c in table.primary_key.columns] == ["id"]
        with stock.event_log_storage.index_connection() as conn:
            rows = conn.execute(sa.select(table.c.id, table.c.dagster_event_type)).fetchall()
        assert "ASSET_MATERIALIZATION" in {r.dagster_event_type for r in rows}


def test_asset_event_types_are_the_mirrored_ones():
    with assumption("event_log.asset_event_types"):
        kinds = internals.asset_event_types()
        assert {dg.DagsterEventType.ASSET_MATERIALIZATION, dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
                dg.DagsterEventType.ASSET_OBSERVATION} <= kinds


def test_asset_check_event_types_are_the_check_events():
    with assumption("event_log.asset_check_event_types"):
        assert {dg.DagsterEventType.ASSET_CHECK_EVALUATION,
                dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED} <= internals.asset_check_event_types()


def test_sqlite_engine_opens_a_sqlite_database(tmp_path):
    with assumption("event_log.sqlite_engine"):
        engine = internals.sqlite_engine(f"sqlite:///{tmp_path / 'x.db'}", poolclass=sa.pool.NullPool,
                                         connect_args={"timeout": 1, "check_same_thread": False})
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
        engine.dispose()


def test_sqlite_busy_timeout_is_a_positive_number_of_seconds():
    with assumption("event_log.sqlite_busy_timeout_seconds"):
        assert 0 < internals.sqlite_busy_timeout_seconds() < 3600


def test_dynamic_partition_keys_are_rows_of_a_table_with_growing_ids(stock):
    with assumption("event_log.dynamic_partitions_table"):
        name = internals.dynamic_partitions_table()
        with stock.event_log_storage.index_connection() as conn:
            before = conn.exec_driver_sql(f"SELECT max(id) FROM {name}").scalar()
        stock.add_dynamic_partitions("docs", ["c.md"])
        with stock.event_log_storage.index_connection() as conn:
            after = conn.exec_driver_sql(f"SELECT max(id) FROM {name}").scalar()
        assert after > before


def test_alembic_stamped_reads_the_stamp_of_dagsters_databases(stock, tmp_path):
    with assumption("event_log.alembic_stamped"):
        index_db = stock.event_log_storage.path_for_shard("index")
        assert internals.alembic_stamped(index_db)
        sqlite3.connect(tmp_path / "empty.db").close()
        assert not internals.alembic_stamped(str(tmp_path / "empty.db"))
        assert not internals.alembic_stamped(str(tmp_path / "missing.db"))
