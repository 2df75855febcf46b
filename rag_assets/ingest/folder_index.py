"""Index a folder of markdown with the plain stage modules, outside the Dagster ingestion.

discover -> each document's road to its chunks (rag_assets.ingest.document, the one the per-document
stages take) -> embed (through an optional embedding cache) ->
ChromaStore.replace_document, then the search snapshot committed (or, without a snapshot writer, the
index generation bumped), as an ingest that changed the index would. Documents no longer in the
folder are deleted from the store.

For side indexes the product keeps beside the main one (the extra labelled corpora of the
evaluation asset, RAG_EVAL_CORPORA) and for tests and benchmarks. With a ``manifest`` file, a
document whose bytes and chunking settings are unchanged since the last call is not read again.
A document that fails (bad frontmatter, unreadable) is reported in ``errors`` and skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.config import Settings
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.errors import RagError
from rag_assets.ingest.document import ChunkSettings, ParseSettings, document_chunks
from rag_assets.index.generation import bump_generation, read_generation
from rag_assets.ingest.stages import INDEX_GROUP_CHUNKS, SnapshotCommits, chunking_fingerprint
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.ingest.tokens import TokenCounter


def index_folder(
    docs_dir: Path | str,
    settings: Settings,
    embedder,
    *,
    cache: EmbeddingCache | None = None,
    manifest: Path | None = None,
    snapshot: SnapshotCommits | None = None,
) -> dict:
    """Bring the store of ``settings`` in line with ``docs_dir``; returns small stats. ``snapshot``
    (rag_assets.retrieval.snapshot_writer.SnapshotWriter over the same store): the search snapshot is
    committed as the store changes, in groups; without it the generation is bumped and readers build
    the snapshot from the store."""
    counter = TokenCounter.for_name(settings.chunking.tiktoken_encoding, settings.chunking.tiktoken_dir)
    config = ChunkingConfig.from_settings(settings.chunking)
    parse = ParseSettings.from_settings(settings.ingest)
    setup = ChunkSettings(counter, config, embedder.fits)
    fingerprint = chunking_fingerprint(config, settings.chunking.tiktoken_encoding, embedder.model_name, embedder.max_input_tokens,
                                       parse.policy.fingerprint)
    store = ChromaStore.for_settings(settings.paths, embedder)
    catalog = discover(Path(docs_dir), max_file_bytes=settings.max_file_bytes, index_snippets=settings.index_snippets,
                       scope=ScopeSettings.from_settings(settings.ingest))
    known = _read_manifest(manifest)
    current: dict[str, str] = {}
    errors = [{"doc_path": e.path, "error": e.reason} for e in catalog.errors]
    stats = {"documents": 0, "unchanged": 0, "chunks_written": 0, "deleted": 0}
    pending: list = []  # documents written to the store, not yet committed to the snapshot
    for ref in catalog.documents:
        key = f"{ref.content_hash}:{fingerprint}"
        if known.get(ref.doc_path) == key:
            current[ref.doc_path] = key
            stats["unchanged"] += 1
            continue
        try:
            chunks = document_chunks(ref, parse, setup).chunks
        except RagError as exc:  # one bad document must not stop the others
            errors.append({"doc_path": ref.doc_path, "error": str(exc)})
            continue
        vectors = embed_chunks(embedder, cache, chunks)
        result = store.replace_document(ref.doc_path, chunks, vectors)
        stats["chunks_written"] += result.written
        stats["deleted"] += result.deleted
        current[ref.doc_path] = key
        if snapshot is not None:
            pending.append((ref.doc_path, chunks, vectors))
            if sum(len(c) for _, c, _ in pending) >= INDEX_GROUP_CHUNKS:
                stats["generation"] = snapshot.replace(pending)
                pending = []
    if pending:
        stats["generation"] = snapshot.replace(pending)
    stats["documents"] = len(current)
    stale = sorted(store.doc_paths() - set(current) - {e["doc_path"] for e in errors})
    for doc_path in stale:
        stats["deleted"] += store.delete_document(doc_path)
    if snapshot is not None:
        if stale:
            stats["generation"] = snapshot.remove(stale)
    elif stats["chunks_written"] or stats["deleted"] or not known:
        stats["generation"] = bump_generation(settings.state_dir)
    stats.setdefault("generation", read_generation(settings.state_dir))
    _write_manifest(manifest, current)
    return {**stats, "errors": errors}


def embed_chunks(embedder, cache: EmbeddingCache | None, chunks) -> np.ndarray:
    """Vectors for the chunks' index texts, taken from the cache where it has them."""
    if not chunks:
        return np.empty((0, embedder.dimension), np.float32)
    if cache is None:
        return embedder.embed_documents([c.index_text for c in chunks])
    found = cache.get_many(embedder.model_name, [c.content_hash for c in chunks])
    missing = list({c.content_hash: c for c in chunks if c.content_hash not in found}.values())
    if missing:
        vectors = embedder.embed_documents([c.index_text for c in missing])
        cache.put_many(embedder.model_name, [c.content_hash for c in missing], vectors)
        found.update(zip((c.content_hash for c in missing), vectors))
    return np.vstack([found[c.content_hash] for c in chunks])


def _read_manifest(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _write_manifest(path: Path | None, entries: dict[str, str]) -> None:
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, indent=0, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
