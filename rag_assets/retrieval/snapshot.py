"""The search snapshot: what a query ranks over, held in memory per process, persisted and rebuilt only
when the index changes: a BM25 (keyword) index, a heading index, a row table and the stored vectors
of every chunk in the Chroma collection.

What is indexed: for every chunk in the Chroma collection, the same text that is embedded
(``build_index_text(title, breadcrumb, text)``), tokenised by ``tokenize`` (terms.py), with the
chunk's ``title > h1 > h2`` header counted ``heading_repeats`` more times
(``RAG_KEYWORD_HEADING_REPEATS``, default 3: a field weight for the headings, which name what a section
is about). Scoring is bm25s' Lucene BM25 (k1=1.5, b=0.75).

Next to it, a second small BM25 index over each chunk's headings only (``title > h1 > h2``: what
the re-scoring stage matches the query against) and a row table: per chunk its doc_path, its
section key (doc_path + breadcrumb), a key of its normalised text, its chunk_index and token count, and
whether it opens a section (windows.py: the context windows of results are grown
from this table, their texts fetched by id). Ranking (fusion, re-scoring,
diversity) then runs on rows in memory; Chroma is asked only for the texts of the final results.

Persistence (snapshot_builds.py): ``<state_dir>/keyword/<collection>/`` holds one folder per build
plus ``CURRENT`` (atomically replaced) naming the active one. A build folder holds the two bm25s indexes, the chunk
ids in index order, the row table, the chunks' stored embeddings (float32, memory-mapped on load:
they give the dense cosine of keyword-only hits without another store round trip) and
``meta.json`` with the index generation and the Chroma collection id it was built from. A process loads the persisted build when
both still match, and rebuilds (streaming the chunks from ``ChromaStore.iter_all``, under a lock
so concurrent processes build once) only when the generation changed. Each search re-reads the
generation (one small read of the state database) so an ingest elsewhere is noticed on the next query.

With a shared (PostgreSQL) state database the build is published there too (``keyword_builds``: the
build folder as a gzipped tar, one row per collection) and the lock is an advisory lock in that
database: a query process on any machine loads the current build (unpacking it into its local state
folder once) instead of building its own.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from rag_assets.index.chroma_store import ChromaStore, document_fields
from rag_assets.index.generation import current_generation
from rag_assets.index.state_db import StateDB
from rag_assets.retrieval.snapshot_builds import FolderBuilds, SharedBuilds
from rag_assets.retrieval.terms import chunk_headings_text, chunk_index_text, family, query_terms, section_key, \
    text_key, tokenize
from rag_assets.retrieval.windows import SectionRuns, opens_section, stored_tokens

log = logging.getLogger(__name__)

# Bump when the tokenizer or the stored layout changes: persisted builds with another version are rebuilt.
FORMAT_VERSION = "kw-v6"
# Extra times a chunk's header is counted in the BM25 index (see the module docstring).
DEFAULT_HEADING_REPEATS = 3


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    score: float  # BM25
    row: int  # position in the keyword index (for embeddings lookup)


@dataclass(frozen=True)
class ChunkRow:
    """What ranking needs to know about a chunk, held in memory for every chunk."""

    doc_path: str
    section: str  # section_key
    text: str  # text_key
    chunk_index: int = 0
    tokens: int = 0  # the stored token_count of the chunk's text
    opens: bool = False  # its text starts with a heading line: the first chunk of a section


class SearchSnapshot:
    """BM25 over one Chroma collection, tied to the index generation."""

    def __init__(self, store: ChromaStore, state_dir: Path, collection: str | None = None, state: StateDB | None = None,
                 heading_repeats: int = DEFAULT_HEADING_REPEATS):
        if heading_repeats < 0:
            raise ValueError(f"heading_repeats must be >= 0, got {heading_repeats}")
        self.store = store
        self.heading_repeats = heading_repeats
        self.state_dir = Path(state_dir)
        self.collection = collection or store.collection_name
        self.root = self.state_dir / "keyword" / self.collection
        self.state = state  # None: the local SQLite state in state_dir
        shared = state is not None and not state.is_sqlite
        self._published = SharedBuilds(state, self.root, self.collection, self.state_dir) if shared else FolderBuilds(self.root)
        self.builds = 0  # builds done by this object (tests and logs)
        self.loads = 0  # persisted builds loaded from disk by this object
        self._generation: str | None = None
        self._bm25 = None
        self._headings = None  # bm25s over chunk headers only
        self._table: list[ChunkRow] = []
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._embeddings: np.ndarray | None = None
        self._meta: dict = {}
        self._query = threading.local()  # the generation pinned for the current query (pinned())
        self._documents: dict[str, dict] = {}  # doc_path -> its filterable fields (retrieval.filters)
        self._row_docs: np.ndarray = np.zeros(0, dtype=np.int64)  # row -> index into _doc_order
        self._doc_order: list[str] = []
        self._sections: tuple[list, SectionRuns] | None = None  # (its table, the runs): on the first context look-up

    @classmethod
    def for_settings(cls, store: ChromaStore, settings) -> "SearchSnapshot":
        return cls(store, settings.state_dir, settings.collection, state=StateDB.for_settings(settings),
                   heading_repeats=settings.keyword_heading_repeats)

    # ------------------------------------------------------------------------------------------
    @property
    def meta(self) -> dict:
        return dict(self._meta)

    def __len__(self) -> int:
        return len(self._ids)

    @contextmanager
    def pinned(self, generation: str):
        """One query's calls read the generation once (the retriever's), not once per call: each
        read is a state-database round trip (~1 ms), and a query makes five or six."""
        previous = getattr(self._query, "generation", None)
        self._query.generation = generation
        try:
            yield self
        finally:
            self._query.generation = previous

    def ensure_current(self) -> None:
        """Make the in-memory index match the current generation: keep, load from disk, or rebuild."""
        generation = getattr(self._query, "generation", None) or current_generation(
            self.state if self.state is not None else self.state_dir)
        if self._bm25 is not None and generation == self._generation:
            return
        if self._load(generation):
            return
        self._build_locked(generation)

    def scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every indexed chunk (row order), or None when no query term is indexed."""
        self.ensure_current()
        return _all_scores(self._bm25, self.query_terms(query)) if self._ids else None

    def query_terms(self, query: str) -> list[str]:
        """The query's BM25 terms as the languages of this build's chunks read them."""
        return query_terms(query, self._meta.get("languages") or ("en",))

    def heading_scores(self, query: str, rows: Sequence[int]) -> np.ndarray:
        """BM25 of the query against the headers (title > h1 > h2) of the given rows."""
        self.ensure_current()
        scores = _all_scores(self._headings, self.query_terms(query)) if self._ids and self._headings is not None else None
        if scores is None:
            return np.zeros(len(rows), dtype=np.float32)
        return scores[np.asarray(rows, dtype=np.int64)]

    # Row lookups below read the build loaded by the last scores()/search()/ensure_current() call:
    # one query asks them many times and must see one consistent build.
    def row(self, chunk_id: str) -> int | None:
        """The chunk's row in this index (None when it is not indexed)."""
        return self._rows.get(chunk_id)

    def chunk_id(self, row: int) -> str:
        return self._ids[row]

    def table(self, row: int) -> ChunkRow:
        return self._table[row]

    def section_rows(self, chunk_id: str) -> tuple[np.ndarray, int] | None:
        """The rows of the chunk's section in document order and the chunk's place among them (None
        when the chunk is not in this build). Reads the current build (ensure_current)."""
        self.ensure_current()
        table, row = self._table, self._rows.get(chunk_id)
        if row is None:
            return None
        built = self._sections
        if built is None or built[0] is not table:  # ~75 ms at 100k chunks, once a build
            built = self._sections = (table, SectionRuns.build(
                [r.doc_path for r in table], [r.section for r in table], [r.chunk_index for r in table],
                [r.opens for r in table]))
        return built[1].section_of(row)

    def rare_terms(self, query: str, row: int, max_chunks: int) -> list[str]:
        """The query's terms that the chunk at ``row`` contains and at most ``max_chunks`` chunks do."""
        if not self._ids:
            return []
        vocab = self._bm25.vocab_dict
        indptr, indices = self._bm25.scores["indptr"], self._bm25.scores["indices"]
        found = []
        for term in dict.fromkeys(self.query_terms(query)):
            tid = vocab.get(term)
            if tid is None:
                continue
            lo, hi = int(indptr[tid]), int(indptr[tid + 1])  # the chunks holding the term: indices[lo:hi]
            if hi - lo <= max_chunks and row in indices[lo:hi]:
                found.append(term)
        return found

    def documents(self) -> dict[str, dict]:
        """Every indexed document's filterable fields (from its chunks' stored metadata)."""
        self.ensure_current()
        return self._documents

    def rows_of(self, doc_paths: set[str]) -> np.ndarray:
        """A boolean mask over this build's rows: True where the chunk belongs to one of doc_paths."""
        wanted = np.fromiter((d in doc_paths for d in self._doc_order), dtype=bool, count=len(self._doc_order))
        return wanted[self._row_docs] if len(self._row_docs) else np.zeros(0, dtype=bool)

    def search(self, query: str, top_k: int, mask: np.ndarray | None = None) -> list[KeywordHit]:
        scores = self.scores(query)
        if scores is None:
            return []
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        k = min(top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        # by score, ties by index order (stable and deterministic)
        top = top[np.lexsort((top, -scores[top]))]
        return [KeywordHit(self._ids[i], float(scores[i]), int(i)) for i in top if scores[i] > 0]

    def nearest(self, query_vector: np.ndarray, k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The k rows (among mask's) nearest the query by exact cosine, best first, with their cosines;
        None when this build holds no embeddings."""
        self.ensure_current()
        if self._embeddings is None or mask is None or len(mask) != len(self._ids):
            return None
        rows = np.flatnonzero(mask)
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        sims = np.asarray(self._embeddings[rows], dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32)
        k = min(k, len(rows))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.lexsort((rows[top], -sims[top]))]
        return rows[top], sims[top]

    def cosines(self, query_vector: np.ndarray, chunk_ids: Iterable[str]) -> dict[str, float]:
        """Dense cosine of the query with each chunk's stored embedding (ids not in the index are skipped)."""
        self.ensure_current()
        if self._embeddings is None:
            return {}
        wanted = [(cid, self._rows[cid]) for cid in chunk_ids if cid in self._rows]
        if not wanted:
            return {}
        rows = np.fromiter((r for _, r in wanted), dtype=np.int64)
        q = np.asarray(query_vector, dtype=np.float32)
        sims = np.asarray(self._embeddings[rows], dtype=np.float32) @ q
        return {cid: float(s) for (cid, _), s in zip(wanted, sims)}

    # ------------------------------------------------------------------------------------------
    def _matches(self, meta: dict, generation: str) -> bool:
        return (
            meta.get("format") == FORMAT_VERSION
            and meta.get("heading_repeats") == self.heading_repeats
            and meta.get("generation") == generation
            and meta.get("collection_id") == self.store.collection_id
        )

    def _load(self, generation: str) -> bool:
        folder = self._published.current()
        if folder is None:
            return False
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            if not self._matches(meta, generation):
                return False
            ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
            table = [ChunkRow(*row) for row in json.loads((folder / "rows.json").read_text(encoding="utf-8"))]
            documents = json.loads((folder / "documents.json").read_text(encoding="utf-8"))
            bm25 = headings = None
            if ids:
                import bm25s

                bm25 = bm25s.BM25.load(str(folder / "bm25"), load_vocab=True, show_progress=False)
                headings = bm25s.BM25.load(str(folder / "headings"), load_vocab=True, show_progress=False)
            emb_path = folder / "embeddings.npy"
            embeddings = np.load(emb_path, mmap_mode="r") if emb_path.exists() else None
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a half-deleted or foreign folder: rebuild
            log.warning("keyword index at %s unreadable (%s); rebuilding", folder, exc)
            return False
        self._install(generation, bm25, headings, ids, table, embeddings, meta, documents)
        self.loads += 1
        return True

    def rebuild(self, generation: str) -> None:
        """Build now from the store although a build of this generation exists: another process
        changed the store and has not bumped the generation yet (a reader found chunks deleted)."""
        self._build_locked(generation, reuse=False)

    def _build_locked(self, generation: str, reuse: bool = True) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            writable = os.access(self.root, os.W_OK)
        except OSError:
            writable = False
        if not writable:
            # a reader on a state folder it may not write (a read-only mount, another user's index):
            # build for this process only, in memory, rather than give up hybrid search
            log.info("keyword index: %s is not writable; building it in memory for this process", self.root)
            self._build(generation, publish=False)
            return
        with self._published.lock():
            if reuse and self._load(generation):  # another process built it while we waited
                return
            self._build(generation)

    def _build(self, generation: str, publish: bool = True) -> None:
        start = time.perf_counter()
        ids: list[str] = []
        corpus: list[list[str]] = []
        heading_corpus: list[list[str]] = []
        table: list[ChunkRow] = []
        vectors: list[np.ndarray] = []
        documents: dict[str, dict] = {}
        languages: set[str] = set()
        model = None
        for row in self.store.iter_all(include_embeddings=True):
            cid, text, meta, emb = row
            meta = meta or {}
            documents.setdefault(str(meta.get("doc_path", "")), document_fields(meta))
            ids.append(cid)
            language = meta.get("language")
            languages.add(family(language))
            header = tokenize(chunk_headings_text(meta), language)
            corpus.append(tokenize(chunk_index_text(text, meta), language) + header * self.heading_repeats)
            heading_corpus.append(header)
            table.append(ChunkRow(str(meta.get("doc_path", "")), section_key(meta), text_key(text),
                                  _int(meta.get("chunk_index")), stored_tokens(meta.get("token_count"), text),
                                  opens_section(text)))
            vectors.append(np.asarray(emb, dtype=np.float32))
            model = model or meta.get("embedding_model")
        bm25 = _bm25_index(corpus) if ids else None
        headings = _bm25_index(heading_corpus) if ids else None
        embeddings = np.vstack(vectors).astype(np.float32) if ids else None
        del vectors
        meta = {
            "format": FORMAT_VERSION,
            "heading_repeats": self.heading_repeats,
            "generation": generation,
            "collection": self.collection,
            "collection_id": self.store.collection_id,
            "chunks": len(ids),
            "vocabulary": len(bm25.vocab_dict) if bm25 is not None else 0,
            "embedding_model": model,
            "languages": sorted(languages),  # the tokenizer families of its chunks: how a query is read
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        if publish:
            folder = self._save(bm25, headings, embeddings, ids, table, documents, meta)
            # the saved copy is memory-mapped: processes sharing the build share its pages
            embeddings = np.load(folder / "embeddings.npy", mmap_mode="r") if ids else None
        self.builds += 1
        log.info("keyword index built: %d chunks in %.2f s (generation %s)", len(ids), meta["build_seconds"], generation)
        self._install(generation, bm25, headings, ids, table, embeddings, meta, documents)

    def _save(self, bm25, headings, embeddings, ids, table, documents, meta) -> Path:
        """Write the build to a new folder and make it the live one; returns the folder."""
        folder_name = f"build-{meta['generation'][:16]}-{uuid.uuid4().hex[:8]}"
        tmp = self.root / f".tmp-{folder_name}"
        tmp.mkdir(parents=True)
        try:
            if ids:
                bm25.save(str(tmp / "bm25"), show_progress=False)
                headings.save(str(tmp / "headings"), show_progress=False)
                np.save(tmp / "embeddings.npy", embeddings)
            (tmp / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
            (tmp / "rows.json").write_text(json.dumps([list(r.__dict__.values()) for r in table]), encoding="utf-8")
            (tmp / "documents.json").write_text(json.dumps(documents), encoding="utf-8")
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
            self._published.publish(tmp, folder_name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.root / folder_name

    def _install(self, generation: str, bm25, headings, ids: Sequence[str], table, embeddings, meta: dict,
                 documents: dict[str, dict]) -> None:
        self._bm25 = bm25 if bm25 is not None else _EMPTY
        self._headings = headings
        self._table = list(table)
        self._ids = list(ids)
        self._rows = {cid: i for i, cid in enumerate(self._ids)}
        self._embeddings = embeddings
        self._meta = meta
        self._documents = documents
        self._doc_order = list(documents)
        index = {doc: i for i, doc in enumerate(self._doc_order)}
        self._row_docs = np.fromiter((index.get(r.doc_path, -1) for r in self._table), dtype=np.int64,
                                     count=len(self._table))
        self._sections = None
        self._generation = generation


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _bm25_index(corpus: list[list[str]]):
    import bm25s

    index = bm25s.BM25()
    # a chunk with no term (e.g. a header-less chunk for the heading index) still needs a row
    index.index([doc or ["\x00"] for doc in corpus], show_progress=False)
    return index


def _all_scores(bm25, terms: list[str]) -> np.ndarray | None:
    vocab = bm25.vocab_dict
    term_ids = [vocab[t] for t in terms if t in vocab]
    if not term_ids:
        return None
    return np.asarray(bm25.get_scores_from_ids(term_ids), dtype=np.float32)


class _Empty:
    """Stands in for a bm25s model over an empty collection."""

    vocab_dict: dict = {}


_EMPTY = _Empty()
