"""Retrieval quality per mode on a second, unlike corpus: the physical-AI textbook in ../shared.

The textbook (89 Docusaurus pages: ROS 2, Gazebo, Isaac Sim, kinematics, locomotion, ...) has NO
licence: it is read from ../shared at run time only and indexed into a scratch folder; nothing of
it is copied into the project. The eval set `benchmarks/textbook_eval.jsonl` (40 questions written
for this benchmark; expected = (doc_path, section) pairs only, paths relative to the corpus root)
is scored exactly as benchmarks/retrieval_quality.py scores the bundled set (k = 3, first 3
distinct sections, P@3 / R@3 / MRR), reusing its functions.

    python benchmarks/retrieval_second_corpus.py [--corpus ../shared/corpora/physical-ai-textbook]
        [--workdir /tmp/rag-textbook] [--rebuild] [--json]

The index is built once with rag_assets_tests/index_builder.build_index (default chunk settings,
all-MiniLM-L6-v2) into --workdir and reused by later runs (--rebuild to force).
The question this answers: is the default fusion (adaptive RRF) clearly worse than the better
single mode on a corpus it was not tuned on?
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from retrieval_quality import evaluate, load_eval  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "physical-ai-textbook"

VARIANTS = {
    # name: (mode, Retriever(adaptive=...), Settings overrides)
    "vector": ("vector", True, {}),
    "keyword (BM25)": ("keyword", True, {}),
    "hybrid (default: adaptive, k=60)": ("hybrid", True, {}),
    "hybrid equal weights (1,1), k=60, no adaptation": ("hybrid", False, {}),
    "hybrid static (0.5,1), k=60": ("hybrid", False, {"dense_weight": 0.5, "keyword_weight": 1.0}),
}


def build_settings(workdir: Path, corpus: Path):
    from rag_assets.config import Settings

    return Settings.from_env(
        {},
        docs_dir=corpus,
        chroma_path=workdir / "chroma",
        state_dir=workdir / "state",
        cache_dir=workdir / "cache",
    )


def run(corpus: Path, workdir: Path, eval_path: Path, rebuild: bool = False) -> dict:
    from rag_assets.retrieval import Retriever
    from rag_assets_tests.index_builder import build_index

    settings = build_settings(workdir, corpus)
    retriever = Retriever.from_settings(settings)
    built = None
    if rebuild or retriever.store.count() == 0:
        start = time.perf_counter()
        built = build_index(corpus, settings, embedder=retriever.embedder)
        built["seconds"] = round(time.perf_counter() - start, 1)
    retriever.keyword.ensure_current()
    items = load_eval(eval_path)

    rows = []
    for name, (mode, adaptive, overrides) in VARIANTS.items():
        clone = Retriever(
            retriever.embedder, retriever.store, dataclasses.replace(settings, **overrides), retriever.keyword,
            adaptive=adaptive,
        )
        rows.append((name, evaluate(clone.search, items, mode)))

    # weak-dense subset, as in retrieval_quality.py: BM25 right at rank 1, dense MRR <= 0.5
    by = {name: {r["id"]: r for r in m["rows"]} for name, m in rows}
    kw, vec = by["keyword (BM25)"], by["vector"]
    weak = [q for q, r in kw.items() if r["mrr"] == 1.0 and vec[q]["mrr"] <= 0.5]
    strong = [q for q, r in vec.items() if r["mrr"] == 1.0 and kw[q]["mrr"] <= 0.5]
    for name, m in rows:
        for label, subset in (("weak_dense", weak), ("weak_keyword", strong)):
            picked = [by[name][q] for q in subset]
            m[label] = {
                "questions": len(picked),
                "R@3": statistics.fmean(r["recall"] for r in picked) if picked else 0.0,
                "MRR": statistics.fmean(r["mrr"] for r in picked) if picked else 0.0,
            }
    return {
        "corpus": str(corpus),
        "chunks": retriever.store.count(),
        "keyword_meta": retriever.keyword.meta,
        "built": built,
        "questions": len(items),
        "rows": rows,
    }


def table(result: dict) -> str:
    rows = result["rows"]
    nw = rows[0][1]["weak_dense"]["questions"]
    nk = rows[0][1]["weak_keyword"]["questions"]
    out = [
        f"| variant | P@3 | R@3 | MRR | weak-dense MRR (n={nw}) | weak-keyword MRR (n={nk}) | p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in rows:
        out.append(
            f"| {name} | {m['P@3']:.3f} | {m['R@3']:.3f} | {m['MRR']:.3f} | {m['weak_dense']['MRR']:.3f} "
            f"| {m['weak_keyword']['MRR']:.3f} | {m['p50_ms']:.1f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--workdir", default="/tmp/rag-textbook", help="scratch folder for the index (not the repo)")
    parser.add_argument("--eval", default=str(HERE / "textbook_eval.jsonl"))
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--per-question", action="store_true", help="also print each question's MRR per mode")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    corpus = Path(args.corpus).resolve()
    if not corpus.is_dir():
        print(f"corpus not found: {corpus}", file=sys.stderr)
        return 2
    result = run(corpus, Path(args.workdir), Path(args.eval), args.rebuild)
    if args.json:
        out = {k: v for k, v in result.items() if k != "rows"}
        out["variants"] = [{"variant": n, **{k: v for k, v in m.items() if k != "rows"}} for n, m in result["rows"]]
        print(json.dumps(out, indent=2, default=str))
        return 0
    print(f"corpus: {result['corpus']} -> {result['chunks']} chunks; "
          f"eval: {args.eval} ({result['questions']} questions)")
    if result["built"]:
        print(f"index built: {result['built']}")
    print(table(result))
    if args.per_question:
        names = [n for n, _ in result["rows"]]
        ids = [r["id"] for r in result["rows"][0][1]["rows"]]
        per = {n: {r["id"]: r["mrr"] for r in m["rows"]} for n, m in result["rows"]}
        print("\nper-question MRR: " + " | ".join(names))
        for q in ids:
            print(q, " ".join(f"{per[n][q]:.2f}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
