"""The per-document stages run over a batch of documents, with skip, failure isolation and stats.

Each `run_*` function takes the documents of one run (possibly hundreds), does the stage's work
(parse, split and chunk: one step each of rag_assets.ingest.document, the road every other way of
ingesting a document takes too) only for documents whose input changed, records every failure against the document without
stopping the others, and returns a StageReport the Dagster layer turns into metadata.
Documents are handled in windows: each window's upstream records are read with one query and its
results written in one transaction, so the cost per document is the work, not the bookkeeping.
`stale_documents` is the one rule for "what still needs work", used by the CLI, the sensor and
the assets alike. No Dagster import here: the same functions run under plain pytest.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections import Counter
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Protocol, Sequence

import numpy as np

from rag_assets.ingest import ids, mdx
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.document import (ChunkSettings, ParseSettings, chunk_blocks, parse_document, split_document,
                                        token_stats)
from rag_assets.ingest.document_metadata import MetadataPolicy
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.errors import DocumentError, EmbeddingServiceUnavailable, VectorDBUnavailableError
from rag_assets.index.generation import bump_generation
from rag_assets.index.locks import DocumentLocks
from rag_assets.models import Block, BlockType, Chunk, DocumentRef
from rag_assets.progress import ProgressEvent, Reporter, no_progress
from rag_assets.index.stage_store import (
    BLOCKS,
    CHUNKS,
    EMBEDDED,
    INDEXED,
    PARSED,
    StageStore,
    blocks_from_list,
    blocks_to_list,
    chunks_from_list,
    parsed_from_dict,
)
from rag_assets.ingest.tokens import TokenCounter

log = logging.getLogger(__name__)

# Documents per window: one read query and one write transaction each.
WINDOW_DOCS = 100
# Embed changed documents in groups of about this many chunks: large enough for full batches,
# small enough that a big run never holds every chunk in memory at once.
EMBED_GROUP_CHUNKS = 2048
# Texts per embedder call inside a group: progress moves, and the length sort still pays.
EMBED_CALL_TEXTS = 256
# Chunks per batched Chroma replace (several documents in one lookup/upsert/delete).
INDEX_GROUP_CHUNKS = 2000
REPLACING = "replacing"  # an index record's fingerprint while its document's vectors are replaced
# The splitter's version (and the MDX renderer's, whose output it splits): a new one re-splits every document.
SPLIT_FINGERPRINT = f"blocks-v3:{mdx.RENDER_VERSION}"


@dataclass
class StageReport:
    stage: str
    processed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # doc_path -> reason
    skipped: dict[str, str] = field(default_factory=dict)  # doc_path -> why (upstream not current)
    stats: dict[str, float | int | str] = field(default_factory=dict)
    per_document: dict[str, dict] = field(default_factory=dict)  # doc_path -> metadata of that document
    seconds: float = 0.0

    @property
    def errors(self) -> list[dict[str, str]]:
        return [{"doc_path": p, "error": e} for p, e in sorted(self.failed.items())]


@dataclass(frozen=True)
class Fingerprints:
    """What each stage's record must carry to be current, besides the source hash."""

    chunks: str  # chunking_fingerprint(...)
    embedded: str  # the embedding model
    indexed: str  # index_fingerprint(...): the collection the vectors are in
    parsed: str = MetadataPolicy().fingerprint  # the metadata policy documents were completed with

    def of(self, stage: str) -> str:
        return {PARSED: self.parsed, BLOCKS: SPLIT_FINGERPRINT, CHUNKS: self.chunks, EMBEDDED: self.embedded, INDEXED: self.indexed}[stage]


STALE_ORDER = (PARSED, BLOCKS, CHUNKS, EMBEDDED, INDEXED)


