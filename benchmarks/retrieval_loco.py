"""Leave-one-corpus-out choice of the fusion rule and its constants, with held-out figures.

    python benchmarks/retrieval_loco.py [--workdir /tmp/rag-corpora] [--markdown benchmarks/retrieval_loco.md]

For every family of rules (RRF with k and adaptive weights; convex fusion with the dense share;
convex fusion plus the heading-match second stage, its weight; the keyword index's header field weight,
RAG_KEYWORD_HEADING_REPEATS, alone and with the heading weight), each corpus in turn is held out: the constants
are chosen on the two others (objective: mean over those corpora of mean(R@3, R@5, MRR)) and the
rule is scored on the held-out one. Each variant runs the production Retriever (real Chroma, real
keyword index) with changed settings; per-page cap 4 throughout (the diversity choice is shown on
its own in retrieval_corpora.md). The first three families run on a keyword index without header
repeats (as they were chosen); each header-repeat count gets a keyword index of its own (built once
into the workdir). Indexes come from benchmarks/corpora.py.
"""

from __future__ import annotations

import dataclasses
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, open_corpus, report_main  # noqa: E402
from retrieval_corpora import score_corpus  # noqa: E402

METRICS = ("section.recall@3", "section.recall@5", "section.mrr@10")


def families() -> dict[str, list[dict]]:
    off = dict(heading_weight=0.0, keyword_heading_repeats=0)
    rrf = [dict(fusion="rrf", rrf_k=k, adaptive=a, **off) for k in (10, 20, 40, 60, 100) for a in (True, False)]
    convex = [dict(fusion="convex", dense_weight=round(s, 2), keyword_weight=round(1 - s, 2), **off)
              for s in (0.3, 0.4, 0.5, 0.6, 0.7)]
    # the second stage on top of the convex rule its own family picks (0.5 / 0.5 in 2 of 3 folds),
    # so 40-100 questions a corpus are not asked to fit the fusion and the second stage at once
    second = [dict(fusion="convex", dense_weight=0.5, keyword_weight=0.5, heading_weight=h, keyword_heading_repeats=0)
              for h in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)]
    # the keyword index's header field weight on top of the shipped second stage (heading 0.15) ...
    repeats = [dict(fusion="convex", dense_weight=0.5, keyword_weight=0.5, heading_weight=0.15, keyword_heading_repeats=r)
               for r in (0, 1, 2, 3, 4)]
    # ... and fitted together with the heading weight
    both = [dict(fusion="convex", dense_weight=0.5, keyword_weight=0.5, heading_weight=h, keyword_heading_repeats=r)
            for r in (0, 1, 2, 3, 4) for h in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)]
    return {"rrf (k, adaptive)": rrf, "convex (dense share)": convex, "convex 0.5 + heading second stage (weight)": second,
            "convex 0.5, heading 0.15 + header repeats in BM25 (count)": repeats,
            "convex 0.5 + header repeats and heading weight (both)": both}


class Scorer:
    """Scores (corpus, variant) once; variants are Retrievers sharing one index and query-embedding cache."""

    def __init__(self, workdir: Path, names: list[str]):
        self.base = {n: open_corpus(n, workdir)[0] for n in names}
        self.cache: dict[tuple, dict[str, float]] = {}
        self.keyword: dict[tuple[str, int], object] = {}

    def keyword_index(self, name: str, repeats: int):
        """The corpus's search snapshot read with ``repeats`` header repeats (a query-time weight: the
        same committed snapshot)."""
        from rag_assets.retrieval.snapshot import SearchSnapshot

        base = self.base[name]
        if repeats == base.settings.keyword_heading_repeats:
            return base.snapshot
        if (name, repeats) not in self.keyword:
            self.keyword[(name, repeats)] = SearchSnapshot(base.settings, heading_repeats=repeats,
                                                           open_store=lambda: base.store)
        return self.keyword[(name, repeats)]

    def __call__(self, name: str, variant: dict) -> dict[str, float]:
        key = (name, tuple(sorted(variant.items())))
        if key not in self.cache:
            from rag_assets.retrieval.retriever import Retriever

            base = self.base[name]
            opts = dict(variant)
            adaptive = opts.pop("adaptive", True)
            settings = dataclasses.replace(base.settings, **opts)
            clone = Retriever(base.embedder, base.store, settings,
                              self.keyword_index(name, settings.keyword_heading_repeats), adaptive=adaptive)
            clone._embeddings = base._embeddings  # embed each question once across variants
            report = score_corpus(clone, name, ["hybrid"])
            self.cache[key] = {m: report.metrics["hybrid"][m] for m in METRICS}
        return self.cache[key]

    def objective(self, names: list[str], variant: dict) -> float:
        return statistics.fmean(statistics.fmean(self(n, variant).values()) for n in names)


