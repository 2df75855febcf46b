"""Dagster's SQLite event-log storage as rag_assets.orchestration.event_log builds on it: the stock
class it subclasses (with the members it overrides or calls), the events table, the asset event
types Dagster mirrors into the index shard, and its SQLite engine settings."""

from __future__ import annotations

import os
import sqlite3

from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData  # noqa: F401 - the storage's annotations

# What BatchingSqliteEventLogStorage overrides or calls on the stock class, beyond the public
# EventLogStorage interface: a rename or removal of any of them breaks the batching storage.
STOCK_MEMBERS = (
    "_initdb", "_connect", "_db_lock", "_initialized_dbs", "_base_dir", "_event_to_row",
    "_store_asset_event", "_store_asset_event_tags", "_check_partitions_table", "conn_string_for_shard",
    "path_for_shard", "index_connection", "index_transaction", "run_connection", "store_event",
    "store_event_batch", "store_asset_check_event", "has_table", "get_dynamic_partitions",
    "add_dynamic_partitions", "delete_dynamic_partition", "dispose",
)


def stock_sqlite_event_log_storage() -> type[SqliteEventLogStorage]:
    """The stock SQLite event-log storage (what dagster.yaml's `storage: sqlite:` uses), with every
    member of STOCK_MEMBERS: the base class of the batching storage."""
    return SqliteEventLogStorage


def config_class_data() -> type[ConfigurableClassData]:
    """The record Dagster hands a storage configured by module and class in dagster.yaml."""
    return ConfigurableClassData


def events_table():
    """The SQLAlchemy table of stored events (one row per event, `id` an integer primary key), in
    both the run shards and the index shard."""
    return SqlEventLogStorageTable


def asset_event_types() -> frozenset:
    """The event types whose rows Dagster mirrors into the index shard and records per asset
    (materialization, observation, planned materialization...)."""
    return frozenset(ASSET_EVENTS)


def asset_check_event_types() -> frozenset:
    """The asset-check event types Dagster mirrors into the index shard (store_asset_check_event)."""
    return frozenset(ASSET_CHECK_EVENTS)


def sqlite_engine(url: str, **kwargs):
    """Dagster's SQLAlchemy engine factory for its SQLite storages (create_engine(url, **kwargs))."""
    return create_engine(url, **kwargs)


def sqlite_busy_timeout_seconds() -> float:
    """How long Dagster's SQLite connections wait on a locked database."""
    return float(SQLITE_BUSY_TIMEOUT_SECONDS)


def dynamic_partitions_table() -> str:
    """The index shard's table of dynamic partition keys (an integer `id` that grows with every key
    added, `partitions_def_name`, `partition`)."""
    return "dynamic_partitions"


def alembic_stamped(path: str | None) -> bool:
    """Whether a SQLite database carries one alembic revision (a missing file carries none): the
    stock _initdb does nothing more to such a database than learn the migration head, so the
    batching storage skips it. Dagster stamps its SQLite storages in `alembic_version`."""
    if not path or not os.path.exists(path):
        return False
    conn = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS)
    try:
        rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:  # no such table, or not a database: the stock code decides
        return False
    finally:
        conn.close()
    return len(rows) == 1 and bool(rows[0][0])
