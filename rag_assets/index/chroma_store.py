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
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.errors import (ConfigurationError, DimensionMismatchError, VectorDBUnavailableError, VectorDBWriteError,
                               VectorStoreFullError)
from rag_assets.models import Chunk
from rag_assets.process_start import start_quietly

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

_WRITE_BATCH = 1000
FREE_FLOOR_BYTES = 8 * 2**20  # kept free under an embedded store (SQLite's WAL, an HNSW resize)
_LOOKUP_DOCS = 100  # documents per `doc_path $in` lookup
# chromadb keeps one client system per path in a class-level dict it fills without a lock: two
# threads opening the same path at once could each make one (two writers on one store)
_OPEN_LOCK = threading.Lock()


def doc_path_filter(doc_paths: Sequence[str]) -> dict:
    """Chroma's metadata filter for "one of these documents" (its $in needs two or more values)."""
    doc_paths = list(doc_paths)
    return {"doc_path": doc_paths[0]} if len(doc_paths) == 1 else {"doc_path": {"$in": doc_paths}}


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


class HitList(list):
    """Query hits; `ghosts` counts the hits dropped because their chunk was deleted meanwhile."""

    ghosts: int = 0


# chunk-level bookkeeping stored next to the document's own fields (title, module, tags, frontmatter)
CHUNK_KEYS = frozenset({"section", "heading_breadcrumb", "chunk_index", "token_count", "content_hash",
                        "embedding_model", "oversized", "description"})


