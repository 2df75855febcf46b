"""Answering a `rag ingest` that has nothing to do without importing Dagster.

`import dagster` and opening the instance are most of a no-op ingest (1.5–3 s of ~3.5 s on the test
VM). A full ingest that ends with every document current writes a *no-op token* into the state
database: a digest of what made that true — the folder's documents and their content hashes, the
settings, the vector collection's id, the index generation, and the Dagster run storage as it was
(its file, and the id of its last run). The next `rag ingest` recomputes the digest from a stat-level
look at the folder and from those files, and when it matches (and no Dagster run is unfinished)
answers "nothing changed" at once. Anything it cannot read for sure — a Dagster instance that is not
the SQLite layout of this repo's dagster.yaml, a Chroma server, a missing token — means "don't
know", and the full path (rag_assets.indexing.service.ingest) decides, as before.

Why that is enough: every change to what is indexed happens in a Dagster run (a new run id), or
comes from the folder (a new catalog digest), the configuration (a new settings digest) or a wiped
store or state (a new collection id, no token, or a new run-storage file). Dagster's run storage is
read the way store.embedded_collection_id reads Chroma's catalog: one read-only SQLite query.

The same reasoning narrows an ingest that does have work: the token's *base* (everything but the
folder) is recorded beside it, and when the base is as recorded — no run, no new settings, store or
generation since everything was current — only documents whose content is not the stored catalog's
can be stale, so the ingest runs those without asking every document's staleness (~2.5 s at
100,000 documents).

The folder's part of each token is an order-free digest (the sum of a hash per document, and per
file for the stat token), recorded beside it. When only files the catalog lists moved, the check
reads the catalog's stats, then the moved files' rows and bytes alone, and the ingest that follows
records the new tokens by swapping the moved documents' hashes in the recorded digests: an edit
never reads the whole catalog (~1 s at 100,000 documents).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from filelock import Timeout

from rag_assets.ingest.catalog import catalog_run_needed, content_changed, touched_documents
from rag_assets.config import Settings
from rag_assets.ingest.discovery import DocumentTooLarge, StatLook, discover_for, fingerprint_file, stat_look, stat_look_of
from rag_assets.index.generation import read_generation
from rag_assets.ingest.scope import ScopeSettings, named_translations
from rag_assets.index.locks import ingest_lock_file
from rag_assets.models import FACTS_VERSION, Catalog, DocumentRef, IngestSummary
from rag_assets.index.stage_store import StageStore
from rag_assets.index.chroma_store import embedded_collection_id
from rag_assets.orchestration.internals.run_storage import runs_summary, sqlite_runs_db as runs_db_of

TOKEN_KEY = "noop_token"
BASE_KEY = "noop_base"  # the token's parts but the folder's documents
STAT_KEY = "noop_stat_token"  # the token's base and the folder as stats saw it (discovery.stat_look)
# what the token covers of the documents (documents_digest), as "<token>:<digest>": valid only beside
# that token (a version of this code that did not keep it may have written another token since)
DOCUMENTS_DIGEST_KEY = "noop_documents_digest"
# Past this many files whose stats moved, the whole catalog is read (as cheap, and a catalog run is likely)
MOVED_AT_MOST = 1_000
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


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
    return runs_db_of(config)


def run_storage_state(home: Path | None = None) -> RunStorageState | None:
    db = sqlite_runs_db(home or dagster_home())
    if db is None or not db.is_file():
        return None
    summary = runs_summary(db)
    if summary is None:
        return None
    last, unfinished = summary
    return RunStorageState(str(db.resolve()), db.stat().st_ino, last, unfinished)


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
        # pages' facts recorded by another version are read again by the next look (DocumentRef.stat_matches)
        "facts": FACTS_VERSION,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


_DIGEST_MOD = 1 << 128


def _set_digest(lines: Iterable[str]) -> int:
    """An order-free digest of a set of lines: the sum of their hashes. Replacing a few lines changes
    it by their hashes alone, so an edit updates it without reading the other 100,000."""
    total = 0
    for line in lines:
        total += int.from_bytes(hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=16).digest(), "big")
    return total % _DIGEST_MOD


def documents_digest(documents: Iterable[DocumentRef]) -> int:
    """The folder's documents as the token covers them: path, partition and content hash."""
    return _set_digest(f"{d.doc_path}\0{d.partition_key}\0{d.content_hash}" for d in documents)


