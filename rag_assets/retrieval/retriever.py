"""Retrieval over the index in three modes, returning plain results.

- ``vector``: Chroma cosine search with the query embedding.
- ``keyword``: BM25 over the indexed chunk texts (the search snapshot: snapshot.py).
- ``hybrid`` (default): both, each to a deeper candidate list (``max(50, 5 * top_k)``), fused by
  weighted Reciprocal Rank Fusion (fusion.py) with per-query weights (``fusion.adaptive_weights``)
  scaled by RAG_DENSE_WEIGHT / RAG_KEYWORD_WEIGHT, k = RAG_RRF_K.

Every result carries ``score`` (what the mode ranked by: cosine, BM25 or fused RRF score) and
``relevance`` (the dense cosine of the query with the chunk, for every mode), so relevance
thresholds mean the same in every mode. If the keyword index cannot be built or read, hybrid
degrades to vector-only and says so (``Retrieval.fallback_used``).

With ``RAG_CONTEXT_TOKENS`` > 0 every result also carries a ``context``: the chunk with its neighbours
in its section up to that many tokens, and a passage around another hit of its section when the ranking
found one out of the window's reach (windows.py).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_assets.config import Settings
from rag_assets.errors import InvalidQueryError, VectorDBUnavailableError
from rag_assets.index.generation import current_generation
from rag_assets.retrieval.fusion import KEEP_WITHIN, RARE_TERM_MAX_CHUNKS
from rag_assets.vocabulary.modes import FusionMethod, RetrievalMode, validate_top_k
from rag_assets.retrieval.query_cache import LRUCache
from rag_assets.retrieval.snapshot import SearchSnapshot
from rag_assets.retrieval.terms import section_key, text_key
from rag_assets.retrieval.ranking import Candidate, RankingConfig, diversify_candidates, rank_hybrid
from rag_assets.index.chroma_store import ChromaStore, VectorHit, document_fields
from rag_assets.retrieval.filters import Filters, split_tags
from rag_assets.retrieval.windows import (GAP_TOKENS, SectionRuns, join_passages, opens_section, passages, stored_tokens,
                                         window_tokens)

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


def _candidate(hit: VectorHit, dense: float, keyword: float = 0.0, row: int | None = None) -> Candidate:
    meta = hit.metadata or {}
    return Candidate(hit.chunk_id, str(meta.get("doc_path", "")), section_key(meta), text_key(hit.text),
                     dense, keyword, row, hit.score)


def validate_query(query: Any, max_chars: int) -> str:
    """The query without format characters (zero-width spaces, BOM, ...) or surrounding whitespace;
    InvalidQueryError when nothing visible is left, no letter or digit, or it is too long."""
    if query is None:
        raise InvalidQueryError("query is required: got None")
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}")
    text = "".join(ch for ch in query if unicodedata.category(ch) != "Cf").strip()
    if not any(_visible(ch) for ch in text):
        raise InvalidQueryError("query is empty: ask a question with at least one visible character")
    if not any(unicodedata.category(ch)[0] in "LN" for ch in text):
        # "???" or "..." embeds to something close to everything: it would pass the threshold
        raise InvalidQueryError(f"query has no words: {text[:40]!r} has no letter or digit; ask a question")
    if len(text) > max_chars:
        raise InvalidQueryError(
            f"query is too long: {len(text)} characters, the limit is {max_chars} (RAG_MAX_QUERY_CHARS)"
        )
    return text


def _visible(ch: str) -> bool:
    # separators (Z*), controls/format/unassigned (C*) and lone combining marks (Mn, Me) draw nothing
    category = unicodedata.category(ch)
    return category[0] not in "ZC" and category not in ("Mn", "Me")


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
    # the chunk with its neighbours in its section, up to RAG_CONTEXT_TOKENS ("" when that is 0):
    # the text an answer is given (windows.py); context_tokens = its size in tiktoken tokens
    context: str = ""
    context_tokens: int = 0
    # other chunks of this result's section that the ranking found, best first (collapsed into it by
    # diversity): the context reaches for them too (windows.passages)
    section_hits: list[str] = field(default_factory=list, repr=False)

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
            metadata=_presented(meta),
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
        if self.context:
            data["context"] = self.context
            data["context_tokens"] = self.context_tokens
        return data


def _presented(meta: dict[str, Any]) -> dict[str, Any]:
    """Stored metadata as results hand it on: `tags`, stored as one "a, b" string (Chroma metadata
    holds no lists), as the list it was in the frontmatter."""
    out = dict(meta)
    if "tags" in out:
        out["tags"] = split_tags(out["tags"])
    return out


def _note_section_hits(results: list[SearchResult], ranked: list[Candidate], mates: dict[str, list[Candidate]]) -> None:
    sections = {c.chunk_id: c.section for c in ranked}
    for r in results:
        r.section_hits = [c.chunk_id for c in mates.get(sections.get(r.chunk_id, ""), [])]


class _RowTokens:
    """The token counts of a section's rows, read from the keyword index only as the window grows."""

    def __init__(self, snapshot, rows):
        self.snapshot, self.rows = snapshot, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return self.snapshot.table(int(self.rows[i])).tokens


