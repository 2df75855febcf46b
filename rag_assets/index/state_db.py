"""The pipeline's own state in one SQL database: stage records, failures, the catalog, the embedding
cache and the index generation. SQLite in the state folder by default; PostgreSQL when
RAG_STATE_URL says so, so several processes or machines share it.

Why SQL and not a file per record: deciding what is stale is one query over small columns
(source hash, fingerprint) instead of reading every record whole, and a batch of records commits
at once. Tables are created on first use (`metadata.create_all`); `SCHEMA_VERSION` in
`state_meta` records what created them.

SQLite: WAL (readers never wait for the writer), `synchronous=NORMAL` (a commit is durable once the
WAL is checkpointed; a crash of the process never corrupts it), a 60 s busy timeout, and write
transactions opened with BEGIN IMMEDIATE so two writers queue instead of failing on a stale
snapshot. One engine per database per process, disposed in a forked child.

Nothing but an ingest writes: opening the database (as a query does) only reads, so a query works
on a state file it may not write. SQLite's own failures (read-only, damaged, not a database) become
one StateDatabaseError naming the file and the fix instead of a four-line SQL error.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import sqlalchemy as sa

from rag_assets.errors import ConfigurationError, StateDatabaseError
from rag_assets.index.state_file import STATE_FILE

SCHEMA_VERSION = "1"
_BUSY_TIMEOUT_SECONDS = 60
_SCHEMA_LOCK_KEY = 0x7261675F73746174  # "rag_stat": serialises table creation on PostgreSQL

metadata = sa.MetaData()

stage_records = sa.Table(
    "stage_records",
    metadata,
    sa.Column("stage", sa.String(16), primary_key=True),
    sa.Column("doc_path", sa.Text, primary_key=True),
    sa.Column("source_hash", sa.String(64), nullable=False),
    sa.Column("fingerprint", sa.Text, nullable=False, default=""),
    sa.Column("payload", sa.Text, nullable=False),  # JSON
    sa.Column("updated_at", sa.Float, nullable=False),
)
sa.Index("stage_records_doc_path", stage_records.c.doc_path)

failures = sa.Table(
    "failures",
    metadata,
    sa.Column("doc_path", sa.Text, primary_key=True),
    sa.Column("source_hash", sa.String(64), nullable=False),
    sa.Column("stage", sa.String(16), nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.Float, nullable=False),
)

catalog_documents = sa.Table(
    "catalog_documents",
    metadata,
    sa.Column("doc_path", sa.Text, primary_key=True),
    sa.Column("partition_key", sa.Text, nullable=False),
    sa.Column("absolute_path", sa.Text, nullable=False),
    sa.Column("module", sa.Text),
    sa.Column("chapter", sa.Text),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("mtime", sa.Float, nullable=False),
    sa.Column("mtime_ns", sa.BigInteger, nullable=False, default=0),
    sa.Column("inode", sa.BigInteger, nullable=False, default=0),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("file_hash", sa.String(64), nullable=False, default=""),
    sa.Column("imports", sa.Text, nullable=False, default=""),
    sa.Column("language", sa.Text, nullable=False, default=""),
    sa.Column("facts", sa.Text, nullable=False, default=""),
    sa.Column("place", sa.Text, nullable=False, default=""),
)
# a run looks its documents up by partition key: without it, a table scan per asset and run (N² over an ingest)
sa.Index("catalog_documents_partition_key", catalog_documents.c.partition_key)
# Indexes added after a table was first created: made in place on a database from an earlier version.
_ADDED_INDEXES = (("catalog_documents", "catalog_documents_partition_key"),)
# Columns added after a table was first created: (table, column, SQL type and default), added in place.
_ADDED_COLUMNS = (
    ("catalog_documents", "file_hash", "VARCHAR(64) NOT NULL DEFAULT ''"),
    ("catalog_documents", "imports", "TEXT NOT NULL DEFAULT ''"),
    ("catalog_documents", "language", "TEXT NOT NULL DEFAULT ''"),
    ("catalog_documents", "facts", "TEXT NOT NULL DEFAULT ''"),
    ("catalog_documents", "place", "TEXT NOT NULL DEFAULT ''"),
)

catalog_errors = sa.Table(
    "catalog_errors",
    metadata,
    sa.Column("path", sa.Text, primary_key=True),
    sa.Column("reason", sa.Text, nullable=False),
)

embeddings = sa.Table(
    "embeddings",
    metadata,
    sa.Column("model", sa.String(200), primary_key=True),
    sa.Column("content_hash", sa.String(64), primary_key=True),
    sa.Column("dimension", sa.Integer, nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False),
)

# the search snapshot of each collection, for query processes on other machines (PostgreSQL state only;
# locally the snapshot folder in the state folder is enough): the live manifest (JSON) and its segments
snapshot_manifests = sa.Table(
    "snapshot_manifests",
    metadata,
    sa.Column("collection", sa.String(512), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),  # the manifest's file name
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
snapshot_segments = sa.Table(
    "snapshot_segments",
    metadata,
    sa.Column("collection", sa.String(512), primary_key=True),
    sa.Column("name", sa.String(200), primary_key=True),  # the segment folder's name
    sa.Column("archive", sa.LargeBinary, nullable=False),  # the segment folder as a gzipped tar
    sa.Column("created_at", sa.Float, nullable=False),
)

# the folder as the docs sensor (or `rag watch`) last saw it: size, mtime and hash of every file, ~110
# bytes a file. Dagster stores a sensor's cursor with every tick, so the cursor names a snapshot here
# instead of holding it (rag_assets.index.folder_snapshots)
folder_snapshots = sa.Table(
    "folder_snapshots",
    metadata,
    sa.Column("owner", sa.String(64), primary_key=True),
    sa.Column("snapshot_id", sa.String(64), primary_key=True),
    sa.Column("body", sa.LargeBinary, nullable=False),  # zlib-compressed JSON
    sa.Column("created_at", sa.Float, nullable=False),
)

state_meta = sa.Table(
    "state_meta",
    metadata,
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)


def _missing_columns(conn) -> list[tuple[str, str, str]]:
    inspector = sa.inspect(conn)
    tables = set(inspector.get_table_names())
    columns = {t: {c["name"] for c in inspector.get_columns(t)} for t in {t for t, _, _ in _ADDED_COLUMNS} & tables}
    return [(t, c, ddl) for t, c, ddl in _ADDED_COLUMNS if t in columns and c not in columns[t]]


def _missing_indexes(conn) -> list[sa.Index]:
    inspector = sa.inspect(conn)
    tables = set(inspector.get_table_names())
    indexes = {t: {i["name"] for i in inspector.get_indexes(t)} for t in {t for t, _ in _ADDED_INDEXES} & tables}
    return [i for t, name in _ADDED_INDEXES if t in indexes and name not in indexes[t]
            for i in metadata.tables[t].indexes if i.name == name]


def _add_missing(conn) -> None:
    """A database made by an earlier version gains the columns and indexes added since (tables keep their rows)."""
    for table, column, ddl in _missing_columns(conn):
        conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}"))
    for index in _missing_indexes(conn):
        index.create(conn, checkfirst=True)


class StateDB:
    """One state database: an engine, its tables, and transactions that suit its dialect."""

    def __init__(self, url: str):
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        try:
            self.engine = _create_engine(url, self.is_sqlite)
            try:
                self._create_tables()
            except StateDatabaseError:
                if not self._on_read_only_folder():
                    raise
                # SQLite cannot open a WAL database without its -shm file, which it cannot create
                # in a read-only folder (a read-only mount): read the file as an immutable snapshot
                self.engine.dispose()
                self.engine = _create_engine(_immutable_url(self.path), True, read_only=True)
                self._create_tables()
        except sa.exc.ArgumentError as exc:
            raise ConfigurationError(f"RAG_STATE_URL is not a database URL SQLAlchemy understands: {exc}") from None
        except ModuleNotFoundError as exc:
            raise ConfigurationError(f"RAG_STATE_URL {self.display_url} needs the database driver {exc.name!r}, which "
                                     "is not installed (for PostgreSQL: pip install -e '.[postgres]')") from None
        except sa.exc.DatabaseError as exc:
            if self.is_sqlite:
                raise self._explain(exc) from None
            raise ConfigurationError(f"cannot open the state database {self.display_url}: {exc.orig}") from None
        self.identity = self._file_identity()

    @property
    def path(self) -> str | None:
        """The SQLite file (None for a server database)."""
        return sa.engine.make_url(self.url).database if self.is_sqlite else None

    def _on_read_only_folder(self) -> bool:
        path = self.path
        return bool(path) and os.path.isfile(path) and not os.access(os.path.dirname(path) or ".", os.W_OK)

    def _create_tables(self) -> None:
        if self.is_sqlite:
            with self.read() as conn:
                present = set(sa.inspect(conn).get_table_names())
                missing = _missing_columns(conn) or _missing_indexes(conn)
            if present >= set(metadata.tables) and not missing and self.get_meta("schema_version"):
                return  # nothing to create: a reader must not need write access
            with self.write() as conn:
                metadata.create_all(conn)
                _add_missing(conn)
                self.insert_ignore(conn, state_meta, [{"key": "schema_version", "value": SCHEMA_VERSION}], ["key"])
            return
        # several workers starting at once: one creates, the others wait on the advisory lock
        with self.engine.begin() as conn:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})
            metadata.create_all(conn)
            _add_missing(conn)
            self.insert_ignore(conn, state_meta, [{"key": "schema_version", "value": SCHEMA_VERSION}], ["key"])

    def _file_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the SQLite file: a cached engine must not outlive its file (deleted state)."""
        if not self.is_sqlite:
            return None
        try:
            st = os.stat(sa.engine.make_url(self.url).database)
        except (OSError, TypeError):
            return None
        return st.st_dev, st.st_ino

    @property
    def display_url(self) -> str:
        """The URL without its password, for messages and logs."""
        return sa.engine.make_url(self.url).render_as_string(hide_password=True)

    @classmethod
    def for_settings(cls, paths) -> "StateDB":
        """The state database of these paths (rag_assets.config.PathSettings, or a whole Settings)."""
        return cls.open(state_url(paths))

    @classmethod
    def open(cls, url: str) -> "StateDB":
        """The process's StateDB for this URL (engines are pooled, so one per database is enough)."""
        with _OPEN_LOCK:
            db = _OPEN.get(url)
            if db is not None and db.identity != db._file_identity():
                db.dispose()  # the file was deleted or replaced (e.g. the state folder was wiped)
                db = None
            if db is None:
                db = _OPEN[url] = cls(url)
            return db

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        try:
            with self.engine.connect() as conn:
                yield conn
        except sa.exc.DatabaseError as exc:
            raise self._explain(exc) if self.is_sqlite else exc

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """A write transaction, committed when the block ends (rolled back on an exception)."""
        try:
            with self.engine.connect().execution_options(rag_write=True) as conn, conn.begin():
                yield conn
        except sa.exc.DatabaseError as exc:
            raise self._explain(exc) if self.is_sqlite else exc

    def _explain(self, exc: sa.exc.DatabaseError) -> Exception:
        """SQLite's own failure as one line naming the file and the fix; other errors unchanged."""
        path = self.path
        reason = str(exc.orig).strip()
        low = reason.lower()
        if "readonly" in low or "read-only" in low:
            return StateDatabaseError(
                f"the state database {path} is read-only for this process ({reason}): queries only read it, "
                f"but an ingest writes it. Make it and its folder writable for this user, or set RAG_STATE_DIR "
                f"to a writable folder (a new state database re-reads every document once)")
        if "malformed" in low or "not a database" in low or "corrupt" in low:
            return StateDatabaseError(
                f"the state database {path} is damaged ({reason}). It holds only what an ingest can rebuild "
                f"(stage records, catalog, embedding cache): move it and its -wal/-shm files aside "
                f"(e.g. mv {path} {path}.damaged) and run `rag ingest`; the vector index is kept")
        if "disk is full" in low or "disk full" in low:
            return StateDatabaseError(
                f"the state database {path} cannot be written: its disk is full ({reason}). Free space on that "
                f"disk (or set RAG_STATE_DIR to a folder on another one) and run `rag ingest` again; what was "
                f"indexed is kept")
        if "unable to open" in low:
            return StateDatabaseError(
                f"cannot open the state database {path} ({reason}): check that its folder exists and this user "
                f"may read it (and write it, for an ingest), or set RAG_STATE_DIR")
        return exc

    def upsert(self, conn: sa.Connection, table: sa.Table, rows: Sequence[dict], keys: Sequence[str]) -> None:
        """INSERT … ON CONFLICT (keys) DO UPDATE, for SQLite and PostgreSQL alike."""
        if not rows:
            return
        if self.is_sqlite:
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        statement = insert(table)
        updates = {c.name: statement.excluded[c.name] for c in table.columns if c.name not in keys}
        conn.execute(statement.on_conflict_do_update(index_elements=list(keys), set_=updates), list(rows))

    def insert_ignore(self, conn: sa.Connection, table: sa.Table, rows: Sequence[dict], keys: Sequence[str]) -> None:
        if not rows:
            return
        if self.is_sqlite:
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        conn.execute(insert(table).on_conflict_do_nothing(index_elements=list(keys)), list(rows))

    # small key/value settings of the state itself (generation, last reconcile, ...)
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self.read() as conn:
            value = conn.execute(sa.select(state_meta.c.value).where(state_meta.c.key == key)).scalar()
        return default if value is None else value

    def set_meta(self, key: str, value: str, conn: sa.Connection | None = None) -> None:
        if conn is None:
            with self.write() as own:
                self.upsert(own, state_meta, [{"key": key, "value": value}], ["key"])
        else:
            self.upsert(conn, state_meta, [{"key": key, "value": value}], ["key"])

    def dispose(self) -> None:
        self.engine.dispose()