def files_digest(files: Iterable[tuple[str, int, int, int]]) -> int:
    """The folder's files as a stat sees them: path, size, mtime_ns, inode (StatLook.files)."""
    return _set_digest(f"{path}\0{size}\0{mtime_ns}\0{inode}" for path, size, mtime_ns, inode in files)


def _token(kind: str, base: str, docs_dir: str, digest: int, errors) -> str:
    parts = {"kind": kind, "base": base, "docs_dir": docs_dir, "digest": f"{digest:032x}",
             "errors": sorted((e.path, e.reason) for e in errors)}
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def noop_token(base: str, catalog: Catalog) -> str:
    """The digest described in the module docstring: noop_base's and the folder's documents."""
    return _token("documents", base, catalog.docs_dir, documents_digest(catalog.documents), catalog.errors)


def stat_token(base: str, look: StatLook, digest: int) -> str:
    """The token's base and the folder at stat level (`digest`: files_digest(look.files)): equal to
    the recorded one, every file is the version the recorded catalog hashed (the rule
    DocumentRef.stat_matches applies to every look), so the catalog has not moved and nothing needs reading."""
    return _token("files", base, look.docs_dir, digest, look.errors)


def record_noop_token(settings: Settings, stages: StageStore, catalog: Catalog | None, runs: RunStorageState | None) -> bool:
    """After a full ingest: remember that `catalog` was found current with the Dagster run storage as
    `runs` (read *before* that was checked, so a run that slipped in between invalidates the token).
    None for either (or an unfinished run) clears the token."""
    ok = catalog is not None and runs is not None and not runs.unfinished_runs
    base = noop_base(settings, runs, stages) if ok else None
    if not base:
        _write_tokens(stages)
        return False
    _record_catalog(stages, base, catalog)
    return True


def _record_catalog(stages: StageStore, base: str, catalog: Catalog) -> None:
    """The tokens of `catalog` as current with this base."""
    stats = stat_look_of(catalog)
    _write_tokens(stages, base, catalog.docs_dir, catalog.errors, documents_digest(catalog.documents),
                  files_digest(stats.files) if stats else None)


def record_moved(settings: Settings, stages: StageStore, look: FolderLook, now: Sequence[DocumentRef],
                 runs: RunStorageState | None) -> bool:
    """After an ingest of a moved-only look (check_noop): the same as record_noop_token with the
    catalog as recorded but for `now`, the moved documents as the runs left them, whose digests
    replace theirs in the recorded ones."""
    base = noop_base(settings, runs, stages) if runs is not None and not runs.unfinished_runs else None
    if not base or look.rest is None:
        _write_tokens(stages)
        return False
    rest_documents, rest_files = look.rest
    stats = stat_look_of(Catalog(look.seen.docs_dir, list(now), look.seen.errors))
    _write_tokens(stages, base, look.seen.docs_dir, look.seen.errors,
                  (rest_documents + documents_digest(now)) % _DIGEST_MOD,
                  (rest_files + files_digest(stats.files)) % _DIGEST_MOD if stats else None)
    return True


def _write_tokens(stages: StageStore, base: str = "", docs_dir: str = "", errors=(), documents: int | None = None,
                  files: int | None = None) -> None:
    """The no-op token, its base, the stat token and the documents digest the token covers, in one
    transaction; no base: all cleared. No `files`: no stat token (stats cannot tell, stat_look_of)."""
    token = _token("documents", base, docs_dir, documents, errors) if base and documents is not None else ""
    stat = _token("files", base, docs_dir, files, errors) if token and files is not None else ""
    with stages.db.write() as conn:
        stages.db.set_meta(TOKEN_KEY, token, conn)
        stages.db.set_meta(BASE_KEY, base if token else "", conn)
        stages.db.set_meta(STAT_KEY, stat, conn)
        stages.db.set_meta(DOCUMENTS_DIGEST_KEY, f"{token}:{documents:032x}" if token else "", conn)


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
    # A moved-only look: `stored` and `seen` hold only the files whose stats moved (no file appeared,
    # vanished or was refused; the others are as the catalog records them), `documents` counts all,
    # and `rest` is the recorded documents digest and the looked files digest without the moved ones.
    rest: tuple[int, int] | None = None
    documents: int = 0

    @property
    def moved_only(self) -> bool:
        return self.rest is not None


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
        stages = StageStore.for_settings(settings.paths)
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
            looked = stat_look(settings.docs_dir, settings.max_file_bytes, ScopeSettings.from_settings(settings.ingest))
            digest = files_digest(looked.files)
            if stat_token(base, looked, digest) == recorded_stats:
                return _unchanged(looked.files, looked.errors, stages), None
            if base == stages.db.get_meta(BASE_KEY):
                moved = _look_at_moved(settings, stages, looked, digest, runs)
                if moved is not None:
                    return moved
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
        # pages read and left out (a translation, a draft) that moved but are still out: remembered too
        left_out_moved = set(stored.left_out_refs) != set(seen.left_out_refs)
        if touched or left_out_moved:
            if touched:
                stages.refresh_catalog(touched)
            if left_out_moved:
                stages.write_scope(seen)
            _record_catalog(stages, base, seen)
        return _unchanged(seen.documents, seen.errors, stages), None
    finally:
        lock.release()


