"""Retrieval over the search snapshot in three modes, returning plain results.

- ``vector``: the chunks nearest the query embedding, by exact cosine over the snapshot's stored vectors.
- ``keyword``: BM25 over the indexed chunk texts.
- ``hybrid`` (default): both, each to a deeper candidate list (``max(50, 5 * top_k)``), fused
  (fusion.py, ranking.py; RAG_FUSION, RAG_DENSE_WEIGHT / RAG_KEYWORD_WEIGHT, RAG_RRF_K).

Everything a query reads — both candidate lists, the row table ranking works on, the results' texts and
metadata and their context windows — comes from one view of the search snapshot (snapshot.py), which
the ingest commits whenever it changes the index: a query opens neither the vector store nor anything
it would have to build, and never mixes two versions of a document.

Every result carries ``score`` (what the mode ranked by: cosine, BM25 or the fused score), ``cosine``
(the dense cosine of the query with the chunk, for every mode) and ``relevance`` (the chance that it is
relevant to the question, in [0, 1]: relevance.py, calibrated on labelled questions whatever the
embedder), so relevance thresholds mean the same in every mode.

With ``RAG_CONTEXT_TOKENS`` > 0 every result also carries a ``context``: the chunk with its neighbours
in its section up to that many tokens, and a passage around another hit of its section when the ranking
found one out of the window's reach (windows.py).

A result is a SearchResult (search_result.py); a query is checked by validate_query (query_text.py).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError, DimensionMismatchError
from rag_assets.retrieval.fusion import KEEP_WITHIN, RARE_TERM_MAX_CHUNKS
from rag_assets.vocabulary.modes import FusionMethod, RetrievalMode, validate_top_k
from rag_assets.retrieval.query_cache import LRUCache
from rag_assets.retrieval.relevance import anchors_for, duplicates_of, evidence_of, relevance, shipped
from rag_assets.retrieval.terms import function_terms
from rag_assets.index.generation import EMPTY
from rag_assets.retrieval.snapshot import SearchSnapshot, SnapshotView
from rag_assets.retrieval.ranking import Candidate, RankingConfig, diversify_candidates, rank_hybrid
from rag_assets.retrieval.filters import Filters
from rag_assets.retrieval.query_text import validate_query
from rag_assets.retrieval.search_result import SearchResult
from rag_assets.retrieval.windows import GAP_TOKENS, join_passages, passages, stored_tokens, window_tokens

log = logging.getLogger(__name__)

MIN_CANDIDATES = 50


def candidate_depth(top_k: int) -> int:
    return max(MIN_CANDIDATES, 5 * top_k)


def _top_rows(scores: np.ndarray | None, depth: int) -> np.ndarray:
    """Rows of the ``depth`` best positive scores, best first (ties by row)."""
    if scores is None:
        return np.zeros(0, dtype=np.int64)
    rows = keyword_rows_with_zeros(scores, depth)
    return rows[scores[rows] > 0]


def keyword_rows_with_zeros(scores: np.ndarray, depth: int) -> np.ndarray:
    """Rows of the ``depth`` best scores, zeros included, best first (ties by row)."""
    k = min(depth, len(scores))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.lexsort((top, -scores[top]))]


def _note_section_hits(results: list[SearchResult], ranked: list[Candidate], mates: dict[str, list[Candidate]]) -> None:
    sections = {c.chunk_id: c.section for c in ranked}
    for r in results:
        r.section_hits = [c.chunk_id for c in mates.get(sections.get(r.chunk_id, ""), [])]


class _RowTokens:
    """The token counts of a section's rows, read from the view only as the window grows."""

    def __init__(self, view: SnapshotView, rows):
        self.view, self.rows = view, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return self.view.tokens(int(self.rows[i]))


@dataclass
class _Scope:
    """The documents a filtered query may return, and their rows in the view."""

    documents: set[str]
    view: SnapshotView
    _mask: np.ndarray | None = None

    def mask(self) -> np.ndarray:
        if self._mask is None:
            self._mask = self.view.rows_of(self.documents)
        return self._mask


