"""Per-document stage records, failures and the catalog, in the state database (state_db.py).

Every stage keeps one record per document: the content hash of the source file it was derived
from, a fingerprint of the settings that shaped it, and its payload (JSON). A stage whose record
matches the current source hash and fingerprint has nothing to do. Deciding that for a whole
corpus is one query over the small columns (`headers`), never a read of the payloads.

Records of one stage are written in batches, each batch one transaction: a crash leaves the old
records or the new, never half a record, and a reader in another process sees either.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Sequence

import sqlalchemy as sa

from rag_assets.models import Block, BlockType, Catalog, Chunk, DiscoveryError, DocumentRef, ParsedDocument
from rag_assets.index.state_db import StateDB, catalog_documents, catalog_errors, failures, local_state_url, stage_records

# the catalog's columns in DocumentRef's field order, so a row builds a ref positionally
_REF_COLUMNS = tuple(catalog_documents.c[f.name] for f in fields(DocumentRef))
_REFRESH_CATALOG_ROW = (
    catalog_documents.update()
    .where(catalog_documents.c.doc_path == sa.bindparam("new_doc_path"))
    .values({f.name: sa.bindparam(f"new_{f.name}") for f in fields(DocumentRef) if f.name != "doc_path"})
)

PARSED = "parsed"
BLOCKS = "blocks"
CHUNKS = "chunks"
EMBEDDED = "embedded"
INDEXED = "indexed"
STAGES = (PARSED, BLOCKS, CHUNKS, EMBEDDED, INDEXED)
_IN_CHUNK = 500  # keys per IN (...) clause: well under SQLite's bound-parameter limit
_CATALOG_DOCS_DIR = "catalog_docs_dir"
# what the last look at the folder left out of scope, by reason, and its languages (`rag corpora` shows it)
_SCOPE = "catalog_scope"


@dataclass(frozen=True)
class CatalogStats:
    """What StageStore.catalog_stats reads: the folder, doc path -> (size, mtime_ns, inode) of every
    document, the refused files, and whether any document imports another (its hash covers files
    a stat of its own cannot see)."""

    docs_dir: str
    files: dict[str, tuple[int, int, int]]
    errors: list[DiscoveryError]
    imports: bool


class StageStore:
    def __init__(self, db: StateDB | Path | str):
        # a folder means the local SQLite state in it (what tests and scripts pass); product code
        # uses for_settings so RAG_STATE_URL is honoured
        self.db = db if isinstance(db, StateDB) else StateDB.open(local_state_url(db))

    @classmethod
    def for_settings(cls, paths) -> "StageStore":
        """The state database of these paths (rag_assets.config.PathSettings: RAG_STATE_URL or RAG_STATE_DIR)."""
        return cls(StateDB.for_settings(paths))

    # records ---------------------------------------------------------------------------------
    def write(self, stage: str, doc_path: str, source_hash: str, payload: Any, fingerprint: str = "") -> None:
        self.write_many(stage, [(doc_path, source_hash, payload, fingerprint)])

    def write_many(self, stage: str, records: Sequence[tuple[str, str, Any, str]]) -> None:
        """(doc_path, source_hash, payload, fingerprint) records of one stage, in one transaction."""
        now = time.time()
        rows = [
            {"stage": stage, "doc_path": p, "source_hash": h, "fingerprint": fp or "",
             "payload": json.dumps(payload, ensure_ascii=False), "updated_at": now}
            for p, h, payload, fp in records
        ]
        with self.db.write() as conn:
            self.db.upsert(conn, stage_records, rows, ["stage", "doc_path"])

    def mark(self, stage: str, doc_paths: Sequence[str], fingerprint: str) -> None:
        """Set the fingerprint of existing records (e.g. "replacing" before the index is touched)."""
        with self.db.write() as conn:
            for part in _chunks(doc_paths):
                conn.execute(
                    stage_records.update()
                    .where(stage_records.c.stage == stage, stage_records.c.doc_path.in_(part))
                    .values(fingerprint=fingerprint)
                )

    def read(self, stage: str, doc_path: str) -> dict | None:
        return self.read_many(stage, [doc_path]).get(doc_path)

    def read_many(self, stage: str, doc_paths: Sequence[str]) -> dict[str, dict]:
        """doc_path -> {doc_path, source_hash, fingerprint, payload} for the records that exist."""
        out: dict[str, dict] = {}
        t = stage_records.c
        with self.db.read() as conn:
            for part in _chunks(doc_paths):
                rows = conn.execute(
                    sa.select(t.doc_path, t.source_hash, t.fingerprint, t.payload)
                    .where(t.stage == stage, t.doc_path.in_(part))
                )
                for doc_path, source_hash, fingerprint, payload in rows:
                    try:
                        data = json.loads(payload)
                    except ValueError:
                        continue  # an unreadable payload is a missing record: the stage redoes it
                    out[doc_path] = {"doc_path": doc_path, "source_hash": source_hash,
                                     "fingerprint": fingerprint, "payload": data}
        return out

    def headers(self, doc_paths: Sequence[str] | None = None) -> dict[str, dict[str, tuple[str, str]]]:
        """doc_path -> stage -> (source_hash, fingerprint), without reading any payload."""
        out: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
        t = stage_records.c
        query = sa.select(t.doc_path, t.stage, t.source_hash, t.fingerprint)
        parts, keep = _read_plan(doc_paths)
        with self.db.read() as conn:
            for part in parts:
                rows = conn.execute(query if part is None else query.where(t.doc_path.in_(part)))
                for doc_path, stage, source_hash, fingerprint in rows:
                    if keep is None or doc_path in keep:
                        out[doc_path][stage] = (source_hash, fingerprint)
        return out

    def is_current(self, stage: str, doc_path: str, source_hash: str, fingerprint: str = "") -> bool:
        head = self.headers([doc_path]).get(doc_path, {}).get(stage)
        return head == (source_hash, fingerprint or "")

    def delete(self, stage: str, doc_path: str) -> None:
        with self.db.write() as conn:
            conn.execute(stage_records.delete().where(stage_records.c.stage == stage, stage_records.c.doc_path == doc_path))

    def delete_documents(self, doc_paths: Sequence[str]) -> None:
        """Forget documents entirely: every stage record and any failure."""
        with self.db.write() as conn:
            for part in _chunks(doc_paths):
                conn.execute(stage_records.delete().where(stage_records.c.doc_path.in_(part)))
                conn.execute(failures.delete().where(failures.c.doc_path.in_(part)))

    def delete_document(self, doc_path: str) -> None:
        self.delete_documents([doc_path])

    def replace_fingerprint(self, stage: str, old: str, new: str) -> int:
        """Records of this stage carrying fingerprint `old` carry `new` instead (the same work, now
        known by another name: a collection copied to another store gets a new id); how many."""
        t = stage_records.c
        with self.db.write() as conn:
            return conn.execute(stage_records.update().where(t.stage == stage, t.fingerprint == old)
                                .values(fingerprint=new)).rowcount

    def fingerprints(self, stage: str) -> dict[str, int]:
        """fingerprint -> how many documents' records of this stage carry it."""
        t = stage_records.c
        with self.db.read() as conn:
            return dict(conn.execute(sa.select(t.fingerprint, sa.func.count()).where(t.stage == stage)
                                     .group_by(t.fingerprint)).all())

    def chunk_ids(self) -> set[str]:
        """The ids of every chunk the chunk records hold."""
        ids: set[str] = set()
        t = stage_records.c
        with self.db.read() as conn:
            for (payload,) in conn.execute(sa.select(t.payload).where(t.stage == CHUNKS)):
                try:
                    ids.update(c["chunk_id"] for c in json.loads(payload))
                except (ValueError, KeyError, TypeError):
                    continue
        return ids

    def doc_paths(self, stage: str | None = None) -> set[str]:
        t = stage_records.c
        query = sa.select(t.doc_path).distinct()
        if stage is not None:
            query = query.where(t.stage == stage)
        with self.db.read() as conn:
            return {row[0] for row in conn.execute(query)}

    # failures: one record per document, cleared when the document next succeeds --------------
    def record_failure(self, doc_path: str, source_hash: str, stage: str, error: str) -> None:
        self.record_failures(stage, [(doc_path, source_hash, error)])

    def record_failures(self, stage: str, items: Sequence[tuple[str, str, str]]) -> None:
        now = time.time()
        rows = [{"doc_path": p, "source_hash": h, "stage": stage, "error": e, "recorded_at": now} for p, h, e in items]
        with self.db.write() as conn:
            self.db.upsert(conn, failures, rows, ["doc_path"])

    def clear_failure(self, doc_path: str, stage: str) -> None:
        self.clear_failures(stage, [doc_path])

    def clear_failures(self, stage: str, doc_paths: Sequence[str]) -> None:
        with self.db.write() as conn:
            for part in _chunks(doc_paths):
                conn.execute(failures.delete().where(failures.c.stage == stage, failures.c.doc_path.in_(part)))

    def failure(self, doc_path: str, source_hash: str) -> dict | None:
        found = self.failures([doc_path]).get(doc_path)
        return found if found and found["source_hash"] == source_hash else None

    def failures(self, doc_paths: Sequence[str] | None = None) -> dict[str, dict]:
        """doc_path -> {stage, error, source_hash} of every recorded failure (of these documents)."""
        t = failures.c
        query = sa.select(t.doc_path, t.source_hash, t.stage, t.error)
        out: dict[str, dict] = {}
        parts, keep = _read_plan(doc_paths)
        with self.db.read() as conn:
            for part in parts:
                for doc_path, source_hash, stage, error in conn.execute(query if part is None else query.where(t.doc_path.in_(part))):
                    if keep is None or doc_path in keep:
                        out[doc_path] = {"stage": stage, "error": error, "source_hash": source_hash}
        return out

    # the catalog of the last discovery ---------------------------------------------------------
    def write_catalog(self, catalog: Catalog) -> None:
        """Replace the stored catalog with this one, in one transaction."""
        docs = [asdict(d) for d in catalog.documents]
        errors = [{"path": e.path, "reason": e.reason} for e in {e.path: e for e in catalog.errors}.values()]
        with self.db.write() as conn:
            # a page whose language moved with no change of its own (a locale folder appeared, the default
            # changed): its records are forgotten, so the next run gives its chunks the new language
            c = catalog_documents.c
            before = dict(conn.execute(sa.select(c.doc_path, c.language)).all())
            moved = [d.doc_path for d in catalog.documents
                     if d.doc_path in before and before[d.doc_path] and d.language != before[d.doc_path]]
            for part in _chunks(moved):
                conn.execute(stage_records.delete().where(stage_records.c.doc_path.in_(part)))
            conn.execute(catalog_documents.delete())
            conn.execute(catalog_errors.delete())
            for start in range(0, len(docs), 1000):
                conn.execute(catalog_documents.insert(), docs[start : start + 1000])
            if errors:
                conn.execute(catalog_errors.insert(), errors)
            self.db.set_meta(_CATALOG_DOCS_DIR, catalog.docs_dir, conn)
            self.db.set_meta(_SCOPE, json.dumps(scope_record(catalog), ensure_ascii=False), conn)

    def write_scope(self, catalog: Catalog) -> None:
        """Record what this look at the folder left out of scope (a look that needs no catalog run)."""
        with self.db.write() as conn:
            self.db.set_meta(_SCOPE, json.dumps(scope_record(catalog), ensure_ascii=False), conn)

    def read_scope(self) -> dict | None:
        """What the last look at the folder left out: {"left_out": {reason: pages}, "documents_left_out",
        "default_language", "languages": {code: pages}, "pages": {doc path: reason}, "page_languages":
        {doc path: language} (the translations'; absent when recorded by an earlier version)}; None before any."""
        raw = self.db.get_meta(_SCOPE)
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def refresh_catalog(self, refs: Sequence[DocumentRef]) -> None:
        """Record these documents' new fingerprints in the stored catalog (a run re-fingerprinted
        them), so the catalog stays "each file as last seen". Only files it already lists: which
        files exist is the catalog run's to decide."""
        if not refs:
            return
        # one statement for every row (compiled once, executemany): a statement per row cost 0.25 ms
        # to build and compile, 0.25 s of a 1,000-page ingest
        rows = [{f"new_{k}": v for k, v in asdict(ref).items()} for ref in refs]
        with self.db.write() as conn:
            conn.execute(_REFRESH_CATALOG_ROW, rows)

    def add_to_catalog(self, refs: Sequence[DocumentRef]) -> None:
        """Record new documents in the stored catalog (an ingest that registered them without a
        catalog run: new files are all that changed); a row already there for a path is replaced."""
        if not refs:
            return
        with self.db.write() as conn:
            for part in _chunks([r.doc_path for r in refs]):
                conn.execute(catalog_documents.delete().where(catalog_documents.c.doc_path.in_(part)))
            conn.execute(catalog_documents.insert(), [asdict(r) for r in refs])

    def forget_fingerprints(self, doc_paths: Sequence[str]) -> None:
        """Make the next look hash these files again even if their size, mtime and inode did not
        move (`rag ingest-doc --force`: a tool that keeps mtimes, `cp -p`, a restored backup)."""
        with self.db.write() as conn:
            for part in _chunks(doc_paths):
                conn.execute(catalog_documents.update().where(catalog_documents.c.doc_path.in_(part)).values(mtime_ns=0))

    def catalog_by_partition_key(self, keys: Sequence[str]) -> dict[str, DocumentRef]:
        """The stored catalog's entries for these partition keys (a run's documents), nothing else."""
        return {ref.partition_key: ref for ref in self._catalog_where("partition_key", keys)}

    def catalog_by_doc_path(self, doc_paths: Sequence[str]) -> dict[str, DocumentRef]:
        """The stored catalog's entries for these documents, nothing else."""
        return {ref.doc_path: ref for ref in self._catalog_where("doc_path", doc_paths)}

    def _catalog_where(self, column: str, values: Sequence[str]) -> list[DocumentRef]:
        refs: list[DocumentRef] = []
        with self.db.read() as conn:
            for part in _chunks(values):
                rows = conn.execute(sa.select(*_REF_COLUMNS).where(catalog_documents.c[column].in_(part)))
                refs.extend(DocumentRef(*row) for row in rows)
        return refs

    def catalog_stats(self) -> CatalogStats | None:
        """The stored catalog as a stat sees it, without a DocumentRef per row (0.1 s against 0.6 s
        for read_catalog at 100,000 documents); None when no catalog is stored."""
        docs_dir = self.db.get_meta(_CATALOG_DOCS_DIR)
        if docs_dir is None:
            return None
        c = catalog_documents.c
        with self.db.read() as conn:
            # the driver's own cursor: SQLAlchemy's rows double the time of 100,000 small ones
            cursor = conn.connection.cursor()
            try:
                cursor.execute("SELECT doc_path, size_bytes, mtime_ns, inode FROM catalog_documents")
                files = {path: (size, mtime_ns, inode) for path, size, mtime_ns, inode in cursor.fetchall()}
            finally:
                cursor.close()
            imports = conn.execute(sa.select(c.doc_path).where(c.imports != "").limit(1)).first() is not None
            errors = [DiscoveryError(path, reason) for path, reason in conn.execute(sa.select(catalog_errors.c.path, catalog_errors.c.reason))]
        return CatalogStats(docs_dir, files, errors, imports)

    def catalog_folder(self) -> str | None:
        """The folder the stored catalog lists documents of; None when it lists none (a catalog
        read without reading it: ~0.5 s less at 100,000 documents)."""
        docs_dir = self.db.get_meta(_CATALOG_DOCS_DIR)
        if docs_dir is None:
            return None
        with self.db.read() as conn:
            any_document = conn.execute(sa.select(catalog_documents.c.doc_path).limit(1)).first()
        return docs_dir if any_document else None

    def read_catalog(self) -> Catalog | None:
        docs_dir = self.db.get_meta(_CATALOG_DOCS_DIR)
        if docs_dir is None:
            return None
        with self.db.read() as conn:
            # positional: half the time of DocumentRef(**row._asdict()) (0.6 s against 1.25 s at 100,000)
            documents = [DocumentRef(*row) for row in conn.execute(sa.select(*_REF_COLUMNS).order_by(catalog_documents.c.doc_path))]
            errors = [DiscoveryError(path, reason) for path, reason in conn.execute(sa.select(catalog_errors.c.path, catalog_errors.c.reason))]
        catalog = Catalog(docs_dir=docs_dir, documents=documents, errors=errors)
        scope = self.read_scope() or {}
        try:
            catalog.left_out_refs = [DocumentRef(**r) for r in scope.get("read") or []]
        except TypeError:  # recorded by another version: the next look reads those pages again
            catalog.left_out_refs = []
        catalog.left_out = dict(scope.get("pages") or {})
        catalog.left_out_languages = dict(scope.get("page_languages") or {})
        catalog.left_out_read = [r.doc_path for r in catalog.left_out_refs]
        catalog.default_language = str(scope.get("default_language") or "")
        return catalog


