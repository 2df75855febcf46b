"""Calibrated relevance: for each result, the chance that it is relevant to the question, in [0, 1].

A raw cosine does not say that: its range belongs to the embedder (all-MiniLM-L6-v2 puts unrelated
texts near 0.05 and matches near 0.6, multilingual-e5 both near 0.75-0.9, an API model elsewhere) and
to the question (some questions sit close to everything). So the cosine is read on a scale made for
each embedder and each question, and combined with what the keyword index says, then mapped to a
probability by a logistic model fitted on labelled questions (``relevance_calibration.json`` beside
this module; fitted by ``benchmarks/relevance_calibration.py``, leave-one-corpus-out figures in
docs/benchmarks.md):

- ``similarity``: (cosine - the question's background) / the embedder's contrast. The background is the
  median cosine of the question with the anchor passages (``relevance_anchors.json``: everyday questions
  and answers written for this project, unrelated to any corpus); the contrast is the mean cosine of each
  anchor question with its own answer minus its mean cosine with the other answers. Both are measured
  with whatever embedder is configured (its anchors embedded once and kept in RAG_CACHE_DIR), so 0 means
  "as close as unrelated text" and 1 "as close as a question to its answer" for every embedder.
- ``best_similarity``: the same for the best of the first BEST_OF results (how well the question is
  answered at all); ``margin``: the result's similarity less the mean of the first BEST_OF results'
  (how far it stands out of its ranking; places a short ranking could not fill count as unrelated text,
  similarity 0).
- ``coverage``: the share of the question's keyword weight (BM25 idf of its terms that some chunk of the
  index holds; function words such as "during" left out: terms.FUNCTION_WORDS) that the chunk holds; ``best_coverage`` likewise for the best of the first BEST_OF
  results; ``heading_coverage``: the share its header (title > h1 > h2) holds; ``heading_match``: 1 when
  its header holds all of it (the section a short question names: "Barricade rules"), else 0.
- ``unknown_terms``: the share of that weight in terms no chunk of the index holds (a question about
  something the corpus never names).
- ``log_rank``: log of the result's place in the ranking (1-based).
- ``known_terms``: log(1 + the number of the question's keyword terms some chunk holds): how much a
  coverage is made of (a long, paraphrased question covers less of itself in any chunk than a short one).
- ``rarest_term``: 1 when the result holds the question's rarest known term (highest idf: what singles
  out its subject, "Lambda" in "deploy to AWS Lambda"), else 0.
- ``heading_per_term``: ``heading_coverage`` divided by the number of the question's known terms. A
  header is a few words: it can hold all of a one-word question ("What can I do during movement?" under
  "Movement Phase") but only part of a long one, so the raw share mixes a question's length with how well
  the header names its subject; per term, the header of a short question's section counts fully and a
  long question's partial overlap little. (The raw share, fitted on sites with headings, read every
  result of a corpus without headings, covid-qa-dev's papers, as less relevant: docs/benchmarks.md.)
- ``lead``: the first result's similarity less the second's (near-duplicates collapsed; no second: 0,
  unrelated text): a ranking whose first result stands apart from the rest.

The ranking's features (best_*, margin, log_rank, lead) read it with near-duplicates collapsed into their
first copy (duplicates_of, distinct_ranks): a page in two versions is one answer, and its copy ranked
second must not make it look like a ranking nothing stands out of.

A calibration names the features it uses, in its order (``Calibration.features``); features() computes
every one of FEATURES (the shipped model uses eleven: not ``heading_coverage`` nor ``heading_match``, which
the benchmark's comparison still fits).

The raw cosine stays on each result as ``cosine``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

ANCHORS_FILE = Path(__file__).with_name("relevance_anchors.json")
CALIBRATION_FILE = Path(__file__).with_name("relevance_calibration.json")
BEST_OF = 5  # "the best results": the first this many of a ranking
NEAR_DUPLICATE = 0.98  # two results' vectors this close: one text twice (a page in two versions), not two answers
# every feature features() computes, in its columns' order
FEATURES = ("similarity", "best_similarity", "margin", "coverage", "best_coverage", "heading_coverage",
            "unknown_terms", "log_rank", "heading_match", "known_terms", "rarest_term", "heading_per_term", "lead")


@dataclass(frozen=True)
class Anchors:
    """The anchor passages as one embedder embeds them, and that embedder's contrast."""

    model_name: str
    passages: np.ndarray  # (n, dimension), unit rows
    contrast: float  # mean matched cosine - mean unmatched cosine of the anchor pairs

    def background(self, query_vector: np.ndarray) -> float:
        """The question's cosine with unrelated text: the median over the anchor passages."""
        return float(np.median(self.passages @ np.asarray(query_vector, dtype=np.float32)))