def document_fields(chunk_metadata: dict[str, Any]) -> dict[str, Any]:
    """A stored chunk's metadata without the chunk-level keys: its document's fields (what retrieval
    filters select on)."""
    return {k: v for k, v in chunk_metadata.items() if k not in CHUNK_KEYS and isinstance(v, (str, int, float, bool))}


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
        port: int = DEFAULTS["chroma_port"],
        collection: str = DEFAULTS["collection"],
        embedding_model: str,
        dimension: int,
    ):
        self.collection_name = collection
        self.embedding_model = embedding_model
        self.dimension = dimension
        self.path = None if host else Path(path)  # an embedded store's folder (its disk is ours to watch)
        try:
            import chromadb

            if host:
                self._client = chromadb.HttpClient(host=host, port=port, settings=_chroma_settings())
                self._client.heartbeat()
            else:
                assert path is not None, "ChromaStore needs a path or a host"
                Path(path).mkdir(parents=True, exist_ok=True)
                self._client = _embedded_client(Path(path))
            # embedding_function=None: we always pass vectors ourselves; Chroma's default function
            # would try to download a model.
            self._collection = self._client.get_or_create_collection(
                name=collection,
                embedding_function=None,
                metadata={"hnsw:space": "cosine", "embedding_model": embedding_model, "dimension": dimension},
            )
        except Exception as exc:  # chromadb raises many types for "cannot reach/open"
            where = f"{host}:{port}" if host else str(path)
            # what to do about it, in the same line (the pipeline-API contract: errors carry guidance)
            todo = ("check that the Chroma server runs there (CHROMA_HOST, CHROMA_PORT), then retry" if host else
                    "check that the folder is readable and no other process holds it (RAG_CHROMA_PATH), then retry")
            reason = " ".join(str(exc).split())
            raise VectorDBUnavailableError(f"cannot open Chroma collection {collection!r} at {where}: {reason}; "
                                           f"{todo}") from exc
        meta = self._collection.metadata or {}
        if meta.get("dimension") not in (None, dimension):
            raise DimensionMismatchError(
                f"Chroma collection {collection!r} holds {meta.get('dimension')}-d vectors "
                f"({meta.get('embedding_model')}) but the configured embedder {embedding_model} makes "
                f"{dimension}-d ones: set RAG_COLLECTION to a new name or delete the collection to rebuild it",
                expected=meta.get("dimension"), actual=dimension)
        if meta.get("embedding_model") not in (None, embedding_model):
            raise ConfigurationError(
                f"Chroma collection {collection!r} was built with {meta.get('embedding_model')} "
                f"({meta.get('dimension')}-d) but the configured embedder is {embedding_model} ({dimension}-d): "
                "set RAG_COLLECTION to a new name or delete the collection to rebuild it"
                + (" (several languages, RAG_LANGUAGES, choose multilingual-e5-small when it is installed: "
                   f"RAG_EMBEDDING_MODEL={meta.get('embedding_model')} keeps this collection's model)"
                   if "multilingual" in f"{embedding_model} {meta.get('embedding_model')}" else "")
            )

    @classmethod
    def for_settings(cls, paths, embedder) -> "ChromaStore":
        """The configured collection (rag_assets.config.PathSettings: the settings' `paths`) for this embedder's vectors."""
        return cls(
            path=paths.chroma_path,
            host=paths.chroma_host,
            port=paths.chroma_port,
            collection=paths.collection,
            embedding_model=embedder.model_name,
            dimension=embedder.dimension,
        )

    @property
    def collection_id(self) -> str:
        return str(self._collection.id)

    # writes -------------------------------------------------------------------------------
    def replace_document(self, doc_path: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> ReplaceResult:
        return self.replace_documents([(doc_path, chunks, vectors)])[doc_path]

    def replace_documents(self, docs: Sequence[tuple[str, Sequence[Chunk], np.ndarray]]) -> dict[str, ReplaceResult]:
        """Replace several documents at once: one lookup of what is stored, the new and changed
        chunks of all of them written in large batches, THEN their stale chunks deleted. A failure
        part-way leaves every document's previous version whole (plus, at worst, new chunks the
        next run reconciles)."""
        for doc_path, chunks, vectors in docs:
            # checked here, not by Chroma: a new collection takes the size of the first vectors it
            # is given, so one bad document would make every good one fail after it
            if len(chunks) and np.shape(vectors) != (len(chunks), self.dimension):
                raise ValueError(f"{doc_path}: {np.shape(vectors)} vectors for {len(chunks)} chunks; "
                                 f"the collection holds {self.dimension}-d vectors of {self.embedding_model}")
        existing = self._existing_many([doc_path for doc_path, _, _ in docs])
        ids: list[str] = []
        vecs: list[np.ndarray] = []
        texts: list[str] = []
        metas: list[dict] = []
        stale: list[str] = []
        results: dict[str, ReplaceResult] = {}
        for doc_path, chunks, vectors in docs:
            have = existing.get(doc_path, {})
            new_ids = [c.chunk_id for c in chunks]
            write = [i for i, c in enumerate(chunks) if have.get(c.chunk_id) != (c.chunk_index, c.content_hash)]
            for i in write:
                ids.append(new_ids[i])
                vecs.append(np.asarray(vectors[i], dtype=np.float32))
                texts.append(chunks[i].text)
                metas.append(chunk_metadata(chunks[i], self.embedding_model))
            gone = sorted(set(have) - set(new_ids))
            stale.extend(gone)
            results[doc_path] = ReplaceResult(written=len(write), deleted=len(gone), unchanged=len(chunks) - len(write))
        self.ensure_room(len(ids), sum(len(t) for t in texts) + sum(len(str(m)) for m in metas), len(stale))
        for start in range(0, len(ids), _WRITE_BATCH):
            end = start + _WRITE_BATCH
            self._write(self._collection.upsert, ids=ids[start:end], embeddings=np.stack(vecs[start:end]),
                       documents=texts[start:end], metadatas=metas[start:end])
        self.delete_ids(stale)
        return results

    def ensure_room(self, vectors: int, text_bytes: int, deletes: int = 0) -> None:
        """Refuse a write the disk under an embedded store cannot take, before Chroma starts it.

        A write that runs out of disk half-way is the worst case: SQLite's log takes the records but
        Chroma cannot apply them, every later read fails ("Failed to apply logs to the metadata
        segment"), and the HNSW flush can block forever. So: at least twice the estimated growth
        (measured: 6-9 KB a 384-d chunk, mostly the vector stored three times, plus its text and
        metadata twice over for the full-text index) and FREE_FLOOR_BYTES besides must be free."""
        if self.path is None or not (vectors or deletes):
            return
        need = vectors * (3 * 4 * self.dimension + 2048) + 3 * text_bytes + deletes * 512
        try:
            free = shutil.disk_usage(self.path).free
        except OSError:
            return  # cannot tell: let the write say what is wrong
        if free < 2 * need + FREE_FLOOR_BYTES:
            raise VectorStoreFullError(
                f"not enough free disk for the vector store at {self.path}: {free / 2**20:.1f} MB free, this write of "
                f"{vectors} vectors needs about {need / 2**20:.1f} MB (twice that, plus "
                f"{FREE_FLOOR_BYTES // 2**20} MB, is kept free). Nothing was written; free space or move RAG_CHROMA_PATH, "
                "then run `rag ingest` again")

    def delete_document(self, doc_path: str) -> int:
        return self.delete_documents([doc_path])[doc_path]

    def delete_documents(self, doc_paths: Sequence[str]) -> dict[str, int]:
        """Delete every vector of these documents (found by their doc_path metadata)."""
        existing = self._existing_many(doc_paths)
        ids = [cid for doc in existing.values() for cid in doc]
        self.ensure_room(0, 0, len(ids))
        self.delete_ids(ids)
        return {p: len(existing.get(p, {})) for p in doc_paths}

    def delete_ids(self, ids: Sequence[str]) -> None:
        ids = list(ids)
        for start in range(0, len(ids), _WRITE_BATCH):
            self._write(self._collection.delete, ids=ids[start : start + _WRITE_BATCH])

    # reads --------------------------------------------------------------------------------
    def ids_of(self, doc_paths: Sequence[str]) -> dict[str, set[str]]:
        """doc_path -> ids of its stored chunks."""
        return {doc: set(chunks) for doc, chunks in self._existing_many(doc_paths).items()}

    def _existing_many(self, doc_paths: Sequence[str]) -> dict[str, dict[str, tuple[int, str]]]:
        """doc_path -> {chunk id: (chunk_index, content_hash)} of what the store holds for them."""
        out: dict[str, dict[str, tuple[int, str]]] = {}
        doc_paths = list(dict.fromkeys(doc_paths))
        for start in range(0, len(doc_paths), _LOOKUP_DOCS):
            part = doc_paths[start : start + _LOOKUP_DOCS]
            got = self._call(self._collection.get, where=doc_path_filter(part), include=["metadatas"])
            for cid, meta in zip(got["ids"], got["metadatas"] or []):
                meta = meta or {}
                out.setdefault(meta.get("doc_path"), {})[cid] = (meta.get("chunk_index"), meta.get("content_hash"))
        return out

    def query(
        self, vector: np.ndarray, top_k: int = 5, doc_paths: Sequence[str] | None = None, where: dict | None = None
    ) -> list[VectorHit]:
        """The top_k nearest chunks, optionally only among these documents."""
        if np.shape(vector)[-1] != self.dimension:
            raise DimensionMismatchError(
                f"a {np.shape(vector)[-1]}-d query vector for collection {self.collection_name!r}, which holds "
                f"{self.dimension}-d vectors of {self.embedding_model}", expected=self.dimension,
                actual=int(np.shape(vector)[-1]))
        if self.count() == 0:
            return []
        if doc_paths is not None:
            where = doc_path_filter(doc_paths)
        got = self._call(
            self._collection.query,
            query_embeddings=[np.asarray(vector, dtype=np.float32)],
            n_results=top_k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        hits = HitList(
            VectorHit(chunk_id=cid, text=doc, metadata=meta, score=1.0 - float(dist))
            for cid, doc, meta, dist in zip(got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0])
            if meta is not None and doc is not None
        )
        # an embedded client's cached vector index can still hold chunks another process deleted:
        # they come back without text or metadata. Dropped here; counted for the caller to re-open.
        hits.ghosts = len(got["ids"][0]) - len(hits)
        return hits

    def get(self, ids: Sequence[str]) -> list[VectorHit]:
        if not ids:
            return []
        got = self._call(self._collection.get, ids=list(ids), include=["documents", "metadatas"])
        by_id = {cid: (doc, meta) for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])}
        return [VectorHit(cid, *by_id[cid], score=0.0) for cid in ids if cid in by_id]

    def section_chunks(self, doc_path: str, heading_breadcrumb: str) -> list[VectorHit]:
        """The stored chunks of one document with this heading path (one metadata-filtered read: the
        context windows' fallback when the keyword index cannot say which chunks they are)."""
        where = {"$and": [{"doc_path": doc_path}, {"heading_breadcrumb": heading_breadcrumb}]}
        got = self._call(self._collection.get, where=where, include=["documents", "metadatas"])
        return [VectorHit(cid, doc, meta, 0.0) for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])
                if doc is not None and meta is not None]

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

    def close(self) -> None:
        """Release the client (an embedded one drops its cached view of the store: a long-lived
        reader re-opens after another process wrote)."""
        close = getattr(self._client, "close", None)
        if close is not None:
            close()

    def _write(self, fn, **kwargs):
        """_call for an upsert or a delete: the store failing it is a VectorDBWriteError."""
        try:
            return self._call(fn, **kwargs)
        except VectorDBWriteError:
            raise
        except VectorDBUnavailableError as exc:
            raise VectorDBWriteError(f"write failed: {exc}") from exc.__cause__

    def _call(self, fn, **kwargs):
        try:
            return fn(**kwargs)
        except (ConnectionError, OSError) as exc:
            raise VectorDBUnavailableError(f"Chroma collection {self.collection_name!r} unavailable: {exc}") from exc
        except Exception as exc:
            if type(exc).__module__.startswith(("httpx", "httpcore", "requests")):
                raise VectorDBUnavailableError(f"Chroma server unavailable: {exc}") from exc
            raise


