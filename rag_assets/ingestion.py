"""The per-document stages run over a batch of documents, with skip, failure isolation and stats.

Each `run_*` function takes the documents of one run (possibly hundreds), does the stage's work
only for documents whose input changed, records every failure against the document without
stopping the others, and returns a StageReport the Dagster layer turns into metadata.
No Dagster import here: the same functions run under plain pytest.
"""

from __future__ import annotations

import statistics
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from rag_assets import frontmatter, ids, markdown
from rag_assets.chunking import ChunkingConfig, chunk_document
from rag_assets.embedding_cache import EmbeddingCache
from rag_assets.errors import DocumentError, VectorDBUnavailableError
from rag_assets.index_generation import bump_generation
from rag_assets.models import Chunk, DocumentRef
from rag_assets.stage_store import (
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
from rag_assets.store import ChromaStore
from rag_assets.tokens import TokenCounter

# Embed changed documents in groups of about this many chunks: large enough for full batches,
# small enough that a 1,000-document run never holds every chunk in memory at once.
EMBED_GROUP_CHUNKS = 2048


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


def _upstream(stages: StageStore, stage: str, ref: DocumentRef, fingerprint: str = "") -> dict | None:
    record = stages.read(stage, ref.doc_path)
    if record is None or record["source_hash"] != ref.content_hash:
        return None
    if fingerprint and record["fingerprint"] != fingerprint:
        return None
    return record["payload"]


def _run_each(
    stage: str,
    refs: Iterable[DocumentRef],
    stages: StageStore,
    fingerprint: str,
    upstream: str | None,
    work: Callable[[DocumentRef, dict | None], tuple[object, dict]],
    upstream_fingerprint: str = "",
) -> StageReport:
    """Run `work(ref, upstream_payload) -> (payload, per_doc_stats)` for each stale document."""
    report = StageReport(stage)
    start = time.perf_counter()
    for ref in refs:
        up = None
        if upstream is not None:
            up = _upstream(stages, upstream, ref, upstream_fingerprint)
            if up is None:
                failure = stages.failure(ref.doc_path, ref.content_hash)
                report.skipped[ref.doc_path] = (
                    f"{upstream} failed: {failure['error']}" if failure else f"{upstream} not materialized for this version"
                )
                continue
        if stages.is_current(stage, ref.doc_path, ref.content_hash, fingerprint):
            report.unchanged.append(ref.doc_path)
            continue
        try:
            payload, doc_stats = work(ref, up)
        except DocumentError as exc:
            _fail(report, stages, ref, stage, str(exc))
            continue
        except Exception as exc:  # one bad document never stops the others
            _fail(report, stages, ref, stage, f"{ref.doc_path}: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        stages.write(stage, ref.doc_path, ref.content_hash, payload, fingerprint)
        stages.clear_failure(ref.doc_path, stage)
        report.processed.append(ref.doc_path)
        report.per_document[ref.doc_path] = doc_stats
    report.seconds = time.perf_counter() - start
    return report


def _fail(report: StageReport, stages: StageStore, ref: DocumentRef, stage: str, message: str) -> None:
    report.failed[ref.doc_path] = message
    stages.record_failure(ref.doc_path, ref.content_hash, stage, message)


# 1-2. frontmatter -----------------------------------------------------------------------------
def run_parse(refs: Sequence[DocumentRef], stages: StageStore) -> StageReport:
    def work(ref: DocumentRef, _):
        doc = frontmatter.read_document(ref)
        return asdict(doc), {"title": doc.title, "tags": len(doc.tags), "body_chars": len(doc.body)}

    report = _run_each(PARSED, refs, stages, "", None, work)
    report.stats = {"documents_parsed": len(report.processed)}
    return report


# 3. markdown splitting ------------------------------------------------------------------------
def run_split(refs: Sequence[DocumentRef], stages: StageStore) -> StageReport:
    totals: Counter[str] = Counter()
    unclosed = 0

    def work(ref: DocumentRef, parsed: dict):
        nonlocal unclosed
        blocks = markdown.split_markdown(parsed["body"])
        by_type = Counter(b.type.value for b in blocks)
        totals.update(by_type)
        flagged = sum(1 for b in blocks if b.unclosed)
        unclosed += flagged
        return blocks_to_list(blocks), {**{f"blocks_{k}": v for k, v in by_type.items()}, "unclosed_blocks": flagged}

    report = _run_each(BLOCKS, refs, stages, "", PARSED, work)
    report.stats = {f"blocks_{k}": v for k, v in sorted(totals.items())}
    report.stats["blocks_total"] = sum(totals.values())
    report.stats["unclosed_blocks"] = unclosed
    return report


# 4-5. chunking and ids ------------------------------------------------------------------------
def chunking_fingerprint(config: ChunkingConfig, encoding: str, model_name: str, max_input_tokens: int) -> str:
    return (
        f"chunks-v2:{encoding}:{config.min_tokens}:{config.target_tokens}:{config.max_tokens}:"
        f"{config.overlap_tokens}:{model_name}:{max_input_tokens}"
    )


def run_chunk(
    refs: Sequence[DocumentRef],
    stages: StageStore,
    counter: TokenCounter,
    config: ChunkingConfig,
    fits: Callable[[str], bool] | None,
    fingerprint: str,
) -> StageReport:
    token_counts: list[int] = []
    oversized = 0

    def work(ref: DocumentRef, _):
        nonlocal oversized
        parsed = parsed_from_dict(_upstream(stages, PARSED, ref))
        blocks = blocks_from_list(stages.read(BLOCKS, ref.doc_path)["payload"])
        chunks = ids.assign_ids(chunk_document(parsed, blocks, counter, config, fits=fits))
        counts = [c.token_count for c in chunks]
        token_counts.extend(counts)
        big = sum(c.oversized for c in chunks)
        oversized += big
        return [asdict(c) for c in chunks], {"chunks": len(chunks), **_token_stats(counts), "oversized_chunks": big}

    report = _run_each(CHUNKS, refs, stages, fingerprint, BLOCKS, work)
    report.stats = {"chunks": len(token_counts), **_token_stats(token_counts), "oversized_chunks": oversized}
    return report


def _token_stats(counts: list[int]) -> dict[str, int]:
    if not counts:
        return {"tokens_min": 0, "tokens_median": 0, "tokens_max": 0}
    return {"tokens_min": min(counts), "tokens_median": int(statistics.median(counts)), "tokens_max": max(counts)}


# 6. embedding ---------------------------------------------------------------------------------
def run_embed(
    refs: Sequence[DocumentRef], stages: StageStore, embedder, cache: EmbeddingCache, chunks_fingerprint: str
) -> StageReport:
    """Embed every chunk text not yet in the cache, across documents, each distinct text once."""
    model = embedder.model_name
    report = StageReport(EMBEDDED)
    start = time.perf_counter()
    computed = reused = truncated = 0
    embed_seconds = 0.0

    pending: list[tuple[DocumentRef, list[dict]]] = []
    for ref in refs:
        chunks = _upstream(stages, CHUNKS, ref, chunks_fingerprint)
        if chunks is None:
            failure = stages.failure(ref.doc_path, ref.content_hash)
            report.skipped[ref.doc_path] = f"chunks failed: {failure['error']}" if failure else "chunks not materialized for this version"
        elif stages.is_current(EMBEDDED, ref.doc_path, ref.content_hash, model):
            report.unchanged.append(ref.doc_path)
        else:
            pending.append((ref, chunks))

    for group in _groups(pending, EMBED_GROUP_CHUNKS):
        try:
            stats = _embed_group(group, embedder, cache)
        except Exception as exc:  # a failing group must not stop the other groups
            if len(group) == 1:
                _fail(report, stages, group[0][0], EMBEDDED, f"{group[0][0].doc_path}: embedding failed: {exc}")
                continue
            # isolate the document that breaks the group; the others still get embedded
            stats = Counter()
            for item in group:
                try:
                    stats.update(_embed_group([item], embedder, cache))
                except Exception as doc_exc:
                    _fail(report, stages, item[0], EMBEDDED, f"{item[0].doc_path}: embedding failed: {doc_exc}")
                    continue
                _write_embedded(stages, report, item, model, embedder)
            computed += stats["computed"]
            reused += stats["reused"]
            embed_seconds += stats["seconds"]
            continue
        computed += stats["computed"]
        reused += stats["reused"]
        embed_seconds += stats["seconds"]
        for item in group:
            truncated += _write_embedded(stages, report, item, model, embedder)

    report.seconds = time.perf_counter() - start
    report.stats = {
        "embedding_model": model,
        "embeddings_computed": computed,
        "embeddings_reused": reused,
        "embedding_seconds": round(embed_seconds, 3),
        "chunks_truncated_by_model": truncated,
    }
    if computed and embed_seconds:
        report.stats["embeddings_per_second"] = round(computed / embed_seconds, 1)
    return report


def _groups(pending, limit):
    group, size = [], 0
    for item in pending:
        group.append(item)
        size += len(item[1])
        if size >= limit:
            yield group
            group, size = [], 0
    if group:
        yield group


def _embed_group(group, embedder, cache: EmbeddingCache) -> Counter:
    model = embedder.model_name
    texts: dict[str, str] = {}
    for _, chunks in group:
        for c in chunks:
            texts.setdefault(c["content_hash"], c["index_text"] or c["text"])
    have = cache.get_many(model, texts)
    missing = [h for h in texts if h not in have]
    started = time.perf_counter()
    if missing:
        vectors = embedder.embed_documents([texts[h] for h in missing])
        cache.put_many(model, missing, vectors)
    return Counter(computed=len(missing), reused=len(texts) - len(missing), seconds=time.perf_counter() - started)


def _write_embedded(stages: StageStore, report: StageReport, item, model: str, embedder) -> int:
    ref, chunks = item
    truncated = sum(1 for c in chunks if not embedder.fits(c["index_text"] or c["text"]))
    payload = {"model": model, "content_hashes": [c["content_hash"] for c in chunks], "truncated": truncated}
    stages.write(EMBEDDED, ref.doc_path, ref.content_hash, payload, model)
    stages.clear_failure(ref.doc_path, EMBEDDED)
    report.processed.append(ref.doc_path)
    report.per_document[ref.doc_path] = {"chunks": len(chunks), "chunks_truncated_by_model": truncated}
    return truncated


# 7. vector storage ----------------------------------------------------------------------------
def index_fingerprint(store: ChromaStore) -> str:
    # the collection's id changes when it is deleted and recreated: every document is then rewritten
    return f"{store.collection_name}:{store.collection_id}:{store.embedding_model}"


def run_index(
    refs: Sequence[DocumentRef], stages: StageStore, store: ChromaStore, cache: EmbeddingCache, chunks_fingerprint: str
) -> StageReport:
    model = store.embedding_model
    written = deleted = 0

    def work(ref: DocumentRef, _embedded: dict):
        nonlocal written, deleted
        chunks = chunks_from_list(_upstream(stages, CHUNKS, ref, chunks_fingerprint) or [])
        vectors = cache.get_many(model, [c.content_hash for c in chunks])
        missing = [c.chunk_id for c in chunks if c.content_hash not in vectors]
        if missing:
            raise DocumentError(ref.doc_path, f"{len(missing)} chunk embeddings missing from the cache; re-run embedding")
        matrix = np.stack([vectors[c.content_hash] for c in chunks]) if chunks else np.zeros((0, store.dimension))
        # Mark the old record stale before touching the store: a crash mid-replace followed by a
        # revert of the file to that old version must still trigger a rewrite of this document.
        old = stages.read(INDEXED, ref.doc_path)
        if old is not None:
            stages.write(INDEXED, ref.doc_path, old["source_hash"], old["payload"], "replacing")
        result = store.replace_document(ref.doc_path, chunks, matrix)
        written += result.written
        deleted += result.deleted
        payload = {"chunk_ids": [c.chunk_id for c in chunks], "model": model}
        return payload, {"vectors_written": result.written, "vectors_deleted": result.deleted, "vectors_unchanged": result.unchanged}

    report = _run_each(INDEXED, refs, stages, index_fingerprint(store), EMBEDDED, work, upstream_fingerprint=model)
    if written or deleted:
        bump_generation(stages.root.parent)
    try:
        count = store.count()
    except VectorDBUnavailableError:
        count = -1  # the store went away mid-run: the failed documents already say so
    report.stats = {"vectors_written": written, "vectors_deleted": deleted, "collection_count": count}
    return report


def remove_documents(doc_paths: Iterable[str], stages: StageStore, store: ChromaStore | None) -> dict[str, int]:
    """Forget documents that vanished: their vectors first, then their stage records."""
    removed: dict[str, int] = {}
    for doc_path in doc_paths:
        removed[doc_path] = store.delete_document(doc_path) if store is not None else 0
        stages.delete_document(doc_path)
    if any(removed.values()):
        bump_generation(stages.root.parent)
    return removed


# planning ---------------------------------------------------------------------------------------
def stale_documents(
    refs: Sequence[DocumentRef], stages: StageStore, chunks_fingerprint: str, model: str, index_fp: str
) -> list[DocumentRef]:
    """The documents some stage still has to (re)do: new or edited files, changed settings, a
    rebuilt collection, or a failure to retry. Reading records is cheap; a run is not."""
    checks = ((PARSED, ""), (BLOCKS, ""), (CHUNKS, chunks_fingerprint), (EMBEDDED, model), (INDEXED, index_fp))
    return [
        ref
        for ref in refs
        if stages.failure(ref.doc_path, ref.content_hash)
        or not all(stages.is_current(stage, ref.doc_path, ref.content_hash, fp) for stage, fp in checks)
    ]


def contiguous_segments(order: Sequence[str], wanted: Iterable[str], max_gap: int = 5) -> list[tuple[str, str]]:
    """Cover `wanted` keys with (first, last) ranges of `order`, bridging gaps of <= max_gap keys.

    A range run also records every unchanged key inside it (Dagster events cost ~25 ms each on
    SQLite), while each extra run costs ~1 s: bridging small gaps only is the cheaper trade."""
    wanted = set(wanted)
    positions = [i for i, key in enumerate(order) if key in wanted]
    segments: list[list[int]] = []
    for pos in positions:
        if segments and pos - segments[-1][1] - 1 <= max_gap:
            segments[-1][1] = pos
        else:
            segments.append([pos, pos])
    return [(order[a], order[b]) for a, b in segments]