def stale_documents(refs: Sequence[DocumentRef], stages: StageStore, fingerprints: Fingerprints) -> dict[str, str]:
    """THE rule for "this document still needs work": doc_path -> why, for every document a stage
    has to (re)do: a new or edited file, changed settings, a rebuilt collection, an index record
    left "replacing" by a crash, or a failure to retry. Headers only: no payload is read."""
    paths = [r.doc_path for r in refs]
    headers = stages.headers(paths)
    failed = stages.failures(paths)
    stale: dict[str, str] = {}
    for ref in refs:
        failure = failed.get(ref.doc_path)
        if failure and failure["source_hash"] == ref.content_hash:
            stale[ref.doc_path] = f"failed at {failure['stage']}: retried"
            continue
        head = headers.get(ref.doc_path, {})
        for stage in STALE_ORDER:
            record = head.get(stage)
            if record is None:
                stale[ref.doc_path] = f"{stage}: no record" if head else "new"
                break
            if record[0] != ref.content_hash:
                stale[ref.doc_path] = "file changed"
                break
            if record[1] != fingerprints.of(stage):
                stale[ref.doc_path] = "interrupted replace" if record[1] == REPLACING else f"{stage}: settings changed"
                break
    return stale


def _windows(items: Sequence) -> Iterable[Sequence]:
    size = WINDOW_DOCS
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _run_each(
    stage: str,
    refs: Sequence[DocumentRef],
    stages: StageStore,
    fingerprint: str,
    upstream: Sequence[tuple[str, str]],
    work: Callable[[DocumentRef, list[dict]], tuple[object, dict]],
    progress: Reporter = no_progress,
) -> StageReport:
    """Run `work(ref, upstream_payloads) -> (payload, per_doc_stats)` for each stale document.

    `upstream` lists the (stage, fingerprint) records the work reads, the first being the one this
    stage follows: a document whose upstream record is missing or stale is skipped, not failed."""
    report = StageReport(stage)
    start = time.perf_counter()
    done = 0
    for window in _windows(refs):
        paths = [r.doc_path for r in window]
        heads = stages.headers(paths)
        failed = stages.failures(paths) if upstream else {}
        todo = []
        for ref in window:
            mine = heads.get(ref.doc_path, {}).get(stage)
            if mine == (ref.content_hash, fingerprint):
                report.unchanged.append(ref.doc_path)
                continue
            first, first_fp = upstream[0] if upstream else (None, "")
            up = heads.get(ref.doc_path, {}).get(first) if first else None
            if first and (up is None or up[0] != ref.content_hash or (first_fp and up[1] != first_fp)):
                failure = failed.get(ref.doc_path)
                report.skipped[ref.doc_path] = (
                    f"{first} failed: {failure['error']}" if failure and failure["source_hash"] == ref.content_hash
                    else f"{first} not materialized for this version"
                )
                continue
            todo.append(ref)
        payloads = {s: stages.read_many(s, [r.doc_path for r in todo]) for s, _ in upstream} if todo else {}
        results, errors = [], []
        for ref in todo:
            try:
                inputs = [payloads[s][ref.doc_path]["payload"] for s, _ in upstream]
                payload, doc_stats = work(ref, inputs)
            except DocumentError as exc:
                errors.append((ref, str(exc)))
                continue
            except Exception as exc:  # one bad document never stops the others
                errors.append((ref, f"{ref.doc_path}: {type(exc).__name__}: {exc}"))
                traceback.print_exc()
                continue
            results.append((ref.doc_path, ref.content_hash, payload, fingerprint))
            report.processed.append(ref.doc_path)
            report.per_document[ref.doc_path] = doc_stats
        _commit(stages, stage, report, results, errors)
        done += len(window)
        progress(ProgressEvent(stage, done, len(refs)))
    report.seconds = time.perf_counter() - start
    return report


def _commit(stages: StageStore, stage: str, report: StageReport, results: list, errors: list) -> None:
    """A window's records and failures, written together; successes clear their old failures."""
    if results:
        stages.write_many(stage, results)
        stages.clear_failures(stage, [r[0] for r in results])
    if errors:
        stages.record_failures(stage, [(ref.doc_path, ref.content_hash, message) for ref, message in errors])
        for ref, message in errors:
            report.failed[ref.doc_path] = message