def _chroma_settings():
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False)


def _embedded_client(path: Path):
    import chromadb

    with _OPEN_LOCK:
        return chromadb.PersistentClient(path=str(path), settings=_chroma_settings())


def open_in_background(settings) -> threading.Thread | None:
    """Open the embedded store's collection and read one record, in a thread.

    chromadb loads a collection's segments on its first use: at 40,000 chunks 0.18 s to open and
    0.2 s for the first read, mostly without the GIL. Done while a run parses, chunks and embeds,
    the run's own open then finds them loaded (one client system per path, shared). Only for a
    caller that holds the store's writer lock: no other process writes the store meanwhile, so the
    view loaded now is still current when the run writes. Read-only (a missing collection is left
    to the run to create, with its model); None for a Chroma server."""
    if settings.chroma_host or not (Path(settings.chroma_path) / "chroma.sqlite3").exists():
        return None

    # a failed open: the run opens the store itself and reports what is wrong
    return start_quietly("rag-store-open", lambda: _embedded_client(Path(settings.chroma_path))
                         .get_collection(settings.collection).get(limit=1, include=[]))


def copy_collection(source: Path, target: Path, collection: str, batch: int = 5000) -> tuple[str | None, str, int]:
    """Copy a collection of one embedded store into another, as it is: ids, vectors, texts,
    metadata and the collection's own metadata (model, dimension, cosine space). Nothing is
    embedded again. Returns (the source collection's id, the copy's id, rows copied); the source
    id is None (and nothing copied) when the source has no such collection. The caller holds both
    stores' writer locks; both clients are closed afterwards, so the target folder may be moved."""
    source_client = _embedded_client(Path(source))
    Path(target).mkdir(parents=True, exist_ok=True)
    target_client = _embedded_client(Path(target))
    try:
        try:
            old = source_client.get_collection(collection)
        except Exception:  # noqa: BLE001 - chromadb raises NotFoundError/ValueError by version
            old = None
        meta = (old.metadata if old is not None else None) or {"hnsw:space": "cosine"}
        new = target_client.get_or_create_collection(name=collection, embedding_function=None, metadata=meta)
        if old is None:
            return None, str(new.id), 0
        copied, offset = 0, 0
        while True:
            got = old.get(limit=batch, offset=offset, include=["embeddings", "documents", "metadatas"])
            if not got["ids"]:
                break
            new.upsert(ids=got["ids"], embeddings=np.asarray(got["embeddings"], dtype=np.float32),
                       documents=got["documents"], metadatas=got["metadatas"])
            copied += len(got["ids"])
            offset += len(got["ids"])
        if new.count() != old.count():
            raise VectorDBUnavailableError(f"copying collection {collection!r} from {source} to {target}: "
                                           f"{new.count()} rows arrived of {old.count()}")
        return str(old.id), str(new.id), copied
    finally:
        target_client.close()
        source_client.close()


