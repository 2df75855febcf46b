"""Invariants of a healthy index, as plain functions; the Dagster asset checks call these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rag_assets.models import Catalog
from rag_assets.stage_store import CHUNKS, INDEXED, StageStore

REQUIRED_CHUNK_FIELDS = ("chunk_id", "content_hash", "doc_path", "text", "index_text")
REQUIRED_CHUNK_METADATA = ("title",)


@dataclass
class Finding:
    passed: bool
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _current_chunks(stages: StageStore, catalog: Catalog):
    for ref in catalog.documents:
        record = stages.read(CHUNKS, ref.doc_path)
        if record and record["source_hash"] == ref.content_hash:
            yield ref.doc_path, record["payload"]


def chunks_within_limit(stages: StageStore, catalog: Catalog, fits: Callable[[str], bool]) -> Finding:
    """No chunk is silently truncated: any chunk over the embedder's limit must be a flagged atomic block."""
    silent, flagged, total = [], [], 0
    for doc_path, chunks in _current_chunks(stages, catalog):
        for c in chunks:
            total += 1
            if not fits(c["index_text"] or c["text"]):
                (flagged if c["oversized"] else silent).append(f"{doc_path}#{c['chunk_index']}")
    problems = [f"{p}: over the embedder's input limit and not flagged" for p in silent]
    problems += [f"{p}: oversized atomic block (code/table), truncated by the model" for p in flagged[:50]]
    return Finding(not silent, problems, {"chunks": total, "silently_truncated": len(silent), "oversized_flagged": len(flagged)})


def chunk_metadata_complete(stages: StageStore, catalog: Catalog) -> Finding:
    problems, total = [], 0
    for doc_path, chunks in _current_chunks(stages, catalog):
        for c in chunks:
            total += 1
            missing = [f for f in REQUIRED_CHUNK_FIELDS if not c.get(f)]
            missing += [f"metadata.{k}" for k in REQUIRED_CHUNK_METADATA if not c["metadata"].get(k)]
            if c.get("token_count", 0) <= 0:
                missing.append("token_count")
            if missing:
                problems.append(f"{doc_path}#{c.get('chunk_index')}: missing {', '.join(missing)}")
    return Finding(not problems, problems[:100], {"chunks": total, "incomplete": len(problems)})


def documents_indexed(stages: StageStore, catalog: Catalog) -> Finding:
    """Every document of the catalog is in the index at its current version; failures say why."""
    problems, indexed = [], 0
    for ref in catalog.documents:
        record = stages.read(INDEXED, ref.doc_path)
        if record and record["source_hash"] == ref.content_hash:
            indexed += 1
            continue
        failure = stages.failure(ref.doc_path, ref.content_hash)
        stale = " (an older version stays indexed)" if record else ""
        problems.append(f"{ref.doc_path}: {failure['error'] if failure else 'not indexed yet'}{stale}")
    problems += [f"{e.path}: {e.reason}" for e in catalog.errors]
    return Finding(not problems, problems, {"documents": len(catalog.documents), "indexed": indexed,
                                            "not_indexed": len(catalog.documents) - indexed,
                                            "discovery_errors": len(catalog.errors)})


def index_matches_records(stages: StageStore, catalog: Catalog, store) -> Finding:
    """The vectors in Chroma are exactly the chunks the index records list: no orphans, no gaps."""
    expected: set[str] = set()
    for ref in catalog.documents:
        record = stages.read(INDEXED, ref.doc_path)
        if record:
            expected.update(record["payload"]["chunk_ids"])
    actual = store.ids()
    orphans, gaps = actual - expected, expected - actual
    problems = [f"{len(orphans)} vectors belong to no current document"] if orphans else []
    problems += [f"{len(gaps)} recorded chunks are missing from Chroma"] if gaps else []
    return Finding(not problems, problems, {"vectors": len(actual), "expected": len(expected),
                                            "orphans": len(orphans), "missing": len(gaps)})