def state_url(paths) -> str:
    """RAG_STATE_URL (a plain postgresql:// URL gets the installed driver), or the SQLite file in the state folder."""
    url = getattr(paths, "state_url", None)
    return with_driver(url) if url else local_state_url(paths.state_dir)


# the PostgreSQL drivers SQLAlchemy can use, in order of preference; the `postgres` extra installs psycopg2
_PG_DRIVERS = (("psycopg2", "psycopg2"), ("psycopg", "psycopg"))


def with_driver(url: str) -> str:
    """`postgresql://` / `postgres://` (the form every other tool takes) with an installed driver
    named, as SQLAlchemy needs; ConfigurationError in one line when none is installed. URLs that
    name their driver are left alone (a missing one is reported when the engine is created)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("postgresql", "postgres"):
        return url
    import importlib.util

    for module, dialect in _PG_DRIVERS:
        if importlib.util.find_spec(module) is not None:
            return f"postgresql+{dialect}://{rest}"
    raise ConfigurationError(
        "RAG_STATE_URL is a PostgreSQL URL but no PostgreSQL driver is installed: "
        "pip install -e '.[postgres]' (psycopg2)")


def local_state_url(state_dir: Path | str) -> str:
    folder = Path(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / STATE_FILE}"


def _immutable_url(path: str) -> str:
    return f"sqlite:///file:{path}?mode=ro&immutable=1&uri=true"


def _create_engine(url: str, is_sqlite: bool, read_only: bool = False) -> sa.Engine:
    if not is_sqlite:
        return sa.create_engine(url, pool_pre_ping=True, pool_size=4, max_overflow=8)
    engine = sa.create_engine(
        url, connect_args={"timeout": _BUSY_TIMEOUT_SECONDS, "check_same_thread": False}, pool_size=2, max_overflow=8
    )

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (pysqlite's own is deferred)
        if read_only:
            return  # journal settings are writes
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_SECONDS * 1000}")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn):
        # a writer takes the write lock up front: a deferred transaction that reads, then writes,
        # fails at once (SQLITE_BUSY_SNAPSHOT) when another writer committed in between
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("rag_write") else "BEGIN")

    return engine


# one engine (and its connection pool) per state database per process, as SQLAlchemy intends:
# process-wide on purpose, like the databases themselves
_OPEN: dict[str, StateDB] = {}
_OPEN_LOCK = threading.Lock()


def open_urls() -> set[str]:
    """The URLs of the databases this process holds open (its StateDBs)."""
    with _OPEN_LOCK:
        return set(_OPEN)


def close(url: str) -> None:
    """Close this process's StateDB for `url` (its pooled connections); the next open makes a new one."""
    with _OPEN_LOCK:
        db = _OPEN.pop(url, None)
    if db is not None:
        db.dispose()


def _forget_after_fork() -> None:
    # pooled connections must not cross a fork: the child opens its own
    for db in _OPEN.values():
        db.engine.dispose(close=False)
    _OPEN.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
