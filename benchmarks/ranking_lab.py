"""Ranking experiments over cached scores: every fusion/diversity/re-scoring idea on all three corpora
in seconds, without touching the embedder or Chroma again.

`load(name)` collects, once per corpus index generation, what any ranking rule can use: the chunk
table (ids, doc_path, section, breadcrumb, title, text), the stored embeddings, and per eval question
its embedding, the exact cosine with every chunk and the BM25 score of every chunk (the production
SnapshotView). It is cached as ``<workdir>/<name>/lab-<generation>.npz`` + ``.json``.

A *ranker* is ``rank(corpus, qi) -> list[int]`` (chunk rows, best first); `score(corpus, ranker)`
runs it on every question and scores the first 10 with the project's evaluation (section R@3, R@5,
MRR@10, distinct pages). Candidates are restricted like production: the union of the top
``depth`` of each list.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402


@dataclass
class Row:
    """ChunkLike for the evaluation matching."""

    chunk_id: str
    doc_path: str
    section: str
    heading_breadcrumb: str
    text: str
    title: str = ""
    chunk_index: int = 0


@dataclass
class LabCorpus:
    name: str
    rows: list[Row]
    embeddings: np.ndarray  # (n, d)
    questions: list  # EvalQuestion
    qvecs: np.ndarray  # (m, d)
    bm25: np.ndarray  # (m, n)
    cos: np.ndarray = field(init=False)  # (m, n)
    query_terms: list[list[str]] = field(default_factory=list)

    def __post_init__(self):
        self.cos = self.qvecs @ self.embeddings.T


def load(name: str, workdir: Path = DEFAULT_WORKDIR) -> LabCorpus:
    from rag_assets.evaluation import load_eval_set
    from rag_assets.retrieval.terms import tokenize

    retriever, _ = open_corpus(name, workdir)
    view = retriever.view()
    generation = view.generation
    base = Path(workdir) / name / f"lab-{generation[:16]}"
    questions = load_eval_set(CORPORA[name].eval_set).questions
    if not base.with_suffix(".npz").exists():
        n = len(view)
        rows = []
        for r in range(n):
            meta = view.metadata(r)
            rows.append(Row(view.chunk_id(r), meta["doc_path"], meta.get("section", ""), meta.get("heading_breadcrumb", ""),
                            view.text(r), meta.get("title", ""), int(meta.get("chunk_index", 0))))
        qvecs = np.vstack([retriever.embed_query(q.question) for q in questions])
        bm25 = np.vstack([s if (s := view.scores(q.question)) is not None else np.zeros(n, np.float32) for q in questions])
        np.savez(base.with_suffix(".npz"), embeddings=view.vectors(range(n)), qvecs=qvecs, bm25=bm25)
        base.with_suffix(".json").write_text(json.dumps([r.__dict__ for r in rows]))
    data = np.load(base.with_suffix(".npz"))
    rows = [Row(**r) for r in json.loads(base.with_suffix(".json").read_text())]
    corpus = LabCorpus(name, rows, data["embeddings"], questions, data["qvecs"], data["bm25"])
    corpus.query_terms = [tokenize(q.question) for q in questions]
    return corpus


Ranker = Callable[[LabCorpus, int], list[int]]


def top(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, len(scores))
    idx = np.argpartition(-scores, k - 1)[:k]
    return idx[np.lexsort((idx, -scores[idx]))]


def score(corpus: LabCorpus, ranker: Ranker, *, per_question: bool = False, top_k: int = 10) -> dict:
    from rag_assets.evaluation.matching import SECTION, expected_for_level, rank_units
    from rag_assets.evaluation.metrics import question_metrics

    out = []
    for qi, q in enumerate(corpus.questions):
        order = ranker(corpus, qi)[:top_k]
        results = [corpus.rows[i] for i in order]
        units = rank_units(results, q.expected, SECTION, top_k)
        m = question_metrics([u.satisfies for u in units], len(expected_for_level(q.expected, SECTION)), (3, 5, 10))
        out.append({"id": q.id, "R@3": m["recall@3"], "R@5": m["recall@5"], "MRR": m["mrr@10"],
                    "pages": len({r.doc_path for r in results})})
    summary = {k: statistics.fmean(r[k] for r in out) for k in ("R@3", "R@5", "MRR", "pages")}
    if per_question:
        summary["rows"] = out
    return summary


def fmt(s: dict) -> str:
    return f"R@3 {s['R@3']:.3f}  R@5 {s['R@5']:.3f}  MRR {s['MRR']:.3f}  pages {s['pages']:.1f}"
