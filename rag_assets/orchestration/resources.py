"""Dagster resources: the embedder and the vector store, shared by every corpus.

Each asset hands a resource its corpus's settings (rag_assets.corpus); empty fields mean "as the
corpus says", a value set in the launchpad or in code wins. Secrets (OPENAI_API_KEY) are never resource config: they are read
from the environment by the embedder, so they never show in run config or the UI.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator, Mapping

import dagster as dg
from filelock import FileLock

from rag_assets import config
from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.embedding import Embedder, shared_embedder
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.index.chroma_store import ChromaStore, embedded_collection_id


def _with(base: Settings, **fields) -> Settings:
    """base with the resource's non-empty fields over it."""
    chosen = {k: v for k, v in fields.items() if v}
    return replace(base, **chosen).validated() if chosen else base


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


class RunSettingsResource(dg.ConfigurableResource):
    """A run's settings over its corpus's: configuration variables by name, as the environment spells
    them ({"RAG_DOCS_DIR": "/abs/docs", "RAG_COLLECTION": "x"}; docs/configuration.md). Empty: the
    corpus's settings as its code location resolved them. The CLI passes its flags (--docs-dir,
    --collection, --languages, --include, --exclude) to the runs it starts in other processes this
    way (`rag ingest --workers N`, `rag watch`: run_settings_config); the launchpad can do the same.
    A named corpus's own fields (its folder, collection, store, state) stay its own."""

    variables: dict[str, str] = {}

    def settings_for(self, corpus: Corpus) -> Settings:
        if not self.variables:
            return corpus.settings()
        return corpus.over(corpus.base_settings().with_variables(self.variables)).settings()


# the settings the CLI's flags may set (--docs-dir, --collection, --languages, --versions, --include,
# --exclude): those declared `launched=True` (rag_assets.config.settings)
LAUNCHED_SETTINGS = config.LAUNCHED_SETTINGS


def run_settings_config(corpus: Corpus) -> dict:
    """Run config handing the corpus's settings, as this process resolved them, to a run that executes
    in another process (whose code location reads its own environment): the LAUNCHED_SETTINGS through
    the run_settings resource. What `rag ingest --workers N` and `rag watch` give every run they start."""
    variables = corpus.base_settings().variables(LAUNCHED_SETTINGS)
    return {"resources": {"run_settings": {"config": {"variables": variables}}}}


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model: local all-MiniLM-L6-v2 (ONNX, offline) or OpenAI."""

    embedder: str = ""  # "local" | "openai"; "" = RAG_EMBEDDER
    model: str = ""  # "" = RAG_EMBEDDING_MODEL or the embedder's default
    batch_size: int = 0  # 0 = RAG_EMBED_BATCH_SIZE

    def settings(self, base: Settings) -> Settings:
        return _with(base, embedder=self.embedder, embedding_model=self.model, embed_batch_size=self.batch_size)

    def get(self, base: Settings) -> Embedder:
        return shared_embedder(self.settings(base))

    def cache(self, base: Settings) -> EmbeddingCache:
        return EmbeddingCache.for_settings(self.settings(base).paths)


class VectorStoreResource(dg.ConfigurableResource):
    """The Chroma collection; writers hold a per-collection file lock (one embedded store, one writer)."""

    chroma_path: str = ""  # "" = RAG_CHROMA_PATH
    chroma_host: str = ""  # "" = CHROMA_HOST (unset: embedded PersistentClient)
    chroma_port: int = 0
    collection: str = ""

    def settings(self, base: Settings) -> Settings:
        return _with(base, chroma_path=Path(self.chroma_path).resolve() if self.chroma_path else None,
                     chroma_host=self.chroma_host, chroma_port=self.chroma_port, collection=self.collection)

    def open(self, embedder: Embedder, base: Settings) -> ChromaStore:
        return ChromaStore.for_settings(self.settings(base).paths, embedder)

    def collection_id(self, embedder: Embedder, base: Settings) -> str:
        """The collection's id now, without opening an embedded store when its catalog file can be
        read directly (cheap, and a sensor tick must not open the store a run is writing); a
        missing collection reads "none", so nothing counts as indexed in it."""
        s = self.settings(base)
        if not s.chroma_host:
            try:
                return embedded_collection_id(s.chroma_path, s.collection) or "none"
            except LookupError:
                pass
        return self.open(embedder, base).collection_id

    @contextmanager
    def writer(self, embedder: Embedder, base: Settings) -> Iterator[ChromaStore]:
        """The store for writing. Embedded: opened only once this process holds the store's writer
        lock (so it never writes from a view older than another writer's last change), held until
        the block ends. A server: opened at once; per-document locks keep writers apart."""
        lock = store_writer_lock(self.settings(base))
        with lock if lock is not None else nullcontext():
            yield self.open(embedder, base)


@dataclass(frozen=True)
class IndexResources:
    """The configured embedder and vector store a corpus's runs use, as the staleness rule asks them
    (fingerprints.stale_now): a sensor or schedule tick gets them from Dagster, the CLI from the
    definitions its runs execute (rag_assets.orchestration.definitions.RESOURCES)."""

    embedder: EmbedderResource
    vector_store: VectorStoreResource

    @classmethod
    def of(cls, resources: Mapping[str, Any]) -> "IndexResources":
        return cls(resources["embedder"], resources["vector_store"])


def project_resources() -> dict[str, dg.ConfigurableResource]:
    """The resources every corpus's assets use, under the keys they ask for."""
    return {"embedder": EmbedderResource(), "vector_store": VectorStoreResource(), "run_settings": RunSettingsResource()}
