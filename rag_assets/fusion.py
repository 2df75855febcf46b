"""Reciprocal Rank Fusion: ``score(d) = Σ_i w_i / (k + rank_i(d))``, ranks 1-based.

Pure functions, no I/O. A document missing from a list contributes nothing for that list.
Ties are broken by the best (smallest) rank the document has in any list, then by the order the
lists were given (earlier list first), then by first appearance, so the result is deterministic.
"""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

T = TypeVar("T", bound=Hashable)


def rrf(
    rankings: Sequence[Sequence[T]],
    weights: Sequence[float] | None = None,
    k: int = 60,
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