@dataclass
class _Scope:
    """The documents a filtered query may return, and their rows in the keyword index."""

    documents: set[str]
    snapshot: Any = None
    _mask: np.ndarray | None = None

    def mask(self) -> np.ndarray | None:
        if self.snapshot is None:
            return None
        if self._mask is None:
            self._mask = self.snapshot.rows_of(self.documents)
        return self._mask


class _StaleKeywordBuild(Exception):
    """Chunks the keyword index lists were deleted from the store: rebuild it, query again."""


@dataclass
class Retrieval:
    """One search: the results plus how they were obtained."""

    mode: RetrievalMode
    results: list[SearchResult]
    fallback_used: bool = False
    weights: tuple[float, float] | None = None  # hybrid: (dense, keyword) after adaptation
    dense_candidates: int = 0
    keyword_candidates: int = 0
    generation: str | None = None  # the index generation it was answered from


class Retriever:
    def __init__(
        self,
        embedder,
        store: ChromaStore,
        settings: Settings | None = None,
        snapshot=None,
        *,
        adaptive: bool = True,
    ):
        self.embedder = embedder
        self.store = store
        self.settings = settings or Settings.from_env()
        self.snapshot = snapshot or SearchSnapshot.for_settings(store, self.settings)
        self.adaptive = adaptive
        self.ranking = RankingConfig.from_settings(self.settings, adaptive=adaptive)
        self._embeddings = LRUCache(max(self.settings.query_cache_size, 64))
        self._generation: str | None = None
        self._reopen_lock = threading.Lock()
        self._tolerant = threading.local()  # on: a query retried after a stale keyword build
        self.reopens = 0  # Chroma clients re-opened because another process changed the index

    @classmethod
    def from_settings(cls, settings: Settings | None = None, *, embedder=None, **kwargs) -> "Retriever":
        """``embedder``: one the caller already holds (it must be the one the settings ask for); by
        default the process's one for these settings (rag_assets.embedding.shared_embedder), which
        the ingestion runs of RAGPipeline.ingest use too: one model in memory, loaded once."""
        from rag_assets.embedding import shared_embedder

        settings = settings or Settings.from_env()
        embedder = embedder if embedder is not None else shared_embedder(settings)
        store = ChromaStore.for_settings(settings, embedder)
        return cls(embedder, store, settings, **kwargs)

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
        query = validate_query(query, self.settings.max_query_chars)
        ranking = self.ranking_for(mode, fusion)
        mode = RetrievalMode.parse(mode, self.settings.retrieval_mode)
        top_k = validate_top_k(top_k)
        filters = Filters.parse(filters)
        budget = self._budget(context_tokens)
        generation = self.follow_index()
        try:
            with self.snapshot.pinned(generation):
                retrieval = self._retrieve(query, mode, top_k, filters, ranking)
                self._add_context(retrieval.results, budget)
                retrieval.generation = generation
                return retrieval
        except _StaleKeywordBuild:
            pass
        # another process is replacing documents: it deleted chunks the keyword index (built for
        # this generation) still lists, and has not bumped the generation yet. Its new chunks are in
        # the store already, so a fresh view and a build from it find them.
        self._reopen_embedded_store()
        self.snapshot.rebuild(generation)
        self._tolerant.on = True
        try:
            with self.snapshot.pinned(generation):
                retrieval = self._retrieve(query, mode, top_k, filters, ranking)
                self._add_context(retrieval.results, budget)
                retrieval.generation = generation
                return retrieval
        finally:
            self._tolerant.on = False

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
        the one they were retrieved from (``Retrieval.generation``; None = read it again)."""
        budget = self._budget(context_tokens)
        if budget and results:
            with self.snapshot.pinned(generation or self.follow_index()):
                self._add_context(results, budget)
        return results

    def _budget(self, context_tokens: int | None) -> int:
        budget = self.settings.context_tokens if context_tokens is None else context_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"context_tokens must be an integer >= 0 (0 = no context), got {budget!r}")
        return budget

    # ------------------------------------------------------------------------------------------
    def _add_context(self, results: list[SearchResult], budget: int) -> None:
        """Each result's context (windows.py): its section's chunks from the keyword index's row
        table, their texts in one read of the store. A chunk the keyword index does not know (written
        since it was built), or no keyword index at all, takes its section from the store's metadata."""
        if budget <= 0 or not results:
            return
        texts = {r.chunk_id: r.text for r in results}
        plans: list[list[list[tuple[str, int]]]] = []  # per result: passages of (chunk id, tokens)
        for r in results:
            plan = self._index_passages(r, budget)
            plans.append(plan if plan is not None else self._store_passages(r, budget, texts))
        missing = list(dict.fromkeys(cid for plan in plans for passage in plan for cid, _ in passage if cid not in texts))
        texts.update({h.chunk_id: h.text for h in self.store.get(missing)})
        overlap = self.settings.chunk_overlap_tokens > 0
        for r, plan in zip(results, plans):
            # a neighbour deleted since the keyword index was built (its document is being replaced) is left out
            kept = [p for p in ([(texts[cid], t) for cid, t in passage if cid in texts] for passage in plan) if p]
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

    def _index_passages(self, result: SearchResult, budget: int) -> list[list[tuple[str, int]]] | None:
        try:
            found = self.snapshot.section_rows(result.chunk_id)
        except VectorDBUnavailableError:
            raise
        except Exception as exc:  # a broken keyword index must not take retrieval down
            log.error("keyword index unavailable, context windows read the store: %s", exc)
            return None
        if found is None:
            return None
        rows, at = found

        def place(chunk_id: str) -> int | None:
            if chunk_id == result.chunk_id:
                return at
            row = self.snapshot.row(chunk_id)
            hit = np.flatnonzero(rows == row) if row is not None else ()
            return int(hit[0]) if len(hit) else None

        tokens = _RowTokens(self.snapshot, rows)
        spans = passages(tokens, self._anchors(result, place), budget)
        return [[(self.snapshot.chunk_id(int(rows[i])), tokens[i]) for i in range(lo, hi)] for lo, hi in spans]

    def _store_passages(self, result: SearchResult, budget: int, texts: dict[str, str]) -> list[list[tuple[str, int]]]:
        hits = self.store.section_chunks(result.doc_path, result.heading_breadcrumb)
        ids = [h.chunk_id for h in hits]
        if result.chunk_id not in ids:
            return [[(result.chunk_id, stored_tokens(result.metadata.get("token_count"), result.text))]]
        meta = [h.metadata or {} for h in hits]
        runs = SectionRuns.build([result.doc_path] * len(hits), [""] * len(hits),
                                 [int(m.get("chunk_index") or 0) for m in meta], [opens_section(h.text) for h in hits])
        rows, at = runs.section_of(ids.index(result.chunk_id))
        order = [ids[r] for r in rows]
        tokens = [stored_tokens(meta[r].get("token_count"), hits[r].text) for r in rows]
        spans = passages(tokens, self._anchors(result, lambda cid: order.index(cid) if cid in order else None), budget)
        for r in rows:
            texts.setdefault(hits[r].chunk_id, hits[r].text)
        return [[(order[i], tokens[i]) for i in range(lo, hi)] for lo, hi in spans]

    def _retrieve(self, query: str, mode: RetrievalMode, top_k: int, filters, ranking: RankingConfig) -> Retrieval:
        scope = self._scope(filters) if filters else None
        if scope is not None and not scope.documents:
            return Retrieval(mode, [])
        if mode is RetrievalMode.VECTOR:
            return self._vector(query, top_k, scope)
        if mode is RetrievalMode.KEYWORD:
            return self._keyword(query, top_k, scope)
        return self._hybrid(query, top_k, scope, ranking)

    def _scope(self, filters: Filters) -> "_Scope":
        """The documents the filters select, from the keyword index's document table (or, when that
        index cannot be read, from the stored metadata)."""
        try:
            fields = self.snapshot.documents()
            return _Scope(filters.documents(fields), self.snapshot)
        except InvalidQueryError:
            raise
        except Exception as exc:  # a broken keyword index must not take filtered retrieval down
            log.error("keyword index unavailable, filters read the stored metadata: %s", exc)
            fields = {}
            for _chunk_id, _text, meta in self.store.iter_all():
                fields.setdefault(str((meta or {}).get("doc_path", "")), document_fields(meta or {}))
            return _Scope(filters.documents(fields), None)

    def follow_index(self) -> str:
        """Re-open the embedded Chroma client when another process changed the index.

        An embedded PersistentClient keeps the collection it loaded: in a long-lived reader it
        returns deleted chunks (and misses new ones) for a long time after another process wrote,
        and a keyword rebuild through it fails with "Error finding id". So when the generation
        moved since the last query, the client is closed (Chroma shares one client per path in a
        process; closing the last reference drops its cached state) and opened again. The keyword
        index follows the generation by itself. A Chroma server (CHROMA_HOST) is always current.
        """
        generation = current_generation(self.settings)
        if generation == self._generation:
            return generation
        with self._reopen_lock:
            if self._generation is not None and generation != self._generation and not self.settings.chroma_host:
                self._reopen_store()
            self._generation = generation
        return generation

    def _reopen_embedded_store(self) -> bool:
        """Re-open an embedded Chroma client (a server is always current); True when it did."""
        if self.settings.chroma_host:
            return False
        with self._reopen_lock:
            self._reopen_store()
        return True

    def _reopen_store(self) -> None:
        old = self.store
        old.close()
        self.store = ChromaStore(path=self.settings.chroma_path, collection=old.collection_name,
                                 embedding_model=old.embedding_model, dimension=old.dimension)
        if self.snapshot.store is old:
            self.snapshot.store = self.store
        self.reopens += 1

    # ------------------------------------------------------------------------------------------
    def _dense(self, vector: np.ndarray, depth: int, scope: "_Scope | None") -> list[VectorHit]:
        doc_paths = sorted(scope.documents) if scope is not None else None
        hits = self.store.query(vector, top_k=depth, doc_paths=doc_paths)
        if getattr(hits, "ghosts", 0) and self._reopen_embedded_store():
            # another process is replacing documents: it deleted chunks this client's cached index
            # still returns. Their replacements were written first, so a fresh view has them (a
            # document is old or new, never neither, while it is replaced)
            hits = self.store.query(vector, top_k=depth, doc_paths=doc_paths)
        return hits

    def _exact_dense(self, vector: np.ndarray, depth: int, scope: "_Scope | None"):
        """A filtered query's dense list: exact cosines over the selected rows, from the keyword
        index's copy of the stored embeddings (one matrix product: ~1 ms for thousands of rows, where
        Chroma's metadata-filtered HNSW search takes 20+ ms at 10k chunks). (rows, cosines), best
        first; None when there is no filter or no such copy (then Chroma answers)."""
        if scope is None or scope.snapshot is None:
            return None
        found = self.snapshot.nearest(vector, depth, scope.mask())
        return found

    def _vector(self, query: str, top_k: int, scope: "_Scope | None" = None) -> Retrieval:
        vector = self.embed_query(query)
        exact = self._exact_dense(vector, candidate_depth(top_k), scope)
        if exact is not None:
            rows, sims = exact
            candidates = [self._keyword_candidate(int(r), float(c), 0.0, score=float(c)) for r, c in zip(rows, sims)]
            cos = {c.chunk_id: c.dense for c in candidates}
            results = self._present(candidates, self._diversified(top_k), {}, vector, cos)
            return Retrieval(RetrievalMode.VECTOR, results, dense_candidates=len(candidates))
        hits = self._dense(vector, candidate_depth(top_k), scope)
        by_id = {h.chunk_id: h for h in hits}
        mates: dict[str, list[Candidate]] = {}
        ranked = diversify_candidates([_candidate(h, h.score) for h in hits], top_k, self.ranking.max_per_page, mates)
        results = [SearchResult.from_hit(by_id[c.chunk_id], relevance=by_id[c.chunk_id].score) for c in ranked]
        _note_section_hits(results, ranked, mates)
        return Retrieval(RetrievalMode.VECTOR, results, dense_candidates=len(hits))

    def _keyword(self, query: str, top_k: int, scope: "_Scope | None" = None) -> Retrieval:
        hits = self.snapshot.search(query, candidate_depth(top_k), scope.mask() if scope else None)
        if scope is not None:
            hits = [h for h in hits if self.snapshot.table(h.row).doc_path in scope.documents]
        candidates = [self._keyword_candidate(h.row, 0.0, h.score, score=h.score) for h in hits]
        vector = self.embed_query(query)
        cosines = self.snapshot.cosines(vector, [c.chunk_id for c in candidates])
        results = self._present(candidates, self._diversified(top_k), {}, vector, cosines)
        return Retrieval(RetrievalMode.KEYWORD, results, keyword_candidates=len(hits))

    def _hybrid(self, query: str, top_k: int, scope: "_Scope | None" = None, ranking: RankingConfig | None = None
                ) -> Retrieval:
        ranking = ranking or self.ranking
        depth = candidate_depth(top_k)
        vector = self.embed_query(query)
        exact = self._exact_dense(vector, depth, scope)
        dense = self._dense(vector, depth, scope) if exact is None else []
        fallback = False
        try:
            bm25 = self.snapshot.scores(query)
            if bm25 is not None and scope is not None:
                bm25 = np.where(scope.mask(), bm25, 0.0).astype(np.float32)
        except VectorDBUnavailableError:
            raise
        except Exception as exc:  # a broken keyword index must not take retrieval down
            log.error("keyword index unavailable, hybrid search falls back to vector only: %s", exc)
            bm25, fallback = None, True
        keyword_rows = _top_rows(bm25, depth)
        candidates = []
        for hit in dense:
            row = None if fallback else self.snapshot.row(hit.chunk_id)
            candidates.append(_candidate(hit, hit.score, bm25[row] if bm25 is not None and row is not None else 0.0, row))
        dense_scores = [h.score for h in dense]
        if exact is not None:
            rows, sims = exact
            for r, c in zip(rows, sims):
                candidates.append(self._keyword_candidate(int(r), float(c), float(bm25[r]) if bm25 is not None else 0.0,
                                                          score=float(c)))
            dense_scores = [float(c) for c in sims]
        in_dense = {c.chunk_id for c in candidates}
        extra = [r for r in keyword_rows if self.snapshot.chunk_id(int(r)) not in in_dense]
        cosines = self.snapshot.cosines(vector, [self.snapshot.chunk_id(int(r)) for r in extra]) if extra else {}
        cosines.update({c.chunk_id: c.dense for c in candidates if exact is not None and c.chunk_id in in_dense})
        for r in extra:
            cid = self.snapshot.chunk_id(int(r))
            candidates.append(self._keyword_candidate(int(r), cosines.get(cid, 0.0), float(bm25[r])))
        keyword_reference = bm25[keyword_rows_with_zeros(bm25, depth)] if bm25 is not None else np.zeros(0)
        dense_reference = np.array(dense_scores)
        # of BM25's first KEEP_WITHIN, the hit holding the most rare query terms (fusion.RARE_TERM_MAX_CHUNKS;
        # ties: BM25's order): an exact code splits into several rare terms, a word rare by chance is one
        rare_hit, most = None, 0
        for r in keyword_rows[:KEEP_WITHIN]:
            held = len(self.snapshot.rare_terms(query, int(r), RARE_TERM_MAX_CHUNKS))
            if held > most:
                rare_hit, most = self.snapshot.chunk_id(int(r)), held
        results = self._present(
            candidates,
            lambda cs, mates: rank_hybrid(cs, dense_reference, keyword_reference,
                                          lambda head: self._heading_scores(query, head), ranking, top_k,
                                          rare_term_hit=rare_hit, mates=mates),
            {h.chunk_id: h for h in dense}, vector, cosines)
        weights = (ranking.dense_weight, ranking.keyword_weight)
        return Retrieval(RetrievalMode.HYBRID, results, fallback, weights, len(dense_scores), len(keyword_rows))

    # ------------------------------------------------------------------------------------------
    def _diversified(self, top_k: int):
        return lambda cs, mates: diversify_candidates(cs, top_k, self.ranking.max_per_page, mates)

    def _keyword_candidate(self, row: int, dense: float, keyword: float, score: float = 0.0) -> Candidate:
        info = self.snapshot.table(row)
        return Candidate(self.snapshot.chunk_id(row), info.doc_path, info.section, info.text, dense, keyword, row, score)

    def _heading_scores(self, query: str, candidates) -> np.ndarray:
        rows = [c.row for c in candidates]
        known = [i for i, r in enumerate(rows) if r is not None]
        out = np.zeros(len(rows), dtype=np.float32)
        if known:
            out[known] = self.snapshot.heading_scores(query, [rows[i] for i in known])
        return out

    def _present(self, candidates: list[Candidate], rank, hits: dict[str, VectorHit], vector: np.ndarray,
                 cosines: dict[str, float]) -> list[SearchResult]:
        """Rank, then fetch the texts. A chunk deleted from the store since the keyword index was
        built (another process is replacing its document, new chunks written first) is dropped and
        the ranking redone, so it never takes the place of a live one."""
        for _ in range(3):
            mates: dict[str, list[Candidate]] = {}
            ranked = rank(candidates, mates)
            results = self._results(ranked, hits, vector, cosines)
            if len(results) == len(ranked):
                break
            if not getattr(self._tolerant, "on", False):
                raise _StaleKeywordBuild()
            gone = {c.chunk_id for c in ranked} - {r.chunk_id for r in results}
            candidates = [c for c in candidates if c.chunk_id not in gone]
        _note_section_hits(results, ranked, mates)
        return results

    def _results(self, ranked, hits: dict[str, VectorHit], vector: np.ndarray, cosines: dict[str, float]) -> list[SearchResult]:
        """Ranked candidates as results: texts from the dense hits, the rest fetched from the store."""
        missing = [c.chunk_id for c in ranked if c.chunk_id not in hits]
        hits = {**hits, **{h.chunk_id: h for h in self.store.get(missing)}}
        results = []
        for c in ranked:
            hit = hits.get(c.chunk_id)
            if hit is None:  # deleted since the keyword index was built
                continue
            relevance = hit.score if c.chunk_id not in missing else cosines.get(c.chunk_id)
            results.append(SearchResult.from_hit(hit, score=c.score, relevance=relevance))
        self._fill_relevance(vector, results)
        return results

    def _fill_relevance(self, vector: np.ndarray, results: list[SearchResult]) -> None:
        """Cosine for results the keyword index had no embedding for: a filtered dense lookup."""
        todo = [r for r in results if r.relevance is None]
        if not todo:
            return
        docs = sorted({r.doc_path for r in todo})
        hits = self.store.query(vector, top_k=max(100, 20 * len(todo)), doc_paths=docs)
        cos = {h.chunk_id: h.score for h in hits}
        for r in todo:
            r.relevance = cos.get(r.chunk_id, 0.0)