def _look_at_moved(settings: Settings, stages: StageStore, looked: StatLook, digest: int,
                   runs: RunStorageState) -> tuple[IngestSummary | None, FolderLook | None] | None:
    """check_noop when only files the catalog lists moved (edited or touched) and the token's base is
    as recorded: the catalog's stats, then only the moved files' rows, and only those files read
    (at 100,000 documents ~1 s less than the whole catalog and a discovery against it). None when
    that is not the case: the whole catalog decides."""
    token, _, recorded = (stages.db.get_meta(DOCUMENTS_DIGEST_KEY) or "").partition(":")
    catalog = stages.catalog_stats() if recorded and token == stages.db.get_meta(TOKEN_KEY) else None
    # a page that imports another: its hash covers a file its own stat cannot see
    if catalog is None or catalog.imports or catalog.docs_dir != looked.docs_dir:
        return None
    if sorted((e.path, e.reason) for e in catalog.errors) != sorted((e.path, e.reason) for e in looked.errors):
        return None
    now = {path: (size, mtime_ns, inode) for path, size, mtime_ns, inode in looked.files}
    if now.keys() != catalog.files.keys():
        return None  # files appeared or vanished: a catalog run
    moved = sorted(path for path, stat in now.items() if catalog.files[path] != stat)
    if len(moved) > MOVED_AT_MOST:
        return None
    stored = stages.catalog_by_doc_path(moved)
    seen = []
    for path in moved:
        try:
            ref = fingerprint_file(settings.docs_dir, path, max_file_bytes=settings.max_file_bytes, known=stored[path])
        except (OSError, DocumentTooLarge):
            return None  # gone or refused meanwhile: the whole look words it
        if ref.imports or ref.facts != stored[path].facts:
            return None  # what it says of itself (draft, its language) moved: the whole look decides its scope
        seen.append(ref)
    stored_refs = [stored[path] for path in moved]
    rest = ((int(recorded, 16) - documents_digest(stored_refs)) % _DIGEST_MOD,
            (digest - files_digest((path, *now[path]) for path in moved)) % _DIGEST_MOD)
    look = FolderLook(Catalog(looked.docs_dir, stored_refs, list(catalog.errors)),
                      Catalog(looked.docs_dir, seen, list(catalog.errors)), runs, True, rest, len(now))
    if content_changed(look.stored, seen):
        return None, look
    # only touched (new mtime, same content): remember how they look now, and answer from stats again
    stages.refresh_catalog(touched_documents(look.stored, look.seen))
    record_moved(settings, stages, look, seen, runs)
    return _unchanged(looked.files, looked.errors, stages), None


def _unchanged(documents, errors, stages: StageStore) -> IngestSummary:
    scope = stages.read_scope() or {}  # nothing moved: what the last look left out still is
    # a stat-level look's files include the pages read and left out (a translation, a draft): not documents
    read_out = {r.get("doc_path") for r in scope.get("read") or []}
    documents = [d for d in documents if (d[0] if isinstance(d, tuple) else d.doc_path) not in read_out]
    return IngestSummary(
        left_out=dict(scope.get("left_out") or {}),
        default_language=str(scope.get("default_language") or ""),
        languages_from=str(scope.get("languages_from") or ""),
        translations_left_out=named_translations(dict(scope.get("pages") or {})),
        documents_discovered=len(documents) + len(errors),
        documents_unchanged=len(documents),
        documents_failed=len(errors),
        errors=[{"doc_path": e.path, "error": e.reason} for e in errors],
    )
