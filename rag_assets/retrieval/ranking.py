"""From candidates to a ranked result list: fusion, second stage, the confident-hit guard, diversity.

Pure functions over :class:`Candidate` (no I/O; retrieval.py gathers the candidates and turns the
ranked ones into results). Hybrid ranking, in order:

1. fuse the dense and keyword scores (``RAG_FUSION``: ``convex`` by default, or ``rrf``; fusion.py);
2. re-score the fused top ``RESCORE_DEPTH`` with the heading match (rescoring.py);
3. keep a confident first hit of either list, and the one of BM25's first 3 hits holding the most rare
   query terms, within the top 3 (fusion.confident / keep_within / RARE_TERM_MAX_CHUNKS);
4. collapse near-duplicates and cap results per page (diversity.py).

Single modes rank by their own score and go through step 4 only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.retrieval.diversity import DEFAULT_MAX_PER_PAGE, diversify
from rag_assets.retrieval.fusion import (
    CONFIDENT_GAP_DENSE,
    CONFIDENT_GAP_KEYWORD,
    FusionMethod,
    adaptive_weights,
    confident,
    convex,
    keep_within,
    rrf,
)
from rag_assets.retrieval.rescoring import DEFAULT_HEADING_WEIGHT, RESCORE_DEPTH, rescore


@dataclass(frozen=True)
class Candidate:
    chunk_id: str
    page: str  # doc_path
    section: str  # keyword.section_key: one value per section of a page
    text: str  # keyword.text_key: equal for equal texts
    dense: float  # cosine of query and chunk
    keyword: float  # BM25 (0 when no query term is in the chunk)
    row: int | None = None  # row in the keyword index (None: not in it, e.g. written after its build)
    score: float = 0.0  # the score the list was ranked by

    def scored(self, score: float) -> "Candidate":
        """This candidate with another score (dataclasses.replace, ~5x cheaper: it runs for every
        candidate of every hybrid query)."""
        return Candidate(self.chunk_id, self.page, self.section, self.text, self.dense, self.keyword, self.row, score)


@dataclass(frozen=True)
class RankingConfig:
    # the settings' defaults (rag_assets.config.settings: RAG_FUSION, RAG_*_WEIGHT, RAG_RRF_K, ...)
    fusion: FusionMethod = FusionMethod.parse(DEFAULTS["fusion"])
    dense_weight: float = DEFAULTS["dense_weight"]
    keyword_weight: float = DEFAULTS["keyword_weight"]
    rrf_k: int = DEFAULTS["rrf_k"]
    adaptive: bool = True  # rrf only: per-query list weights
    heading_weight: float = DEFAULT_HEADING_WEIGHT
    max_per_page: int = DEFAULT_MAX_PER_PAGE

    @classmethod
    def from_settings(cls, retrieval, *, adaptive: bool = True) -> "RankingConfig":
        """From the settings' retrieval group (rag_assets.config.RetrievalSettings)."""
        return cls(
            fusion=FusionMethod.parse(retrieval.fusion),
            dense_weight=retrieval.dense_weight,
            keyword_weight=retrieval.keyword_weight,
            rrf_k=retrieval.rrf_k,
            adaptive=adaptive,
            heading_weight=retrieval.heading_weight,
            max_per_page=retrieval.max_results_per_page,
        )


def fuse(
    candidates: Sequence[Candidate],
    dense_reference: np.ndarray,
    keyword_reference: np.ndarray,
    config: RankingConfig,
) -> list[Candidate]:
    """Candidates (dense list first, then keyword-only) ranked by the fused score, best first.

    ``dense_reference``: the dense list's cosines; ``keyword_reference``: the top BM25 scores over
    the whole index, zeros included (see fusion.convex).
    """
    if not candidates:
        return []
    if config.fusion is FusionMethod.RRF:
        dense_ids = [c.chunk_id for c in sorted(candidates, key=lambda c: -c.dense) if c.dense is not None]
        keyword_ids = [c.chunk_id for c in sorted(candidates, key=lambda c: -c.keyword) if c.keyword > 0]
        weights = (config.dense_weight, config.keyword_weight)
        if config.adaptive:
            best_first = np.sort(np.asarray(keyword_reference, dtype=np.float64))[::-1]
            weights = adaptive_weights(np.sort(dense_reference)[::-1].tolist(), best_first[best_first > 0].tolist(), *weights)
        fused = dict(rrf([dense_ids, keyword_ids], weights, k=config.rrf_k))
        scores = np.array([fused.get(c.chunk_id, 0.0) for c in candidates])
    else:
        scores = convex(
            np.array([c.dense for c in candidates]), np.array([c.keyword for c in candidates]),
            dense_reference, keyword_reference, config.dense_weight, config.keyword_weight,
        )
    return _by_score(candidates, scores)


def rank_hybrid(
    candidates: Sequence[Candidate],
    dense_reference: np.ndarray,
    keyword_reference: np.ndarray,
    heading_scores: Callable[[Sequence[Candidate]], np.ndarray],
    config: RankingConfig,
    top_k: int,
    *,
    rare_term_hit: str | None = None,
    mates: dict[str, list[Candidate]] | None = None,
) -> list[Candidate]:
    """Steps 1-4 of the module docstring. ``heading_scores(cands)``: BM25 of the query against each
    candidate's headings (called once, for the fused top RESCORE_DEPTH). ``rare_term_hit``: the chunk
    id of the one of BM25's first KEEP_WITHIN hits holding the most query terms that at most
    RARE_TERM_MAX_CHUNKS chunks contain. ``mates``: see diversity.diversify."""
    ranked = fuse(candidates, dense_reference, keyword_reference, config)
    if config.heading_weight and len(ranked) > 1:
        head = ranked[:RESCORE_DEPTH]
        scores = rescore(np.array([c.score for c in head]), heading_scores(head), config.heading_weight)
        ranked = _by_score(head, scores) + ranked[RESCORE_DEPTH:]
    ranked = _keep_confident(ranked, dense_reference, keyword_reference, rare_term_hit)
    return diversify_candidates(ranked, top_k, config.max_per_page, mates)


def diversify_candidates(ranked: Sequence[Candidate], top_k: int, max_per_page: int,
                         mates: dict[str, list[Candidate]] | None = None) -> list[Candidate]:
    return diversify(ranked, top_k, page=lambda c: c.page, section=lambda c: c.section, text=lambda c: c.text,
                     max_per_page=max_per_page, mates=mates)


def _keep_confident(ranked: list[Candidate], dense_reference: np.ndarray, keyword_reference: np.ndarray,
                    rare_term_hit: str | None = None) -> list[Candidate]:
    for attr, reference, gap in (("dense", dense_reference, CONFIDENT_GAP_DENSE),
                                 ("keyword", keyword_reference, CONFIDENT_GAP_KEYWORD)):
        if confident(np.sort(np.asarray(reference, dtype=np.float64))[::-1][:2], gap):
            best = max(ranked, key=lambda c: getattr(c, attr))
            ranked = keep_within(ranked, best)
    if rare_term_hit is not None:
        hit = next((c for c in ranked if c.chunk_id == rare_term_hit), None)
        if hit is not None:
            ranked = keep_within(ranked, hit)
    return ranked


def _by_score(candidates: Sequence[Candidate], scores: np.ndarray) -> list[Candidate]:
    # ties keep the given order (dense list first): deterministic
    order = np.lexsort((np.arange(len(candidates)), -np.asarray(scores, dtype=np.float64)))
    return [candidates[i].scored(float(scores[i])) for i in order]
