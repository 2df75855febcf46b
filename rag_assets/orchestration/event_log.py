"""SQLite event-log storage that writes Dagster's per-partition events in batches.

Why: a single run over N documents records ~2 events per document per asset (materialization
planned, materialization). Dagster's stock SqliteEventLogStorage opens a new SQLAlchemy engine and
commits (fsync) once per event and shard: ~16 ms an event here, so the bookkeeping of a 1,000-page
ingest cost ~220 s next to ~70 s of embedding (benchmarks/ingest_overhead.md).

What changes, and nothing else:
- `store_event_batch` (called by Dagster when DAGSTER_EVENT_BATCH_SIZE > 0, for the planned and
  materialization events of a partition range) stores a batch through the stock `store_event`,
  statement for statement, inside ONE transaction per shard: same rows, one commit.
- An engine per shard is kept (the index shard, the current run's shard) instead of one per call.
- The keys of a dynamic partitions definition are kept in memory until they change: Dagster reads
  every key of the definition several times per step (output context, input subsets, metadata:
  ~40 reads a run), which at 100,000 documents cost 0.2 s a read and 8 s a run, so a full ingest
  grew with N². A change is seen through a counter this class keeps beside Dagster's table
  (`rag_dynamic_partitions_versions`, bumped in the transaction of each addition or deletion) and
  the table's largest id (additions by any other writer).
- A new run's database is a copy of an empty one made by the stock code once per Dagster version
  (`.run-shard-template-<version>.sqlite` beside the shards), and a database that already carries
  an alembic revision is not checked again: the stock initialisation loads alembic's ~90 migration
  scripts for each (~0.05-0.1 s of every run; 0.25 s for a process's first). Same schema, same stamp,
  same WAL mode: the copy is the stock result.
- `synchronous=NORMAL` on the WAL databases Dagster already uses: a commit no longer waits for an
  fsync; WAL keeps the files consistent across a crash of the process, and the last commits can be
  lost only to a power cut. The event log is bookkeeping: the index's truth is the stage state.

Configured in dagster.yaml (`event_log_storage:`); the file layout is the stock one, so an instance
created with `storage: sqlite:` can switch to this class and back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Sequence

import sqlalchemy as db
from dagster import DagsterEventType, EventLogEntry
from dagster.version import __version__ as DAGSTER_VERSION

from .internals.event_log import (alembic_stamped, asset_check_event_types, asset_event_types, dynamic_partitions_table,
                                  events_table, sqlite_busy_timeout_seconds, sqlite_engine,
                                  stock_sqlite_event_log_storage)

if TYPE_CHECKING:
    from .internals.event_log import ConfigurableClassData

# run shards whose engine stays open in one process (a webserver sees many runs; a run sees one)
_OPEN_SHARDS = 8
BATCH_SIZE_ENV = "DAGSTER_EVENT_BATCH_SIZE"
DEFAULT_BATCH_SIZE = "1000"
_WAL_LIMIT_BYTES = 256 * 1024
_VERSIONS_TABLE = "rag_dynamic_partitions_versions"
_RUN_ENDED = {DagsterEventType.RUN_SUCCESS, DagsterEventType.RUN_FAILURE, DagsterEventType.RUN_CANCELED}
ASSET_EVENTS, ASSET_CHECK_EVENTS = asset_event_types(), asset_check_event_types()
SqlEventLogStorageTable = events_table()
SQLITE_BUSY_TIMEOUT_SECONDS = sqlite_busy_timeout_seconds()
SqliteEventLogStorage = stock_sqlite_event_log_storage()  # Dagster's, extended below
DYNAMIC_PARTITIONS = dynamic_partitions_table()


def enable_event_batching() -> None:
    """Ask Dagster to hand planned/materialization events over in batches (read at each event)."""
    os.environ.setdefault(BATCH_SIZE_ENV, DEFAULT_BATCH_SIZE)


class BatchingSqliteEventLogStorage(SqliteEventLogStorage):
    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, db.engine.Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._batch = threading.local()  # shard -> connection inside an open batch transaction
        self._tables: dict[str, bool] = {}
        # partitions_def_name -> ((change counter, largest id), keys): see get_dynamic_partitions
        self._partition_keys: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value) -> "BatchingSqliteEventLogStorage":
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> db.engine.Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            engine = sqlite_engine(
                self.conn_string_for_shard(shard),
                poolclass=db.pool.QueuePool,
                pool_size=1,
                max_overflow=4,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            db.event.listen(engine, "connect", _tune_connection)
            self._engines[shard] = engine
            while len(self._engines) > _OPEN_SHARDS + 1:
                old_shard, old = next(iter(self._engines.items()))
                if old_shard == "index":
                    self._engines.move_to_end(old_shard)
                    continue
                del self._engines[old_shard]
                old.dispose()
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[db.engine.Connection]:
        open_batch = getattr(self._batch, "connections", None)
        if open_batch is not None and shard in open_batch:
            yield open_batch[shard]  # inside store_event_batch: the batch's transaction commits
            return
        with self._db_lock:
            if shard not in self._initialized_dbs and shard != "index":
                self._create_from_template(shard)
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
        with engine.connect() as conn:
            with conn.begin():
                if open_batch is not None:
                    open_batch[shard] = conn
                try:
                    yield conn
                finally:
                    if open_batch is not None:
                        open_batch.pop(shard, None)

    def _initdb(self, engine: db.engine.Engine, for_index_shard: bool = False) -> None:
        # the stock method does nothing more to a database with a revision, after loading every
        # migration script to learn the head
        if not alembic_stamped(engine.url.database):
            super()._initdb(engine, for_index_shard)

    def _create_from_template(self, shard: str) -> None:
        """A run's new database, copied from the stock-made empty one (made first if need be)."""
        target = self.path_for_shard(shard)
        if os.path.exists(target):
            return
        template = os.path.join(self._base_dir, f".run-shard-template-{DAGSTER_VERSION}.sqlite")
        if not os.path.exists(template):
            made = _scratch_path(self._base_dir)
            engine = sqlite_engine(f"sqlite:///{made}", poolclass=db.pool.NullPool)
            try:
                super()._initdb(engine)
            finally:
                engine.dispose()  # the last connection closed: SQLite folds the WAL into the file
            os.replace(made, template)  # atomic; a concurrent maker wrote the same thing
        copy = _scratch_path(self._base_dir)
        shutil.copyfile(template, copy)
        try:
            os.link(copy, target)  # never over a database another process created meanwhile
        except OSError:
            pass  # it exists now, or this file system has no hard links: the stock init decides
        finally:
            os.unlink(copy)

    def store_event(self, event: EventLogEntry) -> None:
        super().store_event(event)
        if event.is_dagster_event and event.dagster_event_type in _RUN_ENDED:
            self._close_shard(event.run_id)

    def _close_shard(self, shard: str) -> None:
        """A finished run's database is written no more: fold its WAL in and close it (SQLite then
        deletes the WAL file)."""
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
        if engine is None:
            return
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        except db.exc.OperationalError:
            pass  # a reader holds it: the WAL is cut back at its next checkpoint
        finally:
            engine.dispose()

    def has_table(self, table_name: str) -> bool:
        # asked once per stored asset event by the stock code; a table never disappears
        if not self._tables.get(table_name):
            self._tables[table_name] = super().has_table(table_name)
        return self._tables[table_name]

    # -- dynamic partition keys ------------------------------------------------------------------
    def get_dynamic_partitions(self, partitions_def_name: str) -> Sequence[str]:
        """The stock answer, read again only when the definition's keys may have changed."""
        version = self._dynamic_partitions_version(partitions_def_name)
        cached = self._partition_keys.get(partitions_def_name)
        if cached is not None and cached[0] == version:
            return list(cached[1])
        # read after the version: keys newer than it are re-read at the next call, never kept stale
        keys = super().get_dynamic_partitions(partitions_def_name)
        self._partition_keys[partitions_def_name] = (version, tuple(keys))
        return keys

    def add_dynamic_partitions(self, partitions_def_name: str, partition_keys: Sequence[str]) -> None:
        with self._index_transaction():
            super().add_dynamic_partitions(partitions_def_name, partition_keys)
            self._bump_dynamic_partitions_version(partitions_def_name)

    def delete_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> None:
        with self._index_transaction():
            super().delete_dynamic_partition(partitions_def_name, partition_key)
            self._bump_dynamic_partitions_version(partitions_def_name)

    def _dynamic_partitions_version(self, partitions_def_name: str) -> tuple[int, int]:
        """(this storage's change counter for the definition, the table's largest id): the counter
        moves with every addition or deletion made through this class, in the same transaction; the
        largest id (a rowid lookup) moves with additions made by any other writer too."""
        self._check_partitions_table()
        with self.index_connection() as conn:
            last_id = conn.exec_driver_sql(f"SELECT max(id) FROM {DYNAMIC_PARTITIONS}").scalar()
            try:
                counter = conn.exec_driver_sql(
                    f"SELECT version FROM {_VERSIONS_TABLE} WHERE partitions_def_name = ?", (partitions_def_name,)
                ).scalar()
            except db.exc.OperationalError:  # no such table: nothing was ever written through this class
                counter = None
        return int(counter or 0), int(last_id or 0)

    def _bump_dynamic_partitions_version(self, partitions_def_name: str) -> None:
        with self.index_connection() as conn:
            conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {_VERSIONS_TABLE} "
                                 "(partitions_def_name TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            conn.exec_driver_sql(
                f"INSERT INTO {_VERSIONS_TABLE} (partitions_def_name, version) VALUES (?, 1) "
                "ON CONFLICT (partitions_def_name) DO UPDATE SET version = version + 1", (partitions_def_name,))

    @contextmanager
    def _index_transaction(self) -> Iterator[None]:
        """The stock statements and the counter's in one transaction of the index shard."""
        if getattr(self._batch, "connections", None) is not None:
            yield  # already inside one
            return
        self._batch.connections = {}
        try:
            with self._hold("index"):
                yield
        finally:
            self._batch.connections = None

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Dagster's batches hold one run's planned / materialization / observation / check-planned
        events. Rows are inserted in bulk; each asset's entry (its *last* event of each kind, which
        is all the stock per-event upserts leave behind) is written once per kind."""
        if not events:
            return
        if len({e.run_id for e in events}) > 1 or any(not e.is_dagster_event for e in events):
            for event in events:
                self.store_event(event)
            return
        self._batch.connections = {}
        try:
            with self._hold(events[0].run_id), self._hold("index"):
                rows = [self._event_to_row(e) for e in events]  # serialised once for both shards
                with self.run_connection(events[0].run_id) as conn:
                    conn.execute(SqlEventLogStorageTable.insert(), rows)
                mirror = [i for i, e in enumerate(events) if e.dagster_event_type in ASSET_EVENTS | ASSET_CHECK_EVENTS]
                if not mirror:
                    return
                mirrored = [events[i] for i in mirror]
                with self.index_transaction() as conn:
                    ids = _insert_returning_ids(conn, [rows[i] for i in mirror])
                    assets = [(e, i) for e, i in zip(mirrored, ids) if e.dagster_event_type in ASSET_EVENTS]
                    if assets:
                        self._store_asset_event_tags(conn, [e for e, _ in assets], [i for _, i in assets])
                        last: dict[tuple, tuple[EventLogEntry, int]] = {}
                        for event, event_id in assets:
                            last[(event.dagster_event.asset_key, event.dagster_event_type)] = (event, event_id)
                        for event, event_id in last.values():
                            self._store_asset_event(conn, event, event_id)
                for event, event_id in zip(mirrored, ids):
                    if event.dagster_event_type in ASSET_CHECK_EVENTS:
                        self.store_asset_check_event(event, event_id)
        finally:
            self._batch.connections = None

    @contextmanager
    def _hold(self, shard: str) -> Iterator[None]:
        """Open the shard's transaction for the rest of the batch (committed when the batch ends)."""
        with self._connect(shard):
            yield

    def dispose(self) -> None:
        super().dispose()
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


def _insert_returning_ids(conn, rows: list[dict]) -> list[int]:
    """Ids of the rows inserted, in the rows' order: SQLAlchemy's "insertmanyvalues" (one statement,
    compiled once, sent in multi-row batches; 0.02 s per 1,000 events where a statement built from
    the rows' values took 0.1 s to compile each time)."""
    statement = SqlEventLogStorageTable.insert().returning(SqlEventLogStorageTable.c.id, sort_by_parameter_order=True)
    return [int(r[0]) for r in conn.execute(statement, rows)]


def _scratch_path(folder: str) -> str:
    handle, path = tempfile.mkstemp(dir=folder, prefix=".rag-shard-", suffix=".tmp")
    os.close(handle)
    os.unlink(path)  # SQLite and copyfile create it
    return path


def _tune_connection(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    # the engines stay open, so SQLite never deletes a WAL file: cut it back after each checkpoint
    # (each run's database otherwise keeps a ~5 MB WAL for good)
    cursor.execute(f"PRAGMA journal_size_limit={_WAL_LIMIT_BYTES}")
    cursor.close()
