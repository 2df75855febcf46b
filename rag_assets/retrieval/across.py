"""One question over several corpora: each corpus's ranking, merged into one list whose scores compare.

Raw scores do not compare across indexes (BM25 statistics, fused z-scores and the heading stage are
per index), ranks do. Each corpus's list is weighted by how well its head matches the question — the
best calibrated relevance of its first results, the same signal as RAGPipeline.retrieve's relevance gate —
so a corpus that does not answer the question sinks below one that does, and two corpora that both
answer it interleave: score = confidence / (k + rank). The order within a corpus is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from rag_assets.retrieval.search_result import SearchResult

HEAD = 5  # results of a corpus's ranking its confidence is read from
# small, so rank matters: rank 2 of one corpus beats rank 1 of another only when its confidence is
# 12/11 of the other's (9 % higher)
RRF_K = 10


@dataclass(frozen=True)
class CorpusHit:
    corpus: str
    result: SearchResult
    score: float  # comparable across corpora
    confidence: float  # the corpus's head relevance for this question


def merge_rankings(rankings: Mapping[str, Sequence[SearchResult]], top_k: int, same_model: bool = True,
                   k: int = RRF_K) -> list[CorpusHit]:
    """The best top_k of several corpora's rankings (corpus name -> its results, best first).
    `same_model` False (the corpora embed with different models): plain reciprocal ranks."""
    hits = []
    for corpus, results in rankings.items():
        head = [r.relevance for r in results[:HEAD] if r.relevance is not None]
        confidence = max(head) if head and same_model else 1.0
        for rank, result in enumerate(results, 1):
            hits.append(CorpusHit(corpus, result, max(confidence, 0.0) / (k + rank), confidence))
    hits.sort(key=lambda h: (-h.score, -(h.result.relevance or 0.0), h.corpus))
    return hits[:top_k]
