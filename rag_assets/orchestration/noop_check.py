"""Answering a `rag ingest` that has nothing to do without importing Dagster.

`import dagster` and opening the instance are most of a no-op ingest (1.5–3 s of ~3.5 s on the test
VM). A full ingest that ends with every document current writes a *no-op token* into the state
database: a digest of what made that true — the folder's documents and their content hashes, the
settings, the vector collection's id, the index generation, and the Dagster run storage as it was
(its file, and the id of its last run). The next `rag ingest` recomputes the digest from a stat-level
look at the folder and from those files, and when it matches (and no Dagster run is unfinished)
answers "nothing changed" at once. Anything it cannot read for sure — a Dagster instance that is not
the SQLite layout of this repo's dagster.yaml, a Chroma server, a missing token — means "don't
know", and the full path (runs.ingest) decides, as before.

Why that is enough: every change to what is indexed happens in a Dagster run (a new run id), or
comes from the folder (a new catalog digest), the configuration (a new settings digest) or a wiped
store or state (a new collection id, no token, or a new run-storage file). Dagster's run storage is
read the way store.embedded_collection_id reads Chroma's catalog: one read-only SQLite query.

The same reasoning narrows an ingest that does have work: the token's *base* (everything but the
folder) is recorded beside it, and when the base is as recorded — no run, no new settings, store or
generation since everything was current — only documents whose content is not the stored catalog's
can be stale, so the ingest runs those without asking every document's staleness (~2.5 s at
100,000 documents).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout

from rag_assets.ingest.catalog import catalog_run_needed, touched_documents
from rag_assets.config import Settings
from rag_assets.ingest.discovery import StatLook, discover_for, stat_look, stat_look_of
from rag_assets.index.generation import read_generation
from rag_assets.index.locks import ingest_lock_file
from rag_assets.models import Catalog, IngestSummary
from rag_assets.index.stage_store import StageStore
from rag_assets.index.chroma_store import embedded_collection_id

TOKEN_KEY = "noop_token"
BASE_KEY = "noop_base"  # the token's parts but the folder's documents
STAT_KEY = "noop_stat_token"  # the token's base and the folder as stats saw it (discovery.stat_look)
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


def dagster_home() -> Path:
    """DAGSTER_HOME, set if unset: the working directory when it holds a dagster.yaml (the repo
    root), else this project's root, else data/dagster under the working directory."""
    if not os.environ.get("DAGSTER_HOME"):
        home = Path.cwd() if (Path.cwd() / "dagster.yaml").exists() else _PROJECT_ROOT
        if not (home / "dagster.yaml").exists():
            home = Path.cwd() / "data" / "dagster"
            home.mkdir(parents=True, exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)
    return Path(os.environ["DAGSTER_HOME"])


@dataclass(frozen=True)
class RunStorageState:
    path: str
    inode: int
    last_run_id: int
    unfinished_runs: int


