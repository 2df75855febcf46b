"""Which offline signals pay as a second stage? Every candidate feature, alone and fitted together, on all
three corpora, with leave-one-corpus-out figures.

    python benchmarks/ranking_features.py [--workdir /tmp/rag-corpora] [--markdown benchmarks/ranking_features.md]

Runs on the lab's cached scores (ranking_lab.py: exact cosine and BM25 of every chunk for every eval
question), not on the production Retriever: a re-implementation of the ranking (z-scored convex
fusion over the union of the top 50 of each list, features z-scored over those candidates, section
collapse, cap 4 per page) that is fast enough to fit weights. Features, per candidate chunk:

- ``head_bm25``: BM25 of the query against the chunk's ``title > h1 > h2`` only (shipped);
- ``head_cos``: cosine of the query with the embedded ``title > h1 > h2`` (needs one more embedding
  per section: computed here, once, into the workdir);
- ``sec_cos`` / ``sec_bm25``: the best cosine of any chunk of the same section / BM25 of the whole
  section's text; ``page_cos``: the best cosine of any chunk of the page;
- ``cov``: idf-weighted share of the query's terms found in title + breadcrumb + text;
- ``agree``: 1 when the chunk is in the top 10 of both lists.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, report_main  # noqa: E402
from ranking_lab import LabCorpus, load, top  # noqa: E402

DEPTH = 50
CAP = 4
FEATURES = ("cos", "bm25", "head_bm25", "head_cos", "sec_cos", "sec_bm25", "page_cos", "cov", "agree")
GRID = {"head_bm25": [0, 0.05, 0.1, 0.15, 0.2, 0.3], "head_cos": [0, 0.05, 0.1, 0.2, 0.3],
        "sec_cos": [0, 0.05, 0.1, 0.2], "sec_bm25": [0, 0.05, 0.1, 0.2], "page_cos": [0, 0.05, 0.1, 0.2],
        "cov": [0, 0.05, 0.1, 0.2], "agree": [0, 0.1, 0.2]}


def _z(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return (x - ref.mean()) / (ref.std() + 1e-9)


class Prepared:
    """Per question: candidate rows, their feature matrix, which expected entries each satisfies."""

    def __init__(self, corpus: LabCorpus, workdir: Path):
        import bm25s

        from rag_assets.vocabulary.index_text import build_index_text
        from rag_assets.evaluation.matching import SECTION, entry_matches, expected_for_level, normalize_heading
        from rag_assets.retrieval.terms import chunk_headings_text, chunk_index_text, tokenize

        c = corpus
        meta = [{"title": r.title, "heading_breadcrumb": r.heading_breadcrumb} for r in c.rows]
        sections, pages = {}, {}
        sec_of = np.array([sections.setdefault((r.doc_path, normalize_heading(r.section)), len(sections)) for r in c.rows])
        page_of = np.array([pages.setdefault(r.doc_path, len(pages)) for r in c.rows])
        texts = [chunk_index_text(r.text, m) for r, m in zip(c.rows, meta)]
        sec_texts = [[] for _ in sections]
        for i, t in enumerate(texts):
            sec_texts[sec_of[i]].append(t)
        sec_index, head_index = bm25s.BM25(), bm25s.BM25()
        sec_index.index([tokenize("\n".join(t)) or ["\x00"] for t in sec_texts], show_progress=False)
        head_index.index([tokenize(chunk_headings_text(m)) or ["\x00"] for m in meta], show_progress=False)
        terms = [set(tokenize(t)) for t in texts]
        df: dict[str, int] = {}
        for ts in terms:
            for t in ts:
                df[t] = df.get(t, 0) + 1
        idf = {t: np.log(1 + len(texts) / d) for t, d in df.items()}
        head_cos = self._heading_cosines(c, meta, workdir, build_index_text)

        def scores(index, query, n):
            ids = [index.vocab_dict[t] for t in tokenize(query) if t in index.vocab_dict]
            return np.asarray(index.get_scores_from_ids(ids)) if ids else np.zeros(n)

        self.questions = []
        for qi, q in enumerate(c.questions):
            cos, bm = c.cos[qi], c.bm25[qi]
            d = top(cos, DEPTH)
            b = [i for i in top(bm, DEPTH) if bm[i] > 0]
            u = np.array(sorted(set(d.tolist()) | set(b)))
            sec_cos = np.full(len(sections), -1.0)
            np.maximum.at(sec_cos, sec_of, cos)
            page_cos = np.full(len(pages), -1.0)
            np.maximum.at(page_cos, page_of, cos)
            sec_bm, head_bm = scores(sec_index, q.question, len(sections)), scores(head_index, q.question, len(meta))
            qt = set(c.query_terms[qi])
            total = sum(idf.get(t, 0) for t in qt) or 1.0
            raw = {
                "head_bm25": head_bm[u], "head_cos": head_cos[qi][u], "sec_cos": sec_cos[sec_of[u]],
                "sec_bm25": sec_bm[sec_of[u]], "page_cos": page_cos[page_of[u]],
                "cov": np.array([sum(idf.get(t, 0) for t in qt & terms[i]) / total for i in u]),
            }
            cols = {"cos": _z(cos[u], cos[d]), "bm25": _z(bm[u], bm[top(bm, DEPTH)])}
            cols.update({k: _z(v, v) for k, v in raw.items()})
            both = set(d[:10].tolist()) & set(b[:10])
            cols["agree"] = np.array([1.0 if i in both else 0.0 for i in u])
            entries = expected_for_level(q.expected, SECTION)
            sat = [frozenset(j for j, e in enumerate(entries) if entry_matches(e, c.rows[i])) for i in u]
            self.questions.append((u, np.stack([cols[f] for f in FEATURES], 1), sat, len(entries), sec_of[u], page_of[u]))

    @staticmethod
    def _heading_cosines(c: LabCorpus, meta, workdir: Path, build_index_text) -> np.ndarray:
        heads = [build_index_text(m["title"], [p for p in m["heading_breadcrumb"].split(" > ") if p], "") for m in meta]
        unique = sorted(set(heads))
        path = Path(workdir) / c.name / f"lab-headings-{len(unique)}.npy"
        if path.exists():
            vectors = np.load(path)
        else:
            from rag_assets.config import Settings
            from rag_assets.embedding import load_embedder

            vectors = load_embedder(Settings.from_env({}).embedding).embed_documents(unique)
            np.save(path, vectors)
        pos = {h: i for i, h in enumerate(unique)}
        return (c.qvecs @ vectors.T)[:, [pos[h] for h in heads]]

    def evaluate(self, weights: dict[str, float]) -> dict[str, float]:
        w = np.array([weights.get(f, 0.0) for f in FEATURES])
        r3 = r5 = mrr = 0.0
        for u, matrix, sat, n, secs, pages in self.questions:
            order = np.lexsort((u, -(matrix @ w)))
            _, first = np.unique(secs[order], return_index=True)  # one result per section
            order = order[np.sort(first)]
            count: dict[int, int] = {}
            kept, later = [], []
            for o in order:
                if count.get(pages[o], 0) >= CAP:
                    later.append(o)
                else:
                    kept.append(o)
                    count[pages[o]] = count.get(pages[o], 0) + 1
            order = (kept + later)[:10]
            r3 += len(set().union(*[sat[o] for o in order[:3]])) / n
            r5 += len(set().union(*[sat[o] for o in order[:5]])) / n
            mrr += next((1 / rank for rank, o in enumerate(order, 1) if sat[o]), 0.0)
        m = len(self.questions)
        return {"R@3": r3 / m, "R@5": r5 / m, "MRR": mrr / m}


def objective(prepared: dict[str, Prepared], names: list[str], weights: dict[str, float]) -> float:
    return statistics.fmean(statistics.fmean(prepared[n].evaluate(weights).values()) for n in names)


def fit(prepared, names, features) -> dict[str, float]:
    """Coordinate ascent over GRID (fusion fixed at 0.5 / 0.5), three passes."""
    w = {"cos": 0.5, "bm25": 0.5}
    best = objective(prepared, names, w)
    for _ in range(3):
        changed = False
        for f in features:
            for v in GRID[f]:
                trial = dict(w, **{f: v})
                o = objective(prepared, names, trial)
                if o > best + 1e-9:
                    best, w, changed = o, trial, True
        if not changed:
            break
    return w


def fmt(s: dict[str, float]) -> str:
    return " / ".join(f"{s[k]:.3f}" for k in ("R@3", "R@5", "MRR"))


def run(workdir: Path) -> str:
    started = time.perf_counter()
    names = list(CORPORA)
    prepared = {n: Prepared(load(n, workdir), workdir) for n in names}
    base = {"cos": 0.5, "bm25": 0.5}
    lines = ["# Second-stage features (lab re-implementation, cached scores)", "",
             f"Run {time.strftime('%Y-%m-%d')}, `benchmarks/ranking_features.py`; R@3 / R@5 / MRR per corpus.", "",
             "| weights | " + " | ".join(names) + " |", "|---|" + "---|" * len(names),
             "| convex 0.5 / 0.5 alone | " + " | ".join(fmt(prepared[n].evaluate(base)) for n in names) + " |"]
    for f in GRID:
        for v in GRID[f][1:]:
            w = dict(base, **{f: v})
            lines.append(f"| + {f} {v} | " + " | ".join(fmt(prepared[n].evaluate(w)) for n in names) + " |")
    lines += ["", "Leave-one-corpus-out (weights fitted on the two other corpora by coordinate ascent):", "",
              "| features | held out | fitted weights | held-out R@3 / R@5 / MRR | convex alone |", "|---|---|---|---|---|"]
    sets = {"head_bm25 (shipped)": ["head_bm25"], "head_bm25 + sec_bm25": ["head_bm25", "sec_bm25"],
            "all but head_cos": [f for f in GRID if f != "head_cos"], "all": list(GRID)}
    for label, features in sets.items():
        for held in names:
            w = fit(prepared, [n for n in names if n != held], features)
            shown = ", ".join(f"{k} {v}" for k, v in w.items() if v and k not in ("cos", "bm25")) or "none"
            lines.append(f"| {label} | {held} | {shown} | {fmt(prepared[held].evaluate(w))} | {fmt(prepared[held].evaluate(base))} |")
    lines += ["", f"({time.perf_counter() - started:.0f} s)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return report_main(__doc__.splitlines()[0], run, argv)


if __name__ == "__main__":
    sys.exit(main())
