"""Fusing the dense and the keyword list into one ranking. Pure functions, no I/O.

Two rules (``RAG_FUSION``):

- ``convex`` (default): a convex combination of standardised scores. Each list's scores are turned
  into z-scores against that list's own top candidates (``(s - mean) / std``), then
  ``w_dense * z_dense + w_keyword * z_keyword`` with the weights normalised to sum 1. Every candidate
  has both scores (the retriever looks up the cosine of keyword-only hits and the BM25 of dense-only
  hits), so nobody is pushed down for being missing from a list, and a hit that stands far above its
  list's usual scores keeps that lead. Chosen over RRF on all three development corpora, by
  leave-one-corpus-out (benchmarks/retrieval_loco.md).
- ``rrf``: Reciprocal Rank Fusion, ``score(d) = Σ_i w_i / (k + rank_i(d))`` (ranks 1-based), with
  per-query weights from how clearly each list's best result stands out (``adaptive_weights``).
  Ties are broken by the best (smallest) rank in any list, then list order, then first appearance.

Either way a confident top hit of one list is never buried: ``confident`` + ``keep_within``, and
neither is the one of BM25's first three hits that holds the most query terms almost no chunk
contains (a part code, an error name: ``RARE_TERM_MAX_CHUNKS``).
"""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.vocabulary.modes import FusionMethod  # noqa: F401  (the names of the rules below)

T = TypeVar("T", bound=Hashable)


def standardise(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """z-scores of ``values`` against ``reference`` (a list's own top scores); 0 when it has no spread."""
    values = np.asarray(values, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if reference.size == 0:
        return np.zeros_like(values)
    spread = reference.std()
    if spread <= 1e-12:
        return np.zeros_like(values)
    return (values - reference.mean()) / spread


def convex(
    dense: np.ndarray,
    keyword: np.ndarray,
    dense_reference: np.ndarray,
    keyword_reference: np.ndarray,
    dense_weight: float = 1.0,
    keyword_weight: float = 1.0,
) -> np.ndarray:
    """Fused score per candidate: normalised-weight sum of both lists' z-scores.

    ``dense`` / ``keyword``: each candidate's cosine and BM25 (0 when no query term matches).
    ``*_reference``: the list's own top scores the z-scores are taken against; for BM25 include
    the zeros of a short list (a lone BM25 hit then stands out, as it should).
    """
    total = dense_weight + keyword_weight
    if dense_weight < 0 or keyword_weight < 0 or total <= 0:
        raise ValueError(f"fusion weights must be >= 0 and not both 0, got {dense_weight}, {keyword_weight}")
    return (dense_weight * standardise(dense, dense_reference)
            + keyword_weight * standardise(keyword, keyword_reference)) / total


# A list's first result is "confident" when the runner-up is this far below it, relative to it
# (BM25 8.9 vs 3.5 = 0.61 is an exact rare term). Such a hit is kept within the fused top KEEP_WITHIN.
# On the development corpora the guard never moves a result under convex fusion (z-scores already keep
# such hits on top); it is the rule's guarantee, and it matters for RRF and for small lists.
CONFIDENT_GAP_DENSE = 0.15
CONFIDENT_GAP_KEYWORD = 0.4
KEEP_WITHIN = 3
# Of BM25's first KEEP_WITHIN hits, the one holding the most query terms that at most this many chunks
# of the index contain (an exact rare term the embedder cannot see) is also kept within the top
# KEEP_WITHIN. The score gap alone cannot promise that once headings weigh more in BM25
# (RAG_KEYWORD_HEADING_REPEATS): common query words in other chunks' headings can draw level with, or
# pass, the rare term's chunk, even in BM25's own list. Like the gap guard it never moves a result on
# the development corpora (benchmarks/retrieval_corpora.md).
RARE_TERM_MAX_CHUNKS = 2


def confident(scores: Sequence[float], gap: float) -> bool:
    """True when the best score (scores best first) leads the second by ``gap`` x itself.
    A lone positive score counts as a lead over 0."""
    if not len(scores) or scores[0] <= 0:
        return False
    second = scores[1] if len(scores) > 1 else 0.0
    return (scores[0] - max(second, 0.0)) / scores[0] >= gap


def keep_within(order: list[T], item: T, place: int = KEEP_WITHIN) -> list[T]:
    """``order`` with ``item`` moved up to position ``place`` (1-based) if it ranks lower."""
    if item not in order or order.index(item) < place:
        return order
    rest = [x for x in order if x != item]
    return rest[: place - 1] + [item] + rest[place - 1 :]


def rrf(
    rankings: Sequence[Sequence[T]],
    weights: Sequence[float] | None = None,
    k: int = DEFAULTS["rrf_k"],
) -> list[tuple[T, float]]:
    """Fuse ranked lists of ids (best first) into one list of (id, fused score), best first.

    A repeated id within one list counts at its first (best) position only.
    """
    if k <= 0:
        raise ValueError(f"rrf k must be positive, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    if any(w < 0 for w in weights):
        raise ValueError(f"rrf weights must be >= 0, got {list(weights)}")
    scores: dict[T, float] = {}
    best: dict[T, tuple[int, int, int]] = {}  # id -> (best rank, list index, first appearance)
    order = 0
    for li, (ranking, weight) in enumerate(zip(rankings, weights)):
        seen: set[T] = set()
        for rank, item in enumerate(ranking, 1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            if item not in best:
                best[item] = (rank, li, order)
                order += 1
            elif rank < best[item][0]:
                best[item] = (rank, li, best[item][2])
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]]))


def margin(scores: Sequence[float], n: int = 5) -> float:
    """How much the list's best score stands out: (s_1 - s_n) / s_1, 0 for a flat list, in [0, 1].
    A list shorter than n counts its missing entries as 0: one lone BM25 hit (an exact part code)
    is as confident as a list can be, not the least."""
    if not scores or scores[0] <= 0:
        return 0.0
    ref = scores[n - 1] if len(scores) >= n else 0.0
    return max(0.0, min(1.0, (scores[0] - ref) / scores[0]))


# Tuned for all-MiniLM-L6-v2 + bm25s on the bundled Claude-docs eval set (benchmarks/retrieval_quality.md);
# the result is flat for dense_scale 0.3-0.5, keyword_scale 0.15-0.25, floor <= 0.1.
DENSE_SCALE = 0.3
KEYWORD_SCALE = 0.2
WEIGHT_FLOOR = 0.1


def adaptive_weights(
    dense_scores: Sequence[float],
    keyword_scores: Sequence[float],
    dense_weight: float = 1.0,
    keyword_weight: float = 1.0,
    *,
    dense_scale: float = DENSE_SCALE,
    keyword_scale: float = KEYWORD_SCALE,
    floor: float = WEIGHT_FLOOR,
) -> tuple[float, float]:
    """Per-query list weights from how confident each list looks (scores best first).

    A list whose top score stands clear of its 5th (``margin``) is a confident list; a flat one is
    a guess. Each list's weight is its configured weight times ``clamp(margin / scale, floor, 1)``:
    so a flat dense list (a question the embedder cannot separate) next to a peaked BM25 list
    (an exact-term match) cannot drag BM25's top hits down, and vice versa.
    The configured weights are returned unchanged when either list is empty.
    """
    if not dense_scores or not keyword_scores:
        return dense_weight, keyword_weight
    dense_conf = max(floor, min(1.0, margin(dense_scores) / dense_scale))
    keyword_conf = max(floor, min(1.0, margin(keyword_scores) / keyword_scale))
    return dense_weight * dense_conf, keyword_weight * keyword_conf