def anchor_pairs() -> list[tuple[str, str]]:
    data = json.loads(ANCHORS_FILE.read_text(encoding="utf-8"))
    return [(p["question"], p["passage"]) for p in data["pairs"]]


_anchors: dict[str, Anchors] = {}
_anchors_lock = threading.Lock()


def anchors_for(embedder, cache_dir: Path | None = None) -> Anchors:
    """The anchors embedded by ``embedder`` (questions as queries, passages as documents): once per
    process and model, and kept in ``cache_dir`` (RAG_CACHE_DIR) so a new process reads them (96 short
    texts, a second of a loaded machine's CPU; an API embedder's request) instead of embedding them."""
    with _anchors_lock:
        found = _anchors.get(embedder.model_name)
        if found is None:
            found = _anchors[embedder.model_name] = _cached(embedder, cache_dir)
        return found


def _cached(embedder, cache_dir: Path | None) -> Anchors:
    key = hashlib.sha256(embedder.model_name.encode() + b"\0" + ANCHORS_FILE.read_bytes()).hexdigest()[:16]
    path = Path(cache_dir) / "relevance_anchors" / f"{key}.npz" if cache_dir is not None else None
    if path is not None and path.is_file():
        try:
            with np.load(path) as data:
                return Anchors(embedder.model_name, data["passages"], float(data["contrast"]))
        except (OSError, ValueError, KeyError):
            pass  # unreadable: embedded again below
    pairs = anchor_pairs()
    questions = np.stack([np.asarray(embedder.embed_query(q), dtype=np.float32) for q, _ in pairs])
    passages = np.asarray(embedder.embed_documents([p for _, p in pairs]), dtype=np.float32)
    sims = questions @ passages.T
    matched = float(np.mean(np.diag(sims)))
    unmatched = float((sims.sum() - np.trace(sims)) / (sims.size - len(pairs)))
    anchors = Anchors(embedder.model_name, passages, max(matched - unmatched, 1e-3))
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
            np.savez(tmp, passages=passages, contrast=np.float64(anchors.contrast))
            os.replace(tmp, path)
        except OSError:
            pass  # a cache folder this process cannot write: embedded again next time
    return anchors


@dataclass(frozen=True)
class Evidence:
    """What the features of one ranking are made of (rag_assets.retrieval.retriever gathers it)."""

    cosines: np.ndarray  # each result's cosine with the question, ranking order
    background: float  # Anchors.background of the question
    contrast: float  # Anchors.contrast of the embedder
    idf: np.ndarray  # each distinct query term's idf
    known: np.ndarray  # whether any chunk of the index holds the term
    present: np.ndarray  # terms x results: which results hold which term
    in_header: np.ndarray  # terms x results: which results hold which term in their header
    # results x results: which results are near-duplicates of which (duplicates_of); None: none are
    duplicates: np.ndarray | None = None


def duplicates_of(vectors: np.ndarray, texts: Sequence[str], known: Sequence[bool] | None = None) -> np.ndarray:
    """Which results are near-duplicates of which (results x results, reflexive): the same text, or
    vectors at cosine >= NEAR_DUPLICATE (the same page in two versions, a corpus holding two copies of a
    page). ``known``: whose vectors were found (the others compare by text only)."""
    n = len(texts)
    if n == 0:  # reshape(0, -1) cannot infer a width: no results, no pairs
        return np.zeros((0, 0), dtype=bool)
    v = np.asarray(vectors, dtype=np.float32).reshape(n, -1)
    close = (v @ v.T) >= NEAR_DUPLICATE if v.shape[1] else np.zeros((n, n), dtype=bool)
    if known is not None:
        found = np.asarray(known, dtype=bool)
        close &= found[:, None] & found[None, :]
    text_ids = np.unique(np.asarray(texts, dtype=object), return_inverse=True)[1].reshape(n)
    same = text_ids[:, None] == text_ids[None, :]
    return close | same | np.eye(n, dtype=bool)


