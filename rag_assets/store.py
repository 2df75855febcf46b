"""Vector storage in Chroma: one cosine collection, replaced one document at a time.

Per-document replace writes the new chunks first and only then deletes the document's chunks
that are not in the new set, so a failure part-way leaves the previous version whole (plus, at
worst, some new chunks that the next run reconciles). Chunk ids are content-addressed (ids.py),
so unchanged chunks of an edited document are not rewritten.

The collection records the embedding model and dimension it was built with; opening it with a
different model is refused instead of mixing incomparable vectors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag_assets.errors import ConfigurationError, VectorDBUnavailableError
from rag_assets.models import Chunk

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

_WRITE_BATCH = 1000


@dataclass(frozen=True)
class ReplaceResult:
    written: int
    deleted: int
    unchanged: int


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    text: str
    metadata: dict[str, Any]
    score: float  # cosine similarity, 1 = identical direction


def chunk_metadata(chunk: Chunk, embedding_model: str) -> dict[str, Any]:
    """Flat metadata stored with every vector (Chroma takes str/int/float/bool only)."""
    meta: dict[str, Any] = {
        k: v for k, v in chunk.metadata.items() if isinstance(v, (str, int, float, bool)) and v is not None
    }
    meta.update(
        doc_path=chunk.doc_path,
        title=str(chunk.metadata.get("title", "")),
        section=chunk.section,
        heading_breadcrumb=" > ".join(chunk.heading_breadcrumb),
        chunk_index=chunk.chunk_index,
        token_count=chunk.token_count,
        content_hash=chunk.content_hash,
        embedding_model=embedding_model,
        oversized=chunk.oversized,
    )
    return meta


class ChromaStore:
    def __init__(
        self,
        *,
        path: Path | None = None,
        host: str | None = None,
        port: int = 8000,
        collection: str = "rag_chunks",
        embedding_model: str,
        dimension: int,
    ):
        self.collection_name = collection
        self.embedding_model = embedding_model
        self.dimension = dimension
        try:
            import chromadb
            from chromadb.config import Settings as ChromaSettings

            chroma_settings = ChromaSettings(anonymized_telemetry=False)
            if host:
                self._client = chromadb.HttpClient(host=host, port=port, settings=chroma_settings)
                self._client.heartbeat()
            else:
                assert path is not None, "ChromaStore needs a path or a host"
                Path(path).mkdir(parents=True, exist_ok=True)
                self._client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
            # embedding_function=None: we always pass vectors ourselves; Chroma's default function
            # would try to download a model.
            self._collection = self._client.get_or_create_collection(
                name=collection,
                embedding_function=None,
                metadata={"hnsw:space": "cosine", "embedding_model": embedding_model, "dimension": dimension},
            )
        except Exception as exc:  # chromadb raises many types for "cannot reach/open"
            where = f"{host}:{port}" if host else str(path)
            raise VectorDBUnavailableError(f"cannot open Chroma collection {collection!r} at {where}: {exc}") from exc
        meta = self._collection.metadata or {}
        if meta.get("embedding_model") not in (None, embedding_model) or meta.get("dimension") not in (None, dimension):
            raise ConfigurationError(
                f"Chroma collection {collection!r} was built with {meta.get('embedding_model')} "
                f"({meta.get('dimension')}-d) but the configured embedder is {embedding_model} ({dimension}-d): "
                "set RAG_COLLECTION to a new name or delete the collection to rebuild it"
            )

    @classmethod
    def for_settings(cls, settings, embedder) -> "ChromaStore":
        """The configured collection (rag_assets.config.Settings) for this embedder's vectors."""
        return cls(
            path=settings.chroma_path,
            host=settings.chroma_host,
            port=settings.chroma_port,
            collection=settings.collection,
            embedding_model=embedder.model_name,
            dimension=embedder.dimension,
        )

    @property
    def collection_id(self) -> str:
        return str(self._collection.id)

    # writes -------------------------------------------------------------------------------
    def replace_document(self, doc_path: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> ReplaceResult:
        existing = self._existing(doc_path)
        new_ids = [c.chunk_id for c in chunks]
        to_write = [
            i
            for i, c in enumerate(chunks)
            if existing.get(c.chunk_id) != (c.chunk_index, c.content_hash)
        ]
        for start in range(0, len(to_write), _WRITE_BATCH):
            part = to_write[start : start + _WRITE_BATCH]
            self._call(
                self._collection.upsert,
                ids=[new_ids[i] for i in part],
                embeddings=np.asarray(vectors[part], dtype=np.float32),
                documents=[chunks[i].text for i in part],
                metadatas=[chunk_metadata(chunks[i], self.embedding_model) for i in part],
            )
        stale = sorted(set(existing) - set(new_ids))
        for start in range(0, len(stale), _WRITE_BATCH):
            self._call(self._collection.delete, ids=stale[start : start + _WRITE_BATCH])
        return ReplaceResult(written=len(to_write), deleted=len(stale), unchanged=len(chunks) - len(to_write))

    def delete_document(self, doc_path: str) -> int:
        ids = list(self._existing(doc_path))
        for start in range(0, len(ids), _WRITE_BATCH):
            self._call(self._collection.delete, ids=ids[start : start + _WRITE_BATCH])
        return len(ids)

    # reads --------------------------------------------------------------------------------
    def _existing(self, doc_path: str) -> dict[str, tuple[int, str]]:
        got = self._call(self._collection.get, where={"doc_path": doc_path}, include=["metadatas"])
        return {
            cid: (meta.get("chunk_index"), meta.get("content_hash"))
            for cid, meta in zip(got["ids"], got["metadatas"] or [])
        }

    def query(self, vector: np.ndarray, top_k: int = 5, where: dict | None = None) -> list[VectorHit]:
        if self.count() == 0:
            return []
        got = self._call(
            self._collection.query,
            query_embeddings=[np.asarray(vector, dtype=np.float32)],
            n_results=top_k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        return [
            VectorHit(chunk_id=cid, text=doc, metadata=meta, score=1.0 - float(dist))
            for cid, doc, meta, dist in zip(got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0])
        ]

    def get(self, ids: Sequence[str]) -> list[VectorHit]:
        if not ids:
            return []
        got = self._call(self._collection.get, ids=list(ids), include=["documents", "metadatas"])
        by_id = {cid: (doc, meta) for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])}
        return [VectorHit(cid, *by_id[cid], score=0.0) for cid in ids if cid in by_id]

    def iter_all(self, batch: int = 5000, include_embeddings: bool = False):
        """Every stored chunk as (id, text, metadata[, embedding]) in pages, never all at once."""
        include = ["documents", "metadatas"] + (["embeddings"] if include_embeddings else [])
        offset = 0
        while True:
            got = self._call(self._collection.get, limit=batch, offset=offset, include=include)
            if not got["ids"]:
                return
            rows = zip(got["ids"], got["documents"], got["metadatas"], *( [got["embeddings"]] if include_embeddings else []))
            yield from rows
            offset += len(got["ids"])

    def ids(self, batch: int = 10000) -> set[str]:
        """Every stored chunk id (no texts, no metadata: cheap at 100k chunks)."""
        out: set[str] = set()
        offset = 0
        while True:
            got = self._call(self._collection.get, limit=batch, offset=offset, include=[])
            if not got["ids"]:
                return out
            out.update(got["ids"])
            offset += len(got["ids"])

    def doc_paths(self) -> set[str]:
        return {meta["doc_path"] for _, _, meta in self.iter_all()}

    def count(self) -> int:
        return self._call(self._collection.count)

    def _call(self, fn, **kwargs):
        try:
            return fn(**kwargs)
        except (ConnectionError, OSError) as exc:
            raise VectorDBUnavailableError(f"Chroma collection {self.collection_name!r} unavailable: {exc}") from exc
        except Exception as exc:
            if type(exc).__module__.startswith(("httpx", "httpcore", "requests")):
                raise VectorDBUnavailableError(f"Chroma server unavailable: {exc}") from exc
            raise
