"""The index stage: each document's chunks and cached vectors written to the vector store, several
documents per store call, then committed to the search snapshot, under the documents' locks, with a
crash leaving a record that is not current; and vanished documents removed the same way.
No Dagster import here.
"""

from __future__ import annotations

import time
import traceback
from typing import Protocol, Sequence

import numpy as np

from rag_assets.errors import VectorDBUnavailableError
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.index.generation import bump_generation
from rag_assets.index.locks import DocumentLocks
from rag_assets.index.stage_store import CHUNKS, EMBEDDED, INDEXED, StageStore, chunks_from_list
from rag_assets.ingest.stage_windows import StageReport, commit_window, groups_of, held, ready_documents, windows
from rag_assets.models import Chunk, DocumentRef
from rag_assets.progress import ProgressEvent, Reporter, no_progress

# Chunks per batched Chroma replace (several documents in one lookup/upsert/delete).
INDEX_GROUP_CHUNKS = 2000
REPLACING = "replacing"  # an index record's fingerprint while its document's vectors are replaced


def index_fingerprint(collection_name: str, collection_id: str, embedding_model: str) -> str:
    # the collection's id changes when it is deleted and recreated: every document is then rewritten
    return f"{collection_name}:{collection_id}:{embedding_model}"


def store_fingerprint(store) -> str:
    return index_fingerprint(store.collection_name, store.collection_id, store.embedding_model)


class SnapshotCommits(Protocol):
    """What the stages tell the search snapshot (rag_assets.retrieval.snapshot_writer.SnapshotWriter)
    after they change the store: each call commits the snapshot and sets a new index generation."""

    def replace(self, documents: Sequence[tuple[str, Sequence[Chunk], np.ndarray]]) -> str: ...

    def remove(self, doc_paths: Sequence[str]) -> str: ...


def run_index(
    refs: Sequence[DocumentRef],
    stages: StageStore,
    store,
    cache: EmbeddingCache,
    chunks_fingerprint: str,
    progress: Reporter = no_progress,
    locks: DocumentLocks | None = None,
    snapshot: SnapshotCommits | None = None,
) -> StageReport:
    """Write each document's chunks to the store, several documents per store call.

    Per document the order is: its index record marked "replacing", new and changed vectors
    written, stale vectors deleted, the search snapshot committed (``snapshot``: the same chunks and
    vectors), the record written, all under the document's lock (another worker writing the same
    document waits). A crash anywhere leaves a record that is not current, so the next run redoes the
    document (even if the file was reverted meanwhile) and commits it. Without ``snapshot`` the
    index generation is bumped at the end when the store changed (readers then rebuild the snapshot
    from the store)."""
    model = store.embedding_model
    fingerprint = store_fingerprint(store)
    report = StageReport(INDEXED)
    start = time.perf_counter()
    written = deleted = done = 0

    for window in windows(refs):
        todo = ready_documents(window, stages, report, INDEXED, fingerprint, EMBEDDED, model)
        chunk_records = stages.read_many(CHUNKS, [r.doc_path for r in todo]) if todo else {}
        batch, errors = [], []
        for ref in todo:
            chunks = chunks_from_list(chunk_records.get(ref.doc_path, {}).get("payload") or [])
            vectors = cache.get_many(model, [c.content_hash for c in chunks])
            missing = [c for c in chunks if c.content_hash not in vectors]
            if missing:
                errors.append((ref, f"{ref.doc_path}: {len(missing)} chunk embeddings missing from the cache; re-run embedding"))
                continue
            matrix = np.stack([vectors[c.content_hash] for c in chunks]) if chunks else np.zeros((0, store.dimension))
            batch.append((ref, chunks, matrix))
        for group in groups_of(batch, INDEX_GROUP_CHUNKS):
            with held(locks, [ref.doc_path for ref, _, _ in group]):
                w, d = _replace_group(group, stages, store, fingerprint, report, errors, snapshot)
            written, deleted = written + w, deleted + d
        commit_window(stages, INDEXED, report, [], errors)
        done += len(window)
        progress(ProgressEvent("index", done, len(refs)))

    if snapshot is None and (written or deleted):
        bump_generation(stages.db)
    try:
        count = store.count()
    except VectorDBUnavailableError:
        count = -1  # the store went away mid-run: the failed documents already say so
    report.seconds = time.perf_counter() - start
    report.stats = {"vectors_written": written, "vectors_deleted": deleted, "collection_count": count}
    return report


def _replace_group(group, stages: StageStore, store, fingerprint: str, report: StageReport, errors: list,
                   snapshot: SnapshotCommits | None = None) -> tuple[int, int]:
    """Replace a group of documents with one batched store call (on failure, one by one), then commit
    them to the search snapshot; a document is recorded indexed only once both are done."""
    stages.mark(INDEXED, [ref.doc_path for ref, _, _ in group], REPLACING)
    try:
        results = store.replace_documents([(ref.doc_path, chunks, matrix) for ref, chunks, matrix in group])
    except VectorDBUnavailableError as exc:
        errors.extend((ref, f"{ref.doc_path}: {exc}") for ref, _, _ in group)
        return 0, 0
    except Exception:
        if len(group) == 1:
            ref = group[0][0]
            message = traceback.format_exc(limit=1).strip().splitlines()[-1]
            errors.append((ref, message if ref.doc_path in message else f"{ref.doc_path}: {message}"))
            return 0, 0
        written = deleted = 0
        for item in group:  # isolate the document the store refuses
            w, d = _replace_group([item], stages, store, fingerprint, report, errors, snapshot)
            written, deleted = written + w, deleted + d
        return written, deleted
    if snapshot is not None:
        try:
            snapshot.replace([(ref.doc_path, chunks, matrix) for ref, chunks, matrix in group])
        except VectorDBUnavailableError as exc:  # a snapshot rebuilt from a store that went away
            errors.extend((ref, f"{ref.doc_path}: {exc}") for ref, _, _ in group)
            return 0, 0
        except OSError as exc:  # not recorded indexed: the next run commits them again
            errors.extend((ref, f"{ref.doc_path}: the search snapshot could not be written: {exc}") for ref, _, _ in group)
            return 0, 0
    records = []
    for ref, chunks, _ in group:
        result = results[ref.doc_path]
        records.append((ref.doc_path, ref.content_hash, {"chunk_ids": [c.chunk_id for c in chunks], "model": store.embedding_model}, fingerprint))
        report.processed.append(ref.doc_path)
        report.per_document[ref.doc_path] = {
            "vectors_written": result.written, "vectors_deleted": result.deleted, "vectors_unchanged": result.unchanged
        }
    stages.write_many(INDEXED, records)
    stages.clear_failures(INDEXED, [r[0] for r in records])
    return sum(r.written for r in results.values()), sum(r.deleted for r in results.values())



def remove_documents(
    doc_paths: Sequence[str], stages: StageStore, store, locks: DocumentLocks | None = None,
    snapshot: SnapshotCommits | None = None,
) -> dict[str, int]:
    """Forget documents that vanished: their vectors first (found by doc_path), then the search
    snapshot's copy, then their records (a crash before the last step: the next catalog run removes
    them again)."""
    doc_paths = list(doc_paths)
    with held(locks, doc_paths):
        removed = store.delete_documents(doc_paths) if store is not None and doc_paths else {p: 0 for p in doc_paths}
        if snapshot is not None and doc_paths:
            snapshot.remove(doc_paths)
        stages.delete_documents(doc_paths)
    if snapshot is None and any(removed.values()):
        bump_generation(stages.db)
    return removed