# 1-2. frontmatter -----------------------------------------------------------------------------
def run_parse(refs: Sequence[DocumentRef], stages: StageStore, progress: Reporter = no_progress,
              policy: MetadataPolicy = MetadataPolicy(), max_file_bytes: int = 5_000_000) -> StageReport:
    """Frontmatter parsed, MDX rendered with imported snippets expanded (rag_assets.ingest.snippets),
    and the guaranteed metadata filled in (rag_assets.ingest.document_metadata); a document that
    misses required metadata fails by name (InvalidDocumentError)."""
    parse = ParseSettings(policy, max_file_bytes)

    def work(ref: DocumentRef, _):
        doc, record = parse_document(ref, parse)
        return asdict(doc), record

    report = _run_each(PARSED, refs, stages, policy.fingerprint, [], work, progress)
    report.stats = {
        "documents_parsed": len(report.processed),
        "snippets_expanded": sum(d.get("snippets_expanded", 0) for d in report.per_document.values()),
        "mdx_warnings": sum(d.get("mdx_warnings", 0) for d in report.per_document.values()),
        "metadata_warnings": sum(d.get("metadata_warnings", 0) for d in report.per_document.values()),
        **unrendered_stats(report.per_document.values()),
    }
    return report


def unrendered_stats(records: Iterable[dict]) -> dict:
    """The components (and MDX expressions) whose text comes from the site's code, over the parsed
    documents' records: how many, and how many of each name (the most frequent first)."""
    by_name: Counter[str] = Counter()
    for record in records:
        by_name.update(record.get("unrendered_by_name") or {})
    return {"unrendered_components": sum(by_name.values()), "unrendered_by_name": dict(by_name.most_common())}


# 3. markdown splitting ------------------------------------------------------------------------
def run_split(refs: Sequence[DocumentRef], stages: StageStore, progress: Reporter = no_progress) -> StageReport:
    totals: Counter[str] = Counter()
    unclosed = 0

    def work(ref: DocumentRef, inputs: list[dict]):
        nonlocal unclosed
        blocks, record = split_document(inputs[0]["body"])
        totals.update(b.type.value for b in blocks)
        unclosed += record["unclosed_blocks"]
        for warning in unclosed_warnings(ref.doc_path, blocks, inputs[0].get("body_start_line", 1)):
            log.warning("%s", warning)  # the ingestion contract: a WARNING for ambiguous markdown structure
        return blocks_to_list(blocks), record

    report = _run_each(BLOCKS, refs, stages, SPLIT_FINGERPRINT, [(PARSED, "")], work, progress)
    report.stats = {f"blocks_{k}": v for k, v in sorted(totals.items())}
    report.stats["blocks_total"] = sum(totals.values())
    report.stats["unclosed_blocks"] = unclosed
    return report


def unclosed_warnings(doc_path: str, blocks: Iterable[Block], body_start_line: int = 1) -> list[str]:
    """One line per block that never closed (a code fence or a ::: admonition without its end),
    naming the file and the line it opens on."""
    out = []
    for b in blocks:
        if b.unclosed:
            what = "code fence" if b.type is BlockType.CODE else f"{b.type.value} block"
            line = body_start_line + (b.start_line or 0)
            out.append(f"{doc_path}:{line}: ambiguous markdown: a {what} that never closes; "
                       "kept as one block up to the next heading")
    return out


# 4-5. chunking and ids ------------------------------------------------------------------------
def chunking_fingerprint(config: ChunkingConfig, encoding: str, model_name: str, max_input_tokens: int,
                         metadata: str = MetadataPolicy().fingerprint) -> str:
    # chunks carry the document's metadata: a new metadata policy re-makes them (the embedding cache,
    # keyed by text, keeps the vectors)
    return (
        f"chunks-v7:{encoding}:{config.min_tokens}:{config.target_tokens}:{config.max_tokens}:"
        f"{config.overlap_tokens}:{model_name}:{max_input_tokens}:{metadata}"
    )