def describe(variant: dict) -> str:
    if variant["fusion"] == "rrf":
        return f"rrf k={variant['rrf_k']}{' adaptive' if variant['adaptive'] else ''}"
    text = f"convex dense {variant['dense_weight']:.1f} / keyword {variant['keyword_weight']:.1f}"
    text += f", heading {variant['heading_weight']}" if variant.get("heading_weight") else ""
    return text + (f", header x{variant['keyword_heading_repeats']}" if variant.get("keyword_heading_repeats") else "")


def run(workdir: Path) -> str:
    names = list(CORPORA)
    scorer = Scorer(workdir, names)
    started = time.perf_counter()
    lines = [
        "# Leave-one-corpus-out: fusion rule and constants",
        "",
        f"Run {time.strftime('%Y-%m-%d')} on {platform.machine()} / {platform.processor() or 'cpu'}, "
        f"Python {platform.python_version()}, all-MiniLM-L6-v2 int8 + bm25s; `benchmarks/retrieval_loco.py`.",
        "Each row: constants chosen on the two other corpora (mean of R@3, R@5, MRR over them), then scored",
        "on the held-out corpus (section rule of ../shared/README.md, 10 results a question, per-page cap 4).",
        "The first three families run on a keyword index without header repeats (as they were chosen).",
        "",
        "| family | held out | chosen on the other two | held-out R@3 | R@5 | MRR |",
        "|---|---|---|---|---|---|",
    ]
    summary: dict[str, list[dict[str, float]]] = {}
    for family, variants in families().items():
        for held in names:
            train = [n for n in names if n != held]
            best = max(variants, key=lambda v: scorer.objective(train, v))
            scores = scorer(held, best)
            summary.setdefault(family, []).append(scores)
            lines.append(f"| {family} | {held} | {describe(best)} | " + " | ".join(f"{scores[m]:.3f}" for m in METRICS) + " |")
    lines += ["", "Mean of the three held-out scores per family:", "", "| family | R@3 | R@5 | MRR |", "|---|---|---|---|"]
    for family, rows in summary.items():
        lines.append(f"| {family} | " + " | ".join(f"{statistics.fmean(r[m] for r in rows):.3f}" for m in METRICS) + " |")
    lines += ["", "Every variant on every corpus (R@3 / R@5 / MRR):", "", "| variant | " + " | ".join(names) + " |",
              "|---|" + "---|" * len(names)]
    seen = set()
    for variants in families().values():
        for v in variants:
            label = describe(v)
            if label in seen:
                continue
            seen.add(label)
            lines.append(f"| {label} | " + " | ".join(
                " / ".join(f"{scorer(n, v)[m]:.3f}" for m in METRICS) for n in names) + " |")
    lines += ["", f"({len(scorer.cache)} corpus x variant runs in {time.perf_counter() - started:.0f} s.)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return report_main(__doc__.splitlines()[0], run, argv)


if __name__ == "__main__":
    sys.exit(main())
