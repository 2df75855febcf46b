"""Retrieval over the index in three modes, returning plain results.

- ``vector``: Chroma cosine search with the query embedding.
- ``keyword``: BM25 over the indexed chunk texts (keyword.py).
- ``hybrid`` (default): both, each to a deeper candidate list (``max(50, 5 * top_k)``), fused by
  weighted Reciprocal Rank Fusion (fusion.py) with per-query weights (``fusion.adaptive_weights``)
  scaled by RAG_DENSE_WEIGHT / RAG_KEYWORD_WEIGHT, k = RAG_RRF_K.

Every result carries ``score`` (what the mode ranked by: cosine, BM25 or fused RRF score) and
``relevance`` (the dense cosine of the query with the chunk, for every mode), so relevance
thresholds mean the same in every mode. If the keyword index cannot be built or read, hybrid
degrades to vector-only and says so (``Retrieval.fallback_used``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_assets.config import Settings
from rag_assets.errors import InvalidQueryError, VectorDBUnavailableError
from rag_assets.fusion import adaptive_weights, rrf
from rag_assets.query_cache import LRUCache
from rag_assets.store import ChromaStore, VectorHit

log = logging.getLogger(__name__)

MODES = ("vector", "keyword", "hybrid")
_ALIASES = {"dense": "vector", "semantic": "vector", "bm25": "keyword", "lexical": "keyword", "rrf": "hybrid"}
MIN_CANDIDATES = 50


def normalise_mode(mode: str | None, default: str = "hybrid") -> str:
    if mode is None or mode == "":
        return default
    if not isinstance(mode, str):
        raise ValueError(f"retrieval mode must be a string, got {type(mode).__name__}")
    key = mode.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in MODES:
        raise ValueError(f"unknown retrieval mode {mode!r}: use one of {', '.join(MODES)}")
    return key


def candidate_depth(top_k: int) -> int:
    return max(MIN_CANDIDATES, 5 * top_k)


def validate_query(query: Any, max_chars: int) -> str:
    """The query stripped of surrounding whitespace; InvalidQueryError when unusable."""
    if query is None:
        raise InvalidQueryError("query is required: got None")
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}")
    text = query.strip()
    if not text:
        raise InvalidQueryError("query is empty: ask a question with at least one non-space character")
    if len(text) > max_chars:
        raise InvalidQueryError(
            f"query is too long: {len(text)} characters, the limit is {max_chars} (RAG_MAX_QUERY_CHARS)"
        )
    return text


@dataclass
class SearchResult:
    chunk_id: str
    doc_path: str
    section: str
    heading_breadcrumb: str
    text: str
    score: float  # the mode's ranking score: cosine (vector), BM25 (keyword), RRF (hybrid)
    chunk_index: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    relevance: float | None = None  # dense cosine of query and chunk, set in every mode

    @classmethod
    def from_hit(cls, hit: VectorHit, score: float | None = None, relevance: float | None = None) -> "SearchResult":
        meta = hit.metadata or {}
        return cls(
            chunk_id=hit.chunk_id,
            doc_path=str(meta.get("doc_path", "")),
            section=str(meta.get("section", "")),
            heading_breadcrumb=str(meta.get("heading_breadcrumb", "")),
            text=hit.text,
            score=hit.score if score is None else score,
            chunk_index=int(meta.get("chunk_index", 0)),
            metadata=dict(meta),
            relevance=relevance,
        )

    def as_dict(self) -> dict[str, Any]:
        data = {
            "chunk_id": self.chunk_id,
            "doc_path": self.doc_path,
            "section": self.section,
            "heading_breadcrumb": self.heading_breadcrumb,
            "text": self.text,
            "score": round(float(self.score), 6),
        }
        if self.relevance is not None:
            data["relevance"] = round(float(self.relevance), 6)
        return data


@dataclass
class Retrieval:
    """One search: the results plus how they were obtained."""

    mode: str
    results: list[SearchResult]
    fallback_used: bool = False
    weights: tuple[float, float] | None = None  # hybrid: (dense, keyword) after adaptation
    dense_candidates: int = 0
    keyword_candidates: int = 0


class Retriever:
    def __init__(
        self,
        embedder,
        store: ChromaStore,
        settings: Settings | None = None,
        keyword_index=None,
        *,
        adaptive: bool = True,
    ):
        from rag_assets.keyword import KeywordIndex

        self.embedder = embedder
        self.store = store
        self.settings = settings or Settings.from_env()
        self.keyword = keyword_index or KeywordIndex(store, self.settings.state_dir, self.settings.collection)
        self.adaptive = adaptive
        self._embeddings = LRUCache(max(self.settings.query_cache_size, 64))

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **kwargs) -> "Retriever":
        from rag_assets.embedding import load_embedder

        settings = settings or Settings.from_env()
        embedder = load_embedder(settings)
        store = ChromaStore.for_settings(settings, embedder)
        return cls(embedder, store, settings, **kwargs)

    # ------------------------------------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        key = (self.embedder.model_name, query)
        vector = self._embeddings.get(key)
        if vector is None:
            vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
            vector.setflags(write=False)
            self._embeddings.set(key, vector)
        return vector

    def search(self, query: str, mode: str | None = None, top_k: int = 5) -> list[SearchResult]:
        """The top_k chunks for query, best first (no relevance threshold)."""
        return self.retrieve(query, mode, top_k).results

    def retrieve(self, query: str, mode: str | None = None, top_k: int = 5) -> Retrieval:
        query = validate_query(query, self.settings.max_query_chars)
        mode = normalise_mode(mode, self.settings.retrieval_mode)
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= 1000:
            raise ValueError(f"top_k must be an integer between 1 and 1000, got {top_k!r}")
        top_k = int(top_k)
        if mode == "vector":
            return self._vector(query, top_k)
        if mode == "keyword":
            return self._keyword(query, top_k)
        return self._hybrid(query, top_k)

    # ------------------------------------------------------------------------------------------
    def _vector(self, query: str, top_k: int) -> Retrieval:
        hits = self.store.query(self.embed_query(query), top_k=top_k)
        results = [SearchResult.from_hit(h, relevance=h.score) for h in hits]
        return Retrieval("vector", results, dense_candidates=len(hits))

    def _keyword(self, query: str, top_k: int) -> Retrieval:
        hits = self.keyword.search(query, top_k)
        vector = self.embed_query(query)
        ids = [h.chunk_id for h in hits]
        cos = self.keyword.cosines(vector, ids)
        stored = {h.chunk_id: h for h in self.store.get(ids)}
        results = [
            SearchResult.from_hit(stored[h.chunk_id], score=h.score, relevance=cos.get(h.chunk_id))
            for h in hits
            if h.chunk_id in stored
        ]
        self._fill_relevance(vector, results)
        return Retrieval("keyword", results, keyword_candidates=len(hits))

    def _hybrid(self, query: str, top_k: int) -> Retrieval:
        depth = candidate_depth(top_k)
        vector = self.embed_query(query)
        dense = self.store.query(vector, top_k=depth)
        fallback = False
        try:
            keyword = self.keyword.search(query, depth)
        except VectorDBUnavailableError:
            raise
        except Exception as exc:  # a broken keyword index must not take retrieval down
            log.error("keyword index unavailable, hybrid search falls back to vector only: %s", exc)
            keyword, fallback = [], True
        weights = (self.settings.dense_weight, self.settings.keyword_weight)
        if self.adaptive:
            weights = adaptive_weights([h.score for h in dense], [h.score for h in keyword], *weights)
        fused = rrf([[h.chunk_id for h in dense], [h.chunk_id for h in keyword]], weights, k=self.settings.rrf_k)
        fused = fused[:top_k]
        by_id: dict[str, VectorHit] = {h.chunk_id: h for h in dense}
        missing = [cid for cid, _ in fused if cid not in by_id]
        by_id.update({h.chunk_id: h for h in self.store.get(missing)})
        cos = self.keyword.cosines(vector, missing) if missing and not fallback else {}
        results = []
        for cid, score in fused:
            hit = by_id.get(cid)
            if hit is None:  # deleted since the keyword index was built
                continue
            relevance = hit.score if cid not in missing else cos.get(cid)
            results.append(SearchResult.from_hit(hit, score=score, relevance=relevance))
        self._fill_relevance(vector, results)
        return Retrieval("hybrid", results, fallback, tuple(weights), len(dense), len(keyword))

    def _fill_relevance(self, vector: np.ndarray, results: list[SearchResult]) -> None:
        """Cosine for results the keyword index had no embedding for: a filtered dense lookup."""
        todo = [r for r in results if r.relevance is None]
        if not todo:
            return
        docs = sorted({r.doc_path for r in todo})
        where = {"doc_path": docs[0]} if len(docs) == 1 else {"doc_path": {"$in": docs}}
        hits = self.store.query(vector, top_k=max(100, 20 * len(todo)), where=where)
        cos = {h.chunk_id: h.score for h in hits}
        for r in todo:
            r.relevance = cos.get(r.chunk_id, 0.0)
