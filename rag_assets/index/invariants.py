"""Invariants of a healthy index, as plain functions over a set of documents.

The Dagster checks call them with the documents of the run that just happened (cost proportional
to the run); `index_audit` calls them with the whole catalog, plus the store-wide orphan count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from rag_assets.models import DiscoveryError, DocumentRef
from rag_assets.index.stage_store import CHUNKS, INDEXED, StageStore

REQUIRED_CHUNK_FIELDS = ("chunk_id", "content_hash", "doc_path", "text", "index_text")
REQUIRED_CHUNK_METADATA = ("title",)
_WINDOW = 200


@dataclass
class Finding:
    passed: bool
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _current_chunks(stages: StageStore, refs: Sequence[DocumentRef]) -> Iterator[tuple[str, list[dict]]]:
    for start in range(0, len(refs), _WINDOW):
        window = refs[start : start + _WINDOW]
        records = stages.read_many(CHUNKS, [r.doc_path for r in window])
        for ref in window:
            record = records.get(ref.doc_path)
            if record and record["source_hash"] == ref.content_hash:
                yield ref.doc_path, record["payload"]


def chunks_within_limit(stages: StageStore, refs: Sequence[DocumentRef], fits: Callable[[str], bool]) -> Finding:
    """No chunk is silently truncated: any chunk over the embedder's limit must be a flagged atomic block."""
    return chunk_checks(stages, refs, fits)[0]


def chunk_metadata_complete(stages: StageStore, refs: Sequence[DocumentRef]) -> Finding:
    """Every chunk carries its id, hash, text, index text, token count and title."""
    return chunk_checks(stages, refs, None)[1]


def chunk_checks(stages: StageStore, refs: Sequence[DocumentRef],
                 fits: Callable[[str], bool] | None) -> tuple[Finding, Finding]:
    """(chunks_within_limit, chunk_metadata_complete) from one read of the documents' chunk records
    (each payload deserialised once for both; ``fits`` None: the limit is not checked)."""
    silent, flagged, problems, total = [], [], [], 0
    for doc_path, chunks in _current_chunks(stages, refs):
        for c in chunks:
            total += 1
            if fits is not None and not fits(c["index_text"] or c["text"]):
                (flagged if c["oversized"] else silent).append(f"{doc_path}#{c['chunk_index']}")
            missing = [f for f in REQUIRED_CHUNK_FIELDS if not c.get(f)]
            missing += [f"metadata.{k}" for k in REQUIRED_CHUNK_METADATA if not c["metadata"].get(k)]
            if c.get("token_count", 0) <= 0:
                missing.append("token_count")
            if missing:
                problems.append(f"{doc_path}#{c.get('chunk_index')}: missing {', '.join(missing)}")
    over = [f"{p}: over the embedder's input limit and not flagged" for p in silent]
    over += [f"{p}: oversized atomic block (code/table), truncated by the model" for p in flagged[:50]]
    return (Finding(not silent, over, {"documents": len(refs), "chunks": total, "silently_truncated": len(silent),
                                       "oversized_flagged": len(flagged)}),
            Finding(not problems, problems[:100], {"documents": len(refs), "chunks": total, "incomplete": len(problems)}))


def documents_indexed(
    stages: StageStore, refs: Sequence[DocumentRef], discovery_errors: Sequence[DiscoveryError] = ()
) -> Finding:
    """Every one of these documents is in the index at its current version; failures say why."""
    heads = stages.headers([r.doc_path for r in refs])
    failures = stages.failures([r.doc_path for r in refs])
    problems, indexed = [], 0
    for ref in refs:
        record = heads.get(ref.doc_path, {}).get(INDEXED)
        if record and record[0] == ref.content_hash:
            indexed += 1
            continue
        failure = failures.get(ref.doc_path)
        reason = failure["error"] if failure and failure["source_hash"] == ref.content_hash else "not indexed yet"
        stale = " (an older version stays indexed)" if record else ""
        problems.append(f"{ref.doc_path}: {reason}{stale}")
    problems += [f"{e.path}: {e.reason}" for e in discovery_errors]
    return Finding(not problems, problems[:200], {"documents": len(refs), "indexed": indexed,
                                                  "not_indexed": len(refs) - indexed,
                                                  "discovery_errors": len(discovery_errors)})


def index_matches_records(stages: StageStore, refs: Sequence[DocumentRef], store, whole_store: bool = False) -> Finding:
    """The vectors of these documents are exactly the chunks their index records list: no
    orphans, no gaps. With whole_store, every vector of the store must belong to one of them."""
    records = {}
    for start in range(0, len(refs), _WINDOW):
        records.update(stages.read_many(INDEXED, [r.doc_path for r in refs[start : start + _WINDOW]]))
    expected = {cid for record in records.values() for cid in record["payload"]["chunk_ids"]}
    if whole_store:
        actual = store.ids()
    else:
        actual = {cid for doc in store.ids_of([r.doc_path for r in refs]).values() for cid in doc}
    orphans, gaps = actual - expected, expected - actual
    problems = [f"{len(orphans)} vectors belong to no current document"] if orphans else []
    problems += [f"{len(gaps)} recorded chunks are missing from the store"] if gaps else []
    return Finding(not problems, problems, {"documents": len(refs), "vectors": len(actual), "expected": len(expected),
                                            "orphans": len(orphans), "missing": len(gaps)})
