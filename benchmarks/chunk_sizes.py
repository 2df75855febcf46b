"""Chunk sizes on the three development corpora, and their leave-one-corpus-out choice.

    python benchmarks/chunk_sizes.py [--workdir /tmp/rag-chunk-sizes] [--markdown benchmarks/chunk_sizes.md]

Every variant (min / target / max tokens, overlap) gets its own folder of corpus indexes under
--workdir (built by benchmarks/corpora.py with those settings; about 4 minutes a variant on 2 cores,
vectors of unchanged chunk texts come from the variant's embedding cache, seeded from
/tmp/rag-corpora/embeddings.sqlite when that exists). A second run only queries. Then, for each corpus
held out in turn, the variant with the best mean of hybrid (R@3, R@5, MRR) over the two other corpora
is chosen and scored on the held-out one.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402
from retrieval_corpora import COLUMNS, score_corpus  # noqa: E402

MODES = ["vector", "keyword", "hybrid"]
# name: (min, target, max, overlap) in tiktoken tokens
VARIANTS: dict[str, tuple[int, int, int, int]] = {
    "40/160/200 (before)": (40, 160, 200, 0),
    "40/160/200, overlap 40": (40, 160, 200, 40),
    "80/160/200": (80, 160, 200, 0),
    "60/240/300": (60, 240, 300, 0),
    "30/120/160": (30, 120, 160, 0),
    "40/100/140 (default)": (40, 100, 140, 0),  # before 30/100/140: ties on the other corpora go to it
    "30/100/140": (30, 100, 140, 0),
    "20/80/110": (20, 80, 110, 0),
}


def _folder(name: str) -> str:
    return name.split(" (")[0].replace("/", "-").replace(", ", "-").replace(" ", "")


def score_variant(workdir: Path, sizes: tuple[int, int, int, int]) -> dict[str, dict[str, dict[str, float]]]:
    workdir.mkdir(parents=True, exist_ok=True)
    seed = DEFAULT_WORKDIR / "embeddings.sqlite"
    if seed.exists() and not (workdir / "embeddings.sqlite").exists():
        shutil.copy(seed, workdir / "embeddings.sqlite")
    low, target, high, overlap = sizes
    settings = dict(chunk_min_tokens=low, chunk_target_tokens=target, chunk_max_tokens=high,
                    chunk_overlap_tokens=overlap)
    results = {}
    for corpus in CORPORA:
        retriever, _ = open_corpus(corpus, workdir, **settings)
        report = score_corpus(retriever, corpus, MODES)
        results[corpus] = {m: {c: report.metrics[m][c] for c in COLUMNS} for m in MODES}
        results[corpus]["chunks"] = retriever.store.count()
    return results


def _mean3(m: dict[str, float]) -> float:
    return (m["section.recall@3"] + m["section.recall@5"] + m["section.mrr@10"]) / 3


def _triple(m: dict[str, float]) -> str:
    return f"{m['section.recall@3']:.3f} / {m['section.recall@5']:.3f} / {m['section.mrr@10']:.3f}"


def run(workdir: Path) -> str:
    scores = {name: score_variant(workdir / _folder(name), sizes) for name, sizes in VARIANTS.items()}
    corpora = list(CORPORA)
    lines = ["| min/target/max, overlap | " + " | ".join(f"{c} chunks · hybrid R@3 / R@5 / MRR" for c in corpora) + " |",
             "|---|" + "---|" * len(corpora)]
    for name, by_corpus in scores.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{by_corpus[c]['chunks']:,} · {_triple(by_corpus[c]['hybrid'])}" for c in corpora) + " |")
    lines += ["", "Every mode (R@3 / R@5 / MRR):", "",
              "| min/target/max, overlap | corpus | vector | keyword | hybrid |", "|---|---|---|---|---|"]
    for name, by_corpus in scores.items():
        for c in corpora:
            lines.append(f"| {name} | {c} | " + " | ".join(_triple(by_corpus[c][m]) for m in MODES) + " |")
    lines += ["", "Leave-one-corpus-out (sizes chosen on the two other corpora, hybrid):", "",
              "| held out | chosen on the other two | held-out R@3 / R@5 / MRR | 40/160/200 there |",
              "|---|---|---|---|"]
    held = []
    for out in corpora:
        rest = [c for c in corpora if c != out]
        best = max(scores, key=lambda v: sum(_mean3(scores[v][c]["hybrid"]) for c in rest))
        held.append(scores[best][out]["hybrid"])
        lines.append(f"| {out} | {best} | {_triple(held[-1])} | {_triple(scores['40/160/200 (before)'][out]['hybrid'])} |")
    mean = {k: sum(h[k] for h in held) / len(held) for k in ("section.recall@3", "section.recall@5", "section.mrr@10")}
    before = {k: sum(scores["40/160/200 (before)"][c]["hybrid"][k] for c in corpora) / len(corpora) for k in mean}
    lines += ["", f"Held-out mean: {_triple(mean)}; 40/160/200 on all three: {_triple(before)}."]
    return "\n".join(lines)


if __name__ == "__main__":
    from corpora import report_main

    argv = sys.argv[1:]
    if "--workdir" not in argv:  # not the other benchmarks' folder: each variant has its own indexes
        argv = ["--workdir", "/tmp/rag-chunk-sizes", *argv]
    sys.exit(report_main(__doc__.splitlines()[0], run, argv))