def drop_collection(path: Path, collection: str) -> bool:
    """Delete a collection of an embedded store (the caller holds its writer lock); False when it
    was not there."""
    client = _embedded_client(Path(path))
    try:
        names = {getattr(c, "name", c) for c in client.list_collections()}
        if collection not in names:
            return False
        client.delete_collection(collection)
        return True
    finally:
        client.close()


def delete_from_collection(path: Path, collection: str, ids: Sequence[str]) -> int:
    """Delete these ids from a collection of an embedded store (the caller holds its writer lock);
    how many of them it held."""
    client = _embedded_client(Path(path))
    try:
        found = client.get_collection(collection).get(ids=list(ids), include=[])["ids"] if ids else []
        for start in range(0, len(found), _WRITE_BATCH):
            client.get_collection(collection).delete(ids=found[start : start + _WRITE_BATCH])
        return len(found)
    finally:
        client.close()


def embedded_collection_id(path: Path, collection: str) -> str | None:
    """The id of a collection of an embedded Chroma store, read from Chroma's own catalog file
    without importing chromadb (≈1.4 s): a no-op ingest uses it to notice a deleted or recreated
    collection cheaply. None when there is no such store or collection. Raises LookupError when the
    file does not look like the expected Chroma layout; the caller then opens the store properly."""
    import sqlite3

    db_file = Path(path) / "chroma.sqlite3"
    if not db_file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT id FROM collections WHERE name = ?", (collection,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise LookupError(f"unexpected Chroma layout in {db_file}: {exc}") from None
    return str(row[0]) if row else None


def collection_count(settings) -> int | None:
    """How many vectors the configured collection holds (0 when it does not exist; None when the
    store cannot be read), without an embedder: for listings."""
    try:
        import chromadb

        if settings.chroma_host:
            client = chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port, settings=_chroma_settings())
        elif not Path(settings.chroma_path).is_dir():
            return 0
        else:
            client = _embedded_client(Path(settings.chroma_path))
        names = {getattr(c, "name", c) for c in client.list_collections()}
        return client.get_collection(settings.collection).count() if settings.collection in names else 0
    except Exception:  # noqa: BLE001 - a listing says "-" rather than failing
        return None
