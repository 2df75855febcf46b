"""Dagster resources: the embedder and the vector store, configured from rag_assets.config.

Empty fields mean "use Settings" (defaults, overridden by environment variables); a value set in
the launchpad or in code wins. Secrets (OPENAI_API_KEY) are never resource config: they are read
from the environment by the embedder, so they never show in run config or the UI.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import dagster as dg
from filelock import FileLock

from rag_assets.config import Settings
from rag_assets.embedding import Embedder, load_embedder
from rag_assets.embedding_cache import EmbeddingCache
from rag_assets.store import ChromaStore, embedded_collection_id


def current_settings() -> Settings:
    return Settings.from_env()


INGEST_LOCK_NAME = "ingest.lock"


def ingest_lock_file(state_dir: Path) -> FileLock:
    """The state folder's ingest lock, one object per process and re-entrant in it (any thread).

    `rag ingest` (runs.ingest) holds it for a whole ingest; VectorStoreResource.writer takes it
    too, so a run launched from the UI or the daemon never writes Chroma in the middle of a CLI
    ingest (whose process has the store open: chroma #7040), while the CLI's own in-process runs
    simply re-enter it."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(str(state_dir / INGEST_LOCK_NAME), is_singleton=True, thread_local=False)


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
        """The store, opened under exclusive inter-process locks held until the block ends: the
        state folder's ingest lock (re-entered when this process is a `rag ingest`), then the
        collection's write lock. The store is opened only once both are held, so this process
        never writes from a view of the store older than another writer's last change."""
        s = self.settings()
        with ingest_lock_file(s.state_dir), FileLock(str(s.state_dir / f"{s.collection}.write.lock")):
            yield self.open(embedder)
