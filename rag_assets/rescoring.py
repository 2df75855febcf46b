"""The second stage: re-score the fused top candidates with how well their headings match the query.

A question usually names what its section is about ("How do I enable CORS" -> "Use CORSMiddleware"),
while the chunk text around the answer often says it in other words. So the fused top
``RESCORE_DEPTH`` are re-ranked by ``z(fused) + heading_weight * z(heading BM25)``: BM25 of the
query against the chunk's ``title > h1 > h2`` alone, z-scored within those candidates.

Other offline signals were measured and left out (benchmarks/retrieval_loco.md): the best chunk
score of the whole section, section-level BM25, the page's best cosine, query-term coverage,
agreement of the two lists, and the cosine of the query with the embedded headings (which would
also cost an extra embedding per section). None of them moved the held-out figures on more than
one corpus.
"""

from __future__ import annotations

import numpy as np

from rag_assets.fusion import standardise

RESCORE_DEPTH = 30
DEFAULT_HEADING_WEIGHT = 0.15  # leave-one-corpus-out: 0.15 / 0.1 / 0.15 chosen on the three folds


def rescore(fused: np.ndarray, heading: np.ndarray, heading_weight: float = DEFAULT_HEADING_WEIGHT) -> np.ndarray:
    """New scores for candidates whose fused scores and heading BM25 scores are given (same order)."""
    fused = np.asarray(fused, dtype=np.float64)
    if heading_weight == 0 or fused.size < 2:
        return fused
    return standardise(fused, fused) + heading_weight * standardise(heading, heading)
