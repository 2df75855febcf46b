"""The embedding stage: every chunk text of the run's changed documents not yet in the embedding
cache embedded, across documents, each distinct text once, in length-sorted calls; a group that
fails is retried document by document, and a dead embedding service fails the rest of the run at once.
No Dagster import here.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Sequence

from rag_assets.errors import EmbeddingServiceUnavailable
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.index.stage_store import CHUNKS, EMBEDDED, StageStore
from rag_assets.ingest.stage_windows import StageReport, fail_all, groups_of, ready_documents, windows
from rag_assets.models import DocumentRef
from rag_assets.progress import ProgressEvent, Reporter, no_progress

# Embed changed documents in groups of about this many chunks: large enough for full batches,
# small enough that a big run never holds every chunk in memory at once.
EMBED_GROUP_CHUNKS = 2048
# Texts per embedder call inside a group: progress moves, and the length sort still pays.
EMBED_CALL_TEXTS = 256


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
    for window in windows(refs):
        need = ready_documents(window, stages, report, EMBEDDED, model, CHUNKS, chunks_fingerprint)
        records = stages.read_many(CHUNKS, [r.doc_path for r in need]) if need else {}
        pending.extend((ref, records[ref.doc_path]["payload"]) for ref in need if ref.doc_path in records)

    total_texts = len({c["content_hash"] for _, chunks in pending for c in chunks})
    tracker = _TextProgress(progress, total_texts)
    broken: str | None = None
    for group in groups_of(pending, EMBED_GROUP_CHUNKS):
        # a group that fails is retried document by document, so one bad document fails alone
        for part in ([group], [[item] for item in group]) if len(group) > 1 else ([group],):
            failed_part = False
            for items in part:
                if broken is not None:
                    fail_all(report, stages, items, EMBEDDED, broken)
                    continue
                try:
                    counts.update(_embed_group(items, embedder, cache, tracker))
                except EmbeddingServiceUnavailable as exc:
                    broken = f"embedding service unavailable: {exc}"
                    fail_all(report, stages, items, EMBEDDED, broken)
                except Exception as exc:
                    if len(items) > 1:
                        failed_part = True
                        break
                    fail_all(report, stages, items, EMBEDDED, f"embedding failed: {exc}")
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


