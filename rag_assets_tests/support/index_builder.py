"""Build a retrieval index from a docs folder with the plain modules (no Dagster).

For tests and benchmarks that need an index to query while the Dagster ingestion is elsewhere:
rag_assets.ingest.folder_index does the work (discover -> ... -> ChromaStore.replace_document, then the
search snapshot committed, exactly as an ingest that changed the index does; ``snapshot=False``: the
generation bumped only, as an earlier version's ingest left it, so the first query builds the snapshot).
"""

from __future__ import annotations

from pathlib import Path

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.ingest.folder_index import index_folder
from rag_assets.retrieval.snapshot_writer import SnapshotWriter


def build_index(
    docs_dir: Path | str | None, settings: Settings | None = None, *, embedder=None, cache: EmbeddingCache | None = None,
    snapshot: bool = True,
) -> dict:
    """Index every markdown file of docs_dir (default: settings.docs_dir); returns small stats.

    With ``cache``, vectors are looked up by (model, content hash) first and only the missing ones
    are embedded (benchmarks rebuild a corpus after a chunking change in seconds, not minutes).
    """
    settings = settings or Settings.from_env()
    docs_dir = Path(docs_dir) if docs_dir is not None else settings.docs_dir
    embedder = embedder or load_embedder(settings.embedding)
    writer = SnapshotWriter(settings, ChromaStore.for_settings(settings.paths, embedder)) if snapshot else None
    stats = index_folder(docs_dir, settings, embedder, cache=cache, snapshot=writer)
    return {"documents": stats["documents"], "chunks": stats["chunks_written"], "generation": stats["generation"]}


def sample_env(root: Path) -> dict[str, str]:
    """RAG_* variables for an index in ``root`` over the sample corpus (support/corpus.py) (written there)."""
    from rag_assets_tests.support.corpus import write_corpus

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