def sqlite_runs_db(home: Path) -> Path | None:
    """The runs.db of the instance at `home` when its dagster.yaml configures Dagster's SQLite run
    storage with a literal base_dir (this repo's layout, or `storage: sqlite:`); None otherwise."""
    import yaml

    try:
        config = yaml.safe_load((home / "dagster.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(config, dict):
        return None
    run_storage, storage = config.get("run_storage"), config.get("storage")
    base = None
    if isinstance(run_storage, dict) and run_storage.get("class") == "SqliteRunStorage":
        base = (run_storage.get("config") or {}).get("base_dir")
    elif isinstance(storage, dict) and set(storage) == {"sqlite"} and isinstance(storage["sqlite"], dict):
        root = storage["sqlite"].get("base_dir")
        base = f"{root}/history" if isinstance(root, str) else None
    return Path(base) / "runs.db" if isinstance(base, str) else None


def run_storage_state(home: Path | None = None) -> RunStorageState | None:
    db = sqlite_runs_db(home or dagster_home())
    if db is None or not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            last, unfinished = conn.execute(
                "SELECT coalesce(max(id), 0), coalesce(sum(status NOT IN (?, ?, ?)), 0) FROM runs", _FINISHED
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return RunStorageState(str(db.resolve()), db.stat().st_ino, int(last), int(unfinished))


def noop_base(settings: Settings, runs: RunStorageState, stages: StageStore) -> str | None:
    """The digest of the token's parts but the folder (settings, store, generation, Dagster runs);
    None when the store is not an embedded one whose collection id can be read without opening it."""
    if settings.chroma_host:
        return None
    try:
        collection = embedded_collection_id(settings.chroma_path, settings.collection) or "none"
    except LookupError:
        return None
    parts = {
        "settings": hashlib.sha256(repr(settings).encode()).hexdigest(),
        "collection": collection,
        "generation": read_generation(stages.db),
        "runs": [runs.path, runs.inode, runs.last_run_id],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def noop_token(base: str, catalog: Catalog) -> str:
    """The digest described in the module docstring: noop_base's and the folder's documents."""
    parts = {
        "base": base,
        "docs_dir": catalog.docs_dir,
        "documents": sorted((d.doc_path, d.partition_key, d.content_hash) for d in catalog.documents),
        "errors": sorted((e.path, e.reason) for e in catalog.errors),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def record_noop_token(settings: Settings, stages: StageStore, catalog: Catalog | None, runs: RunStorageState | None) -> bool:
    """After a full ingest: remember that `catalog` was found current with the Dagster run storage as
    `runs` (read *before* that was checked, so a run that slipped in between invalidates the token).
    None for either (or an unfinished run) clears the token."""
    ok = catalog is not None and runs is not None and not runs.unfinished_runs
    base = noop_base(settings, runs, stages) if ok else None
    token = noop_token(base, catalog) if base else None
    stats = stat_look_of(catalog) if token else None
    with stages.db.write() as conn:
        stages.db.set_meta(TOKEN_KEY, token or "", conn)
        stages.db.set_meta(BASE_KEY, base if token else "", conn)
        stages.db.set_meta(STAT_KEY, stat_token(base, stats) if stats else "", conn)
    return token is not None


def stat_token(base: str, look: StatLook) -> str:
    """The token's base and the folder at stat level: equal to the recorded one, every file is the
    version the recorded catalog hashed (the rule DocumentRef.stat_matches applies to every look),
    so the catalog has not moved and nothing needs reading."""
    parts = {"base": base, "docs_dir": look.docs_dir, "files": sorted(look.files),
             "errors": sorted((e.path, e.reason) for e in look.errors)}
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


@dataclass(frozen=True)
class FolderLook:
    """The stored catalog and the folder as a no-op check found them: an ingest that follows at once
    starts from them instead of reading the catalog and walking the folder again (at 100,000
    documents each is about a second)."""

    stored: Catalog
    seen: Catalog
    runs: RunStorageState | None = None  # Dagster's runs as the check read them
    # the token's base is as recorded: only documents whose content is not the stored catalog's can be stale
    base_current: bool = False


def quick_noop(settings: Settings) -> IngestSummary | None:
    """The summary of a `rag ingest` with nothing to do, or None when that is not certain."""
    return check_noop(settings)[0]


def check_noop(settings: Settings) -> tuple[IngestSummary | None, FolderLook | None]:
    """(quick_noop's answer, and when it looked at the folder and found work, what it saw)."""
    lock = ingest_lock_file(settings.state_dir)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None, None  # another ingest is running: the full path waits for it
    try:
        stages = StageStore.for_settings(settings)
        recorded = stages.db.get_meta(TOKEN_KEY)
        runs = run_storage_state() if recorded else None
        if runs is None or runs.unfinished_runs:
            return None, None
        base = noop_base(settings, runs, stages)
        looked = None
        recorded_stats = stages.db.get_meta(STAT_KEY)
        if base and recorded_stats:
            # the stat-level look first: when it is as recorded, neither the stored catalog nor a
            # discovery against it is needed (~0.8 s less at 100,000 documents)
            looked = stat_look(settings.docs_dir, settings.max_file_bytes)
            if stat_token(base, looked) == recorded_stats:
                return _unchanged(looked.files, looked.errors), None
        stored = stages.read_catalog()
        if stored is None:
            return None, None
        seen = discover_for(settings, known=stored, looked=looked)
        if catalog_run_needed(stored, seen) or base is None or noop_token(base, seen) != recorded:
            base_current = base is not None and base == stages.db.get_meta(BASE_KEY)
            return None, FolderLook(stored, seen, runs, base_current)
        # touched files (new mtime, same content): remember how they look now, and let the next
        # check answer from stats again
        touched = touched_documents(stored, seen)
        if touched:
            stages.refresh_catalog(touched)
            stats = stat_look_of(seen)
            stages.db.set_meta(STAT_KEY, stat_token(base, stats) if stats else "")
        return _unchanged(seen.documents, seen.errors), None
    finally:
        lock.release()


def _unchanged(documents, errors) -> IngestSummary:
    return IngestSummary(
        documents_discovered=len(documents) + len(errors),
        documents_unchanged=len(documents),
        documents_failed=len(errors),
        errors=[{"doc_path": e.path, "error": e.reason} for e in errors],
    )