@dataclass
class Retrieval:
    """One search: the results plus how they were obtained."""

    mode: RetrievalMode
    results: list[SearchResult]
    fallback_used: bool = False  # kept for the API: both lists always come from the snapshot now
    weights: tuple[float, float] | None = None  # hybrid: (dense, keyword) after adaptation
    dense_candidates: int = 0
    keyword_candidates: int = 0
    generation: str | None = None  # the index generation (the snapshot's) it was answered from


@dataclass(frozen=True)
class QueryPlan:
    """A query's parameters after Retriever.plan checked them: the text as searched (format characters
    and surrounding whitespace removed), the mode, how many results, the filters' normal form and the
    ranking (its fusion as asked for)."""

    query: str
    mode: RetrievalMode
    top_k: int
    filters: Filters | None
    ranking: RankingConfig


class Retriever:
    """Queries over the search snapshot. ``store``: the vector store, only needed when the snapshot must
    be built from it (an index an earlier version wrote); opened on first use when not given."""

    def __init__(
        self,
        embedder,
        store,
        settings: Settings,
        snapshot: SearchSnapshot | None = None,
        *,
        adaptive: bool = True,
        recheck_seconds: float = 0.0,
    ):
        self.embedder = embedder
        self.settings = settings
        self._store = store
        self._store_lock = threading.Lock()
        # recheck_seconds: how stale the snapshot's view may be (SearchSnapshot; 0: checked on every query)
        self.snapshot = snapshot or SearchSnapshot(self.settings, open_store=lambda: self.store,
                                                   recheck_seconds=recheck_seconds)
        self.adaptive = adaptive
        self.ranking = RankingConfig.from_settings(self.settings.retrieval, adaptive=adaptive)
        self._embeddings = LRUCache(max(self.settings.query_cache_size, 64))
        self._checked: set[str] = set()  # manifests whose model was checked against the embedder

    @classmethod
    def from_settings(cls, settings: Settings, *, embedder=None, **kwargs) -> "Retriever":
        """``embedder``: one the caller already holds (it must be the one the settings ask for); by
        default the process's one for these settings (rag_assets.embedding.shared_embedder), which
        the ingestion runs of RAGPipeline.ingest use too: one model in memory, loaded once."""
        from rag_assets.embedding import shared_embedder

        embedder = embedder if embedder is not None else shared_embedder(settings)
        return cls(embedder, None, settings, **kwargs)

    @property
    def store(self):
        """The vector store (a ChromaStore), opened on first use: queries do not need it."""
        with self._store_lock:
            if self._store is None:
                from rag_assets.index.chroma_store import ChromaStore

                self._store = ChromaStore.for_settings(self.settings.paths, self.embedder)
            return self._store

    # ------------------------------------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        key = (self.embedder.model_name, query)
        vector = self._embeddings.get(key)
        if vector is None:
            vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
            log.info("query embedded: %d dimensions (%s)", vector.shape[-1], self.embedder.model_name)
            vector.setflags(write=False)
            self._embeddings.set(key, vector)
        return vector

    def search(self, query: str, mode: str | None = None, top_k: int = 5, filters=None, *,
               context_tokens: int | None = None, fusion: str | None = None) -> list[SearchResult]:
        """The top_k chunks for query, best first (no relevance threshold)."""
        return self.retrieve(query, mode, top_k, filters, context_tokens=context_tokens, fusion=fusion).results

    def retrieve(self, query: str, mode: str | None = None, top_k: int = 5, filters=None, *,
                 context_tokens: int | None = None, fusion: str | None = None) -> Retrieval:
        """filters: a mapping or Filters (rag_assets.retrieval.filters); every list ranks inside the
        documents they select. context_tokens: each result's context budget (None: RAG_CONTEXT_TOKENS;
        0: no context). fusion: how hybrid fuses its lists, `convex` or `rrf` (None: RAG_FUSION; the
        mode `rrf` is hybrid with `rrf`)."""
        return self.run(self.plan(query, mode, top_k, filters, fusion), context_tokens=context_tokens)

    def plan(self, query: Any, mode: Any = None, top_k: Any = 5, filters=None, fusion: Any = None) -> QueryPlan:
        """A query's parameters checked, once: the one place they are validated (InvalidQueryError,
        InvalidFilterError or ValueError naming the parameter). A caller that checks a request before
        doing other work (RAGPipeline.retrieve) makes the plan then and runs it."""
        text = validate_query(query, self.settings.max_query_chars)
        ranking = self.ranking_for(mode, fusion)
        return QueryPlan(text, RetrievalMode.parse(mode, self.settings.retrieval_mode), validate_top_k(top_k),
                         Filters.parse(filters), ranking)

    def run(self, plan: QueryPlan, *, context_tokens: int | None = None, view: SnapshotView | None = None) -> Retrieval:
        """The retrieval a checked plan asks for, from ``view`` (one the caller already read, e.g. to look
        up its result cache by the view's generation), else the live snapshot view."""
        budget = self._budget(context_tokens)
        view = view if view is not None else self.view()
        retrieval = self._retrieve(view, plan.query, plan.mode, plan.top_k, plan.filters, plan.ranking)
        self._calibrate(view, plan.query, retrieval.results)
        self._add_context(view, retrieval.results, budget)
        retrieval.generation = view.generation
        return retrieval

    def view(self) -> SnapshotView:
        """The live view of the search snapshot, its embedding model checked against this embedder.
        When nothing was indexed here (no snapshot, no generation in the state) but a Chroma server is
        named, the server must answer: an index that lives there is out of reach, not empty
        (VectorDBUnavailableError, the rules-bot contract's outage)."""
        view = self.snapshot.view()
        if view.generation == EMPTY and self.settings.chroma_host:
            _ = self.store  # opened once; VectorDBUnavailableError when the server does not answer
        if view.name is not None and view.name not in self._checked:
            _check_model(view, self.embedder, self.settings.collection)
            self._checked.add(view.name)
        return view

    def current_generation(self) -> str:
        """The index generation a query now answers from (the live snapshot's)."""
        return self.view().generation

    def ranking_for(self, mode: Any, fusion: Any = None) -> RankingConfig:
        """The ranking a call asks for: the configured one, with its fusion replaced when the call
        names one (`fusion=`, or the mode `rrf`). ValueError for an unknown fusion."""
        if fusion is None and isinstance(mode, str) and mode.strip().lower() == FusionMethod.RRF.value:
            fusion = FusionMethod.RRF
        if fusion is None:
            return self.ranking
        return dataclasses.replace(self.ranking, fusion=FusionMethod.parse(fusion))

    def add_context(self, results: list[SearchResult], context_tokens: int | None = None, *,
                    generation: str | None = None) -> list[SearchResult]:
        """Fill each result's ``context`` (in place; returns the results): for results retrieved with
        ``context_tokens=0`` of which only some are handed on (RAGPipeline.retrieve). ``generation``:
        the one they were retrieved from (``Retrieval.generation``), so the context is read from the
        same snapshot (None: the live one)."""
        budget = self._budget(context_tokens)
        if budget and results:
            self._add_context(self.snapshot.view_of(generation), results, budget)
        return results

    def _budget(self, context_tokens: int | None) -> int:
        budget = self.settings.context_tokens if context_tokens is None else context_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"context_tokens must be an integer >= 0 (0 = no context), got {budget!r}")
        return budget

    # ------------------------------------------------------------------------------------------
    def anchors(self):
        """The embedder's relevance anchors (relevance.anchors_for): embedded once, kept in RAG_CACHE_DIR;
        the calibration and the function words are read then too (what a first query would do)."""
        shipped()
        function_terms()
        return anchors_for(self.embedder, self.settings.cache_dir)

    def _calibrate(self, view: SnapshotView, query: str, results: list[SearchResult]) -> None:
        """Each result's ``relevance`` (in place), from its cosine, the question and the ranking (relevance.py)."""
        if not results:
            return
        rows = [view.row(r.chunk_id) for r in results]
        terms = view.term_presence(query, [-1 if row is None else row for row in rows])
        duplicates = duplicates_of(view.vectors([0 if row is None else row for row in rows]), [r.text for r in results],
                                   [row is not None for row in rows])
        evidence = evidence_of([r.cosine or 0.0 for r in results], self.embed_query(query), self.anchors(), terms,
                               duplicates)
        for r, p in zip(results, relevance(evidence)):
            r.relevance = float(p)

    def _add_context(self, view: SnapshotView, results: list[SearchResult], budget: int) -> None:
        """Each result's context (windows.py): its section's chunks from the view's row table, their
        texts from the view."""
        if budget <= 0 or not results:
            return
        overlap = self.settings.chunk_overlap_tokens > 0
        for r in results:
            row = view.row(r.chunk_id)
            if row is None:  # a result of a snapshot this reader no longer holds: the chunk alone
                r.context, r.context_tokens = r.text, stored_tokens(r.metadata.get("token_count"), r.text)
                continue
            rows, at = view.section_rows(row)

            def place(chunk_id: str, rows=rows, at=at, result=r) -> int | None:
                if chunk_id == result.chunk_id:
                    return at
                found = view.row(chunk_id)
                hit = np.flatnonzero(rows == found) if found is not None else ()
                return int(hit[0]) if len(hit) else None

            tokens = _RowTokens(view, rows)
            spans = passages(tokens, self._anchors(r, place), budget)
            kept = [[(view.text(int(rows[i])), tokens[i]) for i in range(lo, hi)] for lo, hi in spans]
            r.context = join_passages([[text for text, _ in p] for p in kept], overlap=overlap) or r.text
            r.context_tokens = sum(window_tokens([t for _, t in p]) for p in kept) + GAP_TOKENS * max(len(kept) - 1, 0)

    def _anchors(self, result: SearchResult, place) -> list[int]:
        """The matched chunk's place in its section, then those of the section's other hits (at most
        RAG_CONTEXT_PASSAGES - 1 of them)."""
        anchors = [place(result.chunk_id)]
        for cid in result.section_hits:
            if len(anchors) >= self.settings.context_passages:
                break
            at = place(cid)
            if at is not None and at not in anchors:
                anchors.append(at)
        return anchors

    def _retrieve(self, view: SnapshotView, query: str, mode: RetrievalMode, top_k: int, filters,
                  ranking: RankingConfig) -> Retrieval:
        scope = _Scope(filters.documents(view.documents()), view) if filters else None
        if scope is not None and not scope.documents:
            return Retrieval(mode, [])
        if mode is RetrievalMode.VECTOR:
            return self._vector(view, query, top_k, scope)
        if mode is RetrievalMode.KEYWORD:
            return self._keyword(view, query, top_k, scope)
        return self._hybrid(view, query, top_k, scope, ranking)

    # ------------------------------------------------------------------------------------------
    def _vector(self, view: SnapshotView, query: str, top_k: int, scope: _Scope | None = None) -> Retrieval:
        vector = self.embed_query(query)
        rows, sims = view.nearest(vector, candidate_depth(top_k), scope.mask() if scope else None)
        candidates = [self._candidate(view, int(r), float(c), 0.0, score=float(c)) for r, c in zip(rows, sims)]
        cosines = {c.chunk_id: c.dense for c in candidates}
        results = self._present(view, candidates, self._diversified(top_k), cosines)
        return Retrieval(RetrievalMode.VECTOR, results, dense_candidates=len(candidates))

    def _keyword(self, view: SnapshotView, query: str, top_k: int, scope: _Scope | None = None) -> Retrieval:
        hits = view.search(query, candidate_depth(top_k), scope.mask() if scope else None)
        candidates = [self._candidate(view, h.row, 0.0, h.score, score=h.score) for h in hits]
        cosines = view.cosines(self.embed_query(query), [h.row for h in hits])
        results = self._present(view, candidates, self._diversified(top_k),
                                {h.chunk_id: float(c) for h, c in zip(hits, cosines)})
        return Retrieval(RetrievalMode.KEYWORD, results, keyword_candidates=len(hits))

    def _hybrid(self, view: SnapshotView, query: str, top_k: int, scope: _Scope | None = None,
                ranking: RankingConfig | None = None) -> Retrieval:
        ranking = ranking or self.ranking
        depth = candidate_depth(top_k)
        vector = self.embed_query(query)
        mask = scope.mask() if scope else None
        rows, sims = view.nearest(vector, depth, mask)
        bm25 = view.scores(query)
        if bm25 is not None and mask is not None:
            bm25 = np.where(mask, bm25, 0.0).astype(np.float32)
        keyword_rows = _top_rows(bm25, depth)
        candidates = [self._candidate(view, int(r), float(c), float(bm25[r]) if bm25 is not None else 0.0, score=float(c))
                      for r, c in zip(rows, sims)]
        in_dense = {int(r) for r in rows}
        extra = [int(r) for r in keyword_rows if int(r) not in in_dense]
        for r, c in zip(extra, view.cosines(vector, extra)):
            candidates.append(self._candidate(view, r, float(c), float(bm25[r])))
        cosines = {c.chunk_id: c.dense for c in candidates}
        keyword_reference = bm25[keyword_rows_with_zeros(bm25, depth)] if bm25 is not None else np.zeros(0)
        dense_reference = np.asarray(sims, dtype=np.float64)
        # of BM25's first KEEP_WITHIN, the hit holding the most rare query terms (fusion.RARE_TERM_MAX_CHUNKS;
        # ties: BM25's order): an exact code splits into several rare terms, a word rare by chance is one
        rare_hit, most = None, 0
        heads = [int(r) for r in keyword_rows[:KEEP_WITHIN]]
        for r, terms in zip(heads, view.rare_terms_of(query, heads, RARE_TERM_MAX_CHUNKS)):
            if len(terms) > most:
                rare_hit, most = view.chunk_id(r), len(terms)
        results = self._present(
            view, candidates,
            lambda cs, mates: rank_hybrid(cs, dense_reference, keyword_reference,
                                          lambda head: self._heading_scores(view, query, head), ranking, top_k,
                                          rare_term_hit=rare_hit, mates=mates),
            cosines)
        weights = (ranking.dense_weight, ranking.keyword_weight)
        return Retrieval(RetrievalMode.HYBRID, results, False, weights, len(rows), len(keyword_rows))

    # ------------------------------------------------------------------------------------------
    def _diversified(self, top_k: int):
        return lambda cs, mates: diversify_candidates(cs, top_k, self.ranking.max_per_page, mates)

    @staticmethod
    def _candidate(view: SnapshotView, row: int, dense: float, keyword: float, score: float = 0.0) -> Candidate:
        info = view.table(row)
        return Candidate(view.chunk_id(row), info.doc_path, info.section, info.text, dense, keyword, row, score)

    @staticmethod
    def _heading_scores(view: SnapshotView, query: str, candidates) -> np.ndarray:
        return view.heading_scores(query, [c.row for c in candidates])

    @staticmethod
    def _present(view: SnapshotView, candidates: list[Candidate], rank, cosines: dict[str, float]) -> list[SearchResult]:
        """Rank, then read the ranked chunks' texts and metadata from the same view."""
        mates: dict[str, list[Candidate]] = {}
        ranked = rank(candidates, mates)
        results = [SearchResult.from_chunk(c.chunk_id, view.text(c.row), view.metadata(c.row), c.score,
                                           cosines.get(c.chunk_id)) for c in ranked]
        _note_section_hits(results, ranked, mates)
        return results


def _check_model(view: SnapshotView, embedder, collection: str) -> None:
    """The snapshot's vectors were made by the configured embedder (else its cosines mean nothing)."""
    if view.dimension not in (None, embedder.dimension):
        raise DimensionMismatchError(
            f"the search snapshot of collection {collection!r} holds {view.dimension}-d vectors "
            f"({view.embedding_model}) but the configured embedder {embedder.model_name} makes "
            f"{embedder.dimension}-d ones: set RAG_COLLECTION to a new name or delete the collection to rebuild it",
            expected=view.dimension, actual=embedder.dimension)
    if view.embedding_model not in (None, embedder.model_name):
        raise ConfigurationError(
            f"collection {collection!r} was built with {view.embedding_model} ({view.dimension}-d) but the "
            f"configured embedder is {embedder.model_name} ({embedder.dimension}-d): set RAG_COLLECTION to a new "
            "name or delete the collection to rebuild it")