def scope_record(catalog: Catalog) -> dict:
    """The scope of a catalog as StageStore records it (read_scope)."""
    counts: dict[str, int] = {}
    for reason in catalog.left_out.values():
        counts[reason] = counts.get(reason, 0) + 1
    return {"left_out": dict(sorted(counts.items(), key=lambda kv: -kv[1])), "documents_left_out": len(catalog.left_out),
            "default_language": catalog.default_language, "languages": catalog.languages,
            "pages": dict(sorted(catalog.left_out.items())),
            "page_languages": dict(sorted(catalog.left_out_languages.items())),
            "read": [asdict(r) for r in catalog.left_out_refs]}


# Asked about this many documents or more, a read scans the table once and keeps theirs: ~2x
# faster at 100,000 documents than 100 `IN (...)` queries of 1,000.
_SCAN_FROM = 5_000


def _read_plan(doc_paths: Sequence[str] | None) -> tuple[list[list[str] | None], set[str] | None]:
    """(the IN-lists to query, None = one scan of the table; the doc paths to keep from a scan, None = every row)."""
    if doc_paths is None:
        return [None], None
    if len(doc_paths) >= _SCAN_FROM:
        return [None], set(doc_paths)
    return list(_chunks(doc_paths)), None


def _chunks(items: Iterable[str]) -> Iterable[list[str]]:
    items = list(items)
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


# (de)serialisation of the stage payloads
def parsed_from_dict(data: dict) -> ParsedDocument:
    return ParsedDocument(**data)


def blocks_from_list(data: list[dict]) -> list[Block]:
    return [Block(**{**b, "type": BlockType(b["type"])}) for b in data]


def blocks_to_list(blocks: list[Block]) -> list[dict]:
    return [{**asdict(b), "type": b.type.value} for b in blocks]


def chunks_from_list(data: list[dict]) -> list[Chunk]:
    return [Chunk(**c) for c in data]
