"""The second stage: re-score the fused top candidates with how well their headings match the query.

A question usually names what its section is about ("How do I enable CORS" -> "Use CORSMiddleware"),
while the chunk text around the answer often says it in other words. So the fused top
``RESCORE_DEPTH`` are re-ranked by ``z(fused) + heading_weight * z(heading BM25)``: BM25 of the
query against the chunk's ``title > h1 > h2`` alone, z-scored within those candidates.

Other offline signals were tried on all three corpora (benchmarks/ranking_features.md): the best
chunk cosine of the section, the page's best cosine, query-term coverage and agreement of the two
lists added nothing alone; BM25 of the whole section helped in the lab's re-implementation but not
in this top-30 form (held-out means +0.006 R@3, +0.001 MRR: benchmarks/retrieval_loco.md), and the
cosine of the query with embedded headings helped a little at the cost of one more embedding per
section. So only the heading match ships.
"""

from __future__ import annotations

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.retrieval.fusion import standardise

RESCORE_DEPTH = 30
# RAG_HEADING_WEIGHT's default (why that value: its declaration, rag_assets.config.settings)
DEFAULT_HEADING_WEIGHT: float = DEFAULTS["heading_weight"]


def rescore(fused: np.ndarray, heading: np.ndarray, heading_weight: float = DEFAULT_HEADING_WEIGHT) -> np.ndarray:
    """New scores for candidates whose fused scores and heading BM25 scores are given (same order)."""
    fused = np.asarray(fused, dtype=np.float64)
    if heading_weight == 0 or fused.size < 2:
        return fused
    return standardise(fused, fused) + heading_weight * standardise(heading, heading)