def distinct_ranks(duplicates: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(each result's first copy, each result's 1-based rank among distinct texts): a near-duplicate of
    an earlier result takes that result's place, so copies neither push each other down nor read as a
    ranking that nothing stands out of."""
    if duplicates is None:
        return np.arange(n), np.arange(1, n + 1)
    first = np.array([int(np.flatnonzero(duplicates[i, : i + 1])[0]) for i in range(n)], dtype=np.int64)
    leaders = np.flatnonzero(first == np.arange(n))
    return first, np.searchsorted(leaders, first) + 1


def features(evidence: Evidence) -> np.ndarray:
    """The FEATURES of each result (results x features). The ranking's features (best_*, margin,
    log_rank) read it with near-duplicates collapsed into their first copy (distinct_ranks)."""
    n = len(evidence.cosines)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    similarity = (np.asarray(evidence.cosines, dtype=np.float64) - evidence.background) / evidence.contrast
    total = float(evidence.idf.sum())
    known = evidence.idf * evidence.known  # a term no chunk holds cannot tell one chunk from another
    weight = float(known.sum())
    unknown = (total - weight) / total if total > 0 else 0.0
    if weight > 0:
        coverage = (known[:, None] * evidence.present).sum(axis=0) / weight
        heading = (known[:, None] * evidence.in_header).sum(axis=0) / weight
    else:
        coverage, heading = np.zeros(n), np.zeros(n)
    rarest = evidence.present[int(np.argmax(known))].astype(np.float64) if weight > 0 else np.zeros(n)
    known_count = int(np.count_nonzero(evidence.known))
    first, rank = distinct_ranks(evidence.duplicates, n)
    head = np.flatnonzero((first == np.arange(n)) & (rank <= BEST_OF))  # the first BEST_OF distinct results
    # a place the ranking could not fill (an index of four chunks, a keyword search that matched two) is
    # read as unrelated text (similarity 0), not as a copy of what it found: a one-chunk corpus's only
    # answer stands out of its ranking as much as it would among unrelated pages
    filled = np.concatenate([similarity[head], np.zeros(BEST_OF - len(head))])
    lead = filled[0] - filled[1]
    return np.column_stack([
        similarity,
        np.full(n, similarity[head].max()),
        similarity - filled.mean(),
        coverage,
        np.full(n, coverage[head].max()),
        heading,
        np.full(n, unknown),
        np.log(rank.astype(np.float64)),
        (heading >= 1.0 - 1e-9).astype(np.float64) if weight > 0 else np.zeros(n),
        np.full(n, np.log1p(known_count)),
        rarest,
        heading / max(known_count, 1),
        np.full(n, lead),
    ])


@dataclass(frozen=True)
class Calibration:
    """A logistic model over FEATURES: relevance = sigmoid(intercept + coefficients . features)."""

    features: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    default_threshold: float

    @classmethod
    def from_dict(cls, data: dict) -> "Calibration":
        unknown = [f for f in data["features"] if f not in FEATURES]
        if unknown:
            raise ValueError(f"relevance calibration uses features {unknown} this code does not compute ({FEATURES})")
        return cls(tuple(data["features"]), tuple(float(c) for c in data["coefficients"]), float(data["intercept"]),
                   float(data["default_threshold"]))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Relevance from the features() matrix (every feature: this calibration picks its own)."""
        columns = [FEATURES.index(f) for f in self.features]
        z = self.intercept + np.asarray(x, dtype=np.float64)[:, columns] @ np.asarray(self.coefficients)
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


@functools.lru_cache(maxsize=1)
def shipped() -> Calibration:
    """The calibration this package ships (relevance_calibration.json)."""
    return Calibration.from_dict(json.loads(CALIBRATION_FILE.read_text(encoding="utf-8")))


def relevance(evidence: Evidence, calibration: Calibration | None = None) -> np.ndarray:
    """Each result's calibrated relevance in [0, 1] (ranking order)."""
    return (calibration or shipped()).predict(features(evidence))


def evidence_of(cosines: Sequence[float], query_vector: np.ndarray, anchors: Anchors,
                terms: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                duplicates: np.ndarray | None = None) -> Evidence:
    """The Evidence of a ranking: its cosines, the question's vector, the embedder's anchors, the
    view's SnapshotView.term_presence of the question for the ranking's rows and its duplicates_of."""
    idf, known, present, in_header = terms
    return Evidence(np.asarray(cosines, dtype=np.float64), anchors.background(query_vector), anchors.contrast,
                    np.asarray(idf, dtype=np.float64), np.asarray(known, dtype=bool), np.asarray(present, dtype=bool),
                    np.asarray(in_header, dtype=bool), duplicates)
