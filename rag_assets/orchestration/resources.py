"""Dagster resources: the embedder and the vector store, configured from rag_assets.config.

Empty fields mean "use Settings" (defaults, overridden by environment variables); a value set in
the launchpad or in code wins. Secrets (OPENAI_API_KEY) are never resource config: they are read
from the environment by the embedder, so they never show in run config or the UI.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

import dagster as dg
from filelock import FileLock

from rag_assets.config import Settings
from rag_assets.embedding import Embedder, load_embedder
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.index.chroma_store import ChromaStore, embedded_collection_id


def current_settings() -> Settings:
    return Settings.from_env()


STORE_WRITER_LOCK_NAME = ".rag-writer.lock"


def store_writer_lock(settings: Settings) -> FileLock | None:
    """The embedded Chroma store admits ONE writing process (two corrupt or hang it: chroma #7040):
    this lock, kept in the store's own folder, is held by whoever writes it, for as long as they
    may write: a run's vector stage, or a whole `rag ingest` (whose process keeps the store open).
    Re-entrant within a process. A Chroma server takes many writers: None (documents are locked
    one by one instead, rag_assets.index.locks)."""
    if settings.chroma_host:
        return None
    folder = Path(settings.chroma_path)
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder / STORE_WRITER_LOCK_NAME), is_singleton=True, thread_local=False)


@functools.lru_cache(maxsize=4)
def _cached_embedder(settings: Settings) -> Embedder:
    # one model per process: loading it per asset would cost a second each time
    return load_embedder(settings)


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model: local all-MiniLM-L6-v2 (ONNX, offline) or OpenAI."""

    embedder: str = ""  # "local" | "openai"; "" = RAG_EMBEDDER
    model: str = ""  # "" = RAG_EMBEDDING_MODEL or the embedder's default
    batch_size: int = 0  # 0 = RAG_EMBED_BATCH_SIZE

    def settings(self) -> Settings:
        return Settings.from_env(
            embedder=self.embedder or None, embedding_model=self.model or None, embed_batch_size=self.batch_size or None
        )

    def get(self) -> Embedder:
        return _cached_embedder(self.settings())

    def cache(self) -> EmbeddingCache:
        return EmbeddingCache.for_settings(self.settings())


class VectorStoreResource(dg.ConfigurableResource):
    """The Chroma collection; writers hold a per-collection file lock (one embedded store, one writer)."""

    chroma_path: str = ""  # "" = RAG_CHROMA_PATH
    chroma_host: str = ""  # "" = CHROMA_HOST (unset: embedded PersistentClient)
    chroma_port: int = 0
    collection: str = ""

    def settings(self) -> Settings:
        return Settings.from_env(
            chroma_path=self.chroma_path or None,
            chroma_host=self.chroma_host or None,
            chroma_port=self.chroma_port or None,
            collection=self.collection or None,
        )

    def open(self, embedder: Embedder) -> ChromaStore:
        s = self.settings()
        return ChromaStore.for_settings(s, embedder)

    def collection_id(self, embedder: Embedder) -> str:
        """The collection's id now, without opening an embedded store when its catalog file can be
        read directly (cheap, and a sensor tick must not open the store a run is writing); a
        missing collection reads "none", so nothing counts as indexed in it."""
        s = self.settings()
        if not s.chroma_host:
            try:
                return embedded_collection_id(s.chroma_path, s.collection) or "none"
            except LookupError:
                pass
        return self.open(embedder).collection_id

    @contextmanager
    def writer(self, embedder: Embedder) -> Iterator[ChromaStore]:
        """The store for writing. Embedded: opened only once this process holds the store's writer
        lock (so it never writes from a view older than another writer's last change), held until
        the block ends. A server: opened at once; per-document locks keep writers apart."""
        lock = store_writer_lock(self.settings())
        with lock if lock is not None else nullcontext():
            yield self.open(embedder)