def run_chunk(
    refs: Sequence[DocumentRef],
    stages: StageStore,
    counter: TokenCounter,
    config: ChunkingConfig,
    fits: Callable[[str], bool] | None,
    fingerprint: str,
    progress: Reporter = no_progress,
) -> StageReport:
    token_counts: list[int] = []
    oversized = blocks_split = 0  # over all documents: code blocks and tables cut into pieces that fit
    setup = ChunkSettings(counter, config, fits)

    def work(ref: DocumentRef, inputs: list):
        nonlocal oversized, blocks_split
        blocks_payload, parsed_payload = inputs
        chunks, record = chunk_blocks(parsed_from_dict(parsed_payload), blocks_from_list(blocks_payload), setup)
        token_counts.extend(c.token_count for c in chunks)
        oversized += record["oversized_chunks"]
        blocks_split += record["blocks_split"]
        return [asdict(c) for c in chunks], record

    report = _run_each(CHUNKS, refs, stages, fingerprint, [(BLOCKS, SPLIT_FINGERPRINT), (PARSED, "")], work, progress)
    report.stats = {"chunks": len(token_counts), **token_stats(token_counts), "oversized_chunks": oversized,
                    "blocks_split": blocks_split}
    return report


# 6. embedding ---------------------------------------------------------------------------------
def run_embed(
    refs: Sequence[DocumentRef],
    stages: StageStore,
    embedder,
    cache: EmbeddingCache,
    chunks_fingerprint: str,
    progress: Reporter = no_progress,
) -> StageReport:
    """Embed every chunk text not yet in the cache, across documents, each distinct text once.

    When the embedding service is down (its circuit breaker is open), every document still to do
    fails at once with the same message instead of each waiting out its own retries."""
    model = embedder.model_name
    report = StageReport(EMBEDDED)
    start = time.perf_counter()
    counts: Counter = Counter()

    pending: list[tuple[DocumentRef, list[dict]]] = []
    for window in _windows(refs):
        paths = [r.doc_path for r in window]
        heads = stages.headers(paths)
        failed = stages.failures(paths)
        need = []
        for ref in window:
            head = heads.get(ref.doc_path, {})
            chunks_head = head.get(CHUNKS)
            if chunks_head != (ref.content_hash, chunks_fingerprint):
                failure = failed.get(ref.doc_path)
                report.skipped[ref.doc_path] = (
                    f"chunks failed: {failure['error']}" if failure and failure["source_hash"] == ref.content_hash
                    else "chunks not materialized for this version"
                )
            elif head.get(EMBEDDED) == (ref.content_hash, model):
                report.unchanged.append(ref.doc_path)
            else:
                need.append(ref)
        records = stages.read_many(CHUNKS, [r.doc_path for r in need]) if need else {}
        pending.extend((ref, records[ref.doc_path]["payload"]) for ref in need if ref.doc_path in records)

    total_texts = len({c["content_hash"] for _, chunks in pending for c in chunks})
    tracker = _TextProgress(progress, total_texts)
    broken: str | None = None
    for group in _groups(pending, EMBED_GROUP_CHUNKS):
        # a group that fails is retried document by document, so one bad document fails alone
        for part in ([group], [[item] for item in group]) if len(group) > 1 else ([group],):
            failed_part = False
            for items in part:
                if broken is not None:
                    _fail_all(report, stages, items, EMBEDDED, broken)
                    continue
                try:
                    counts.update(_embed_group(items, embedder, cache, tracker))
                except EmbeddingServiceUnavailable as exc:
                    broken = f"embedding service unavailable: {exc}"
                    _fail_all(report, stages, items, EMBEDDED, broken)
                except Exception as exc:
                    if len(items) > 1:
                        failed_part = True
                        break
                    _fail_all(report, stages, items, EMBEDDED, f"embedding failed: {exc}")
                else:
                    _write_embedded(stages, report, items, model, embedder)
            if not failed_part:
                break

    report.seconds = time.perf_counter() - start
    report.stats = {
        "embedding_model": model,
        "embeddings_computed": counts["computed"],
        "embeddings_reused": counts["reused"],
        "embedding_seconds": round(counts["seconds"], 3),
        "chunks_truncated_by_model": sum(d["chunks_truncated_by_model"] for d in report.per_document.values()),
    }
    if counts["computed"] and counts["seconds"]:
        report.stats["embeddings_per_second"] = round(counts["computed"] / counts["seconds"], 1)
    return report


