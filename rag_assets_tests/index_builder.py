"""Build a retrieval index from a docs folder with the plain modules (no Dagster).

For tests and benchmarks that need an index to query while the Dagster ingestion is elsewhere:
discover -> parse -> split -> chunk -> ids -> embed -> ChromaStore.replace_document, then the
index generation is bumped, exactly as an ingest that changed the index would do.
Documents that are no longer in the folder are deleted from the store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag_assets.chunking import ChunkingConfig, chunk_document
from rag_assets.config import Settings
from rag_assets.discovery import discover
from rag_assets.embedding import load_embedder
from rag_assets.embedding_cache import EmbeddingCache
from rag_assets.frontmatter import read_document
from rag_assets.ids import assign_ids
from rag_assets.index_generation import bump_generation
from rag_assets.markdown import split_markdown
from rag_assets.store import ChromaStore
from rag_assets.tokens import TokenCounter


def build_index(
    docs_dir: Path | str | None, settings: Settings | None = None, *, embedder=None, cache: EmbeddingCache | None = None
) -> dict:
    """Index every markdown file of docs_dir (default: settings.docs_dir); returns small stats.

    With ``cache``, vectors are looked up by (model, content hash) first and only the missing ones
    are embedded (benchmarks rebuild a corpus after a chunking change in seconds, not minutes).
    """
    settings = settings or Settings.from_env()
    docs_dir = Path(docs_dir) if docs_dir is not None else settings.docs_dir
    embedder = embedder or load_embedder(settings)
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    config = ChunkingConfig.from_settings(settings)
    store = ChromaStore.for_settings(settings, embedder)
    catalog = discover(docs_dir, max_file_bytes=settings.max_file_bytes)
    seen: set[str] = set()
    chunks_total = 0
    for ref in catalog.documents:
        doc = read_document(ref)
        blocks = split_markdown(doc.body)
        chunks = assign_ids(chunk_document(doc, blocks, counter, config, fits=embedder.fits))
        vectors = _embed(embedder, cache, chunks)
        store.replace_document(ref.doc_path, chunks, vectors)
        seen.add(ref.doc_path)
        chunks_total += len(chunks)
    for stale in sorted(store.doc_paths() - seen):
        store.delete_document(stale)
    generation = bump_generation(settings.state_dir)
    return {"documents": len(seen), "chunks": chunks_total, "generation": generation}


def _embed(embedder, cache: EmbeddingCache | None, chunks) -> np.ndarray:
    if cache is None:
        return embedder.embed_documents([c.index_text for c in chunks])
    found = cache.get_many(embedder.model_name, [c.content_hash for c in chunks])
    missing = list({c.content_hash: c for c in chunks if c.content_hash not in found}.values())
    if missing:
        vectors = embedder.embed_documents([c.index_text for c in missing])
        cache.put_many(embedder.model_name, [c.content_hash for c in missing], vectors)
        found.update(zip((c.content_hash for c in missing), vectors))
    return np.vstack([found[c.content_hash] for c in chunks]) if chunks else np.empty((0, embedder.dimension), np.float32)


def sample_env(root: Path) -> dict[str, str]:
    """RAG_* variables for an index in ``root`` over the conftest sample corpus (written there)."""
    from rag_assets_tests.conftest import write_corpus

    root = Path(root)
    docs = write_corpus(root / "docs")
    return {
        "RAG_DOCS_DIR": str(docs),
        "RAG_CHROMA_PATH": str(root / "chroma"),
        "RAG_STATE_DIR": str(root / "state"),
        "RAG_CACHE_DIR": str(root / "cache"),
        "RAG_EVAL_DIR": str(root / "eval"),
    }


def build_sample_index(root: Path) -> tuple[dict[str, str], Settings]:
    """Write the sample corpus under root, index it, and return (env vars, settings) for it."""
    env = sample_env(root)
    settings = Settings.from_env(env)
    build_index(settings.docs_dir, settings)
    return env, settings
