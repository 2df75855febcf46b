"""BM25 from raw term frequencies, scored at query time: the search snapshot's keyword ranking.

The snapshot stores, per chunk and term, how often the term occurs (postings) and each chunk's length;
the statistics BM25 needs (how many chunks, their mean length, how many hold a term) are taken at query
time over the chunks live in the snapshot. So a document that changes replaces its own postings only:
nothing else is rescored at write time, and a query sees the same scores as an index built afresh over
the same chunks.

The formula and its arithmetic are bm25s' (0.3.16) Lucene variant, k1 = 1.5, b = 0.75, operation for
operation, so the scores are bit-identical to the bm25s index this project used before (tested):
idf = float32(log(1 + (N - df + 0.5) / (df + 0.5))), a chunk's term score =
float32(idf * tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)) in float64, and a query's score the float32
sum of its terms' scores in the query's order (a repeated query term counts again). A chunk with no
term has length 1 (bm25s indexes a placeholder token for it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

K1 = 1.5
B = 0.75


@dataclass(frozen=True)
class Postings:
    """One term's postings in one part of the index: the chunks (rows, in the caller's numbering) that
    hold it, with its frequency in each (float32, > 0)."""

    rows: np.ndarray
    tf: np.ndarray


def lengths(counts: np.ndarray) -> np.ndarray:
    """Chunk lengths as BM25 reads them: a chunk with no term counts as 1."""
    return np.maximum(np.asarray(counts, dtype=np.int64), 1)


def mean_length(dl: np.ndarray) -> np.float64:
    """The mean chunk length, as numpy's mean of the integer lengths (exact: the sum is an integer)."""
    return np.float64(int(np.asarray(dl, dtype=np.int64).sum())) / len(dl) if len(dl) else np.float64(1.0)


def idf(df: int, n: int) -> np.float32:
    return np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))


def term_scores(postings: Postings, term_idf: np.float32, dl: np.ndarray, avgdl: np.float64) -> np.ndarray:
    """float32 scores of one term for its postings' rows; ``dl`` holds the lengths of those rows."""
    tf = postings.tf.astype(np.float64)
    denominator = K1 * ((1 - B) + (B * np.asarray(dl, dtype=np.float64)) / avgdl) + tf
    return (np.float64(term_idf) * (tf / denominator)).astype(np.float32)


def score(term_postings: list[list[Postings]], n_rows: int, dl: np.ndarray, avgdl: np.float64) -> np.ndarray | None:
    """The BM25 score of every row for a query (float32, ``n_rows``), or None when no term of the query
    occurs in any row. ``term_postings``: per query term, in the query's order, its postings (several
    parts when the index is held in several; rows distinct across parts); ``dl``: every row's length."""
    scores = np.zeros(n_rows, dtype=np.float32)
    found = False
    for parts in term_postings:
        df = sum(len(p.rows) for p in parts)
        if df == 0:
            continue
        found = True
        weight = idf(df, n_rows)
        for p in parts:
            scores[p.rows] += term_scores(p, weight, dl[p.rows], avgdl)
    return scores if found else None