class _TextProgress:
    def __init__(self, progress: Reporter, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def add(self, n: int) -> None:
        self.done = min(self.total, self.done + n)
        self.progress(ProgressEvent("embed", self.done, self.total, "chunks"))


def _fail_all(report: StageReport, stages: StageStore, group, stage: str, message: str) -> None:
    stages.record_failures(stage, [(ref.doc_path, ref.content_hash, message) for ref, _ in group])
    for ref, _ in group:
        report.failed[ref.doc_path] = message if message.startswith(ref.doc_path) else f"{ref.doc_path}: {message}"


def _groups(items, limit):
    """Consecutive groups of items (ref, chunks, ...) holding about `limit` chunks each."""
    group, size = [], 0
    for item in items:
        group.append(item)
        size += len(item[1])
        if size >= limit:
            yield group
            group, size = [], 0
    if group:
        yield group


def _embed_group(group, embedder, cache: EmbeddingCache, tracker: _TextProgress) -> Counter:
    model = embedder.model_name
    texts: dict[str, str] = {}
    for _, chunks in group:
        for c in chunks:
            texts.setdefault(c["content_hash"], c["index_text"] or c["text"])
    have = cache.get_many(model, texts)
    tracker.add(len(have))
    # length-sorted calls: each call's padding stays small, and progress moves between calls
    missing = sorted((h for h in texts if h not in have), key=lambda h: len(texts[h]))
    started = time.perf_counter()
    for start in range(0, len(missing), EMBED_CALL_TEXTS):
        part = missing[start : start + EMBED_CALL_TEXTS]
        cache.put_many(model, part, embedder.embed_documents([texts[h] for h in part]))
        tracker.add(len(part))
    return Counter(computed=len(missing), reused=len(texts) - len(missing), seconds=time.perf_counter() - started)


def _write_embedded(stages: StageStore, report: StageReport, group, model: str, embedder) -> None:
    records = []
    for ref, chunks in group:
        truncated = sum(1 for c in chunks if not embedder.fits(c["index_text"] or c["text"]))
        payload = {"model": model, "content_hashes": [c["content_hash"] for c in chunks], "truncated": truncated}
        records.append((ref.doc_path, ref.content_hash, payload, model))
        report.processed.append(ref.doc_path)
        report.per_document[ref.doc_path] = {"chunks": len(chunks), "chunks_truncated_by_model": truncated}
    stages.write_many(EMBEDDED, records)
    stages.clear_failures(EMBEDDED, [r[0] for r in records])


# 7. vector storage ----------------------------------------------------------------------------
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

    for window in _windows(refs):
        paths = [r.doc_path for r in window]
        heads = stages.headers(paths)
        failed = stages.failures(paths)
        todo: list[DocumentRef] = []
        for ref in window:
            head = heads.get(ref.doc_path, {})
            if head.get(INDEXED) == (ref.content_hash, fingerprint):
                report.unchanged.append(ref.doc_path)
            elif head.get(EMBEDDED) != (ref.content_hash, model):
                failure = failed.get(ref.doc_path)
                report.skipped[ref.doc_path] = (
                    f"embedded failed: {failure['error']}" if failure and failure["source_hash"] == ref.content_hash
                    else "embedded not materialized for this version"
                )
            else:
                todo.append(ref)
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
        for group in _groups(batch, INDEX_GROUP_CHUNKS):
            with _held(locks, [ref.doc_path for ref, _, _ in group]):
                w, d = _replace_group(group, stages, store, fingerprint, report, errors, snapshot)
            written, deleted = written + w, deleted + d
        _commit(stages, INDEXED, report, [], errors)
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


def _held(locks: DocumentLocks | None, doc_paths: Sequence[str]):
    return locks.hold(doc_paths) if locks is not None else nullcontext()


def remove_documents(
    doc_paths: Sequence[str], stages: StageStore, store, locks: DocumentLocks | None = None,
    snapshot: SnapshotCommits | None = None,
) -> dict[str, int]:
    """Forget documents that vanished: their vectors first (found by doc_path), then the search
    snapshot's copy, then their records (a crash before the last step: the next catalog run removes
    them again)."""
    doc_paths = list(doc_paths)
    with _held(locks, doc_paths):
        removed = store.delete_documents(doc_paths) if store is not None and doc_paths else {p: 0 for p in doc_paths}
        if snapshot is not None and doc_paths:
            snapshot.remove(doc_paths)
        stages.delete_documents(doc_paths)
    if snapshot is None and any(removed.values()):
        bump_generation(stages.db)
    return removed


@dataclass
class Orphans:
    """Vectors in the store whose document is not in the folder."""

    ids_by_document: dict[str, list[str]] = field(default_factory=dict)  # doc_path (or doc key) -> ids
    documents_in_store: int = 0  # distinct documents the store holds vectors of

    @property
    def vectors(self) -> int:
        return sum(len(v) for v in self.ids_by_document.values())

    def without(self, doc_paths: Iterable[str]) -> "Orphans":
        """The orphans other than these documents (removed by doc_path already)."""
        drop = set(doc_paths)
        return Orphans({d: v for d, v in self.ids_by_document.items() if d not in drop}, self.documents_in_store)


def find_orphans(store, keep_doc_paths: Iterable[str]) -> Orphans:
    """Every vector whose document is not in `keep_doc_paths` (the folder as discovered, plus files
    that exist but could not be read). Reads ids only: a chunk id starts with its document's key
    (ids.py); ids of the older scheme are looked up by their doc_path metadata."""
    keep = set(keep_doc_paths)
    keep_keys = {ids.doc_key(p) for p in keep}
    by_key: dict[str, list[str]] = {}
    legacy: list[str] = []
    for cid in store.ids():
        key = ids.doc_key_of(cid)
        if key is None:
            legacy.append(cid)
        else:
            by_key.setdefault(key, []).append(cid)
    orphans = Orphans(documents_in_store=len(by_key))
    doomed = {k: v for k, v in by_key.items() if k not in keep_keys}
    names = {ids.doc_key_of(hit.chunk_id): str(hit.metadata.get("doc_path", "")) for hit in store.get([v[0] for v in doomed.values()])}
    for key, cids in doomed.items():
        orphans.ids_by_document[names.get(key) or key] = cids
    legacy_docs: set[str] = set()
    for start in range(0, len(legacy), 1000):
        for hit in store.get(legacy[start : start + 1000]):
            doc_path = str(hit.metadata.get("doc_path", ""))
            legacy_docs.add(doc_path)
            if doc_path not in keep:
                orphans.ids_by_document.setdefault(doc_path, []).append(hit.chunk_id)
    orphans.documents_in_store += len(legacy_docs - {names.get(k) for k in by_key})
    return orphans


def delete_orphans(store, orphans: Orphans, stages: StageStore, locks: DocumentLocks | None = None,
                   snapshot: SnapshotCommits | None = None) -> int:
    """Delete the orphaned vectors (and the search snapshot's copy and any stage records of those documents)."""
    doomed = [cid for cids in orphans.ids_by_document.values() for cid in cids]
    if not doomed:
        return 0
    with _held(locks, list(orphans.ids_by_document)):
        store.delete_ids(doomed)
        if snapshot is not None:
            snapshot.remove(list(orphans.ids_by_document))
        stages.delete_documents(list(orphans.ids_by_document))
    if snapshot is None:
        bump_generation(stages.db)
    return len(doomed)
