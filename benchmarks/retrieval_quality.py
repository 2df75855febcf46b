"""Section-level retrieval quality of each retrieval mode on an eval set, against an EXISTING index.

Ingests nothing: settings come from the environment (RAG_CHROMA_PATH, RAG_STATE_DIR, RAG_COLLECTION, ...),
exactly as `rag query` would use them. Usage:

    python benchmarks/retrieval_quality.py [--eval data/eval/claude-docs.jsonl] [--variants] [--json]

Scoring (k = 3): results are walked best first and the first 3 DISTINCT (doc_path, section) pairs
are kept. A kept pair matches an expected entry when the doc_path is equal and the entry's
normalised section (emphasis/code markers stripped, whitespace collapsed, casefolded) equals the
chunk's section or any heading of its breadcrumb (and, if the entry has `text`, the normalised
snippet is inside the chunk's normalised text).
P@3 = matching kept pairs / kept pairs; R@3 = expected entries matched / expected entries;
MRR = 1 / rank of the first matching kept pair (0 when none in the 3).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
import time
from pathlib import Path

K = 3
_MARKERS = re.compile(r"[*_`]")


def normalise(text: str) -> str:
    return " ".join(_MARKERS.sub("", text or "").split()).casefold()


def load_eval(path: Path) -> list[dict]:
    items = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                items.append(json.loads(line))
    return items


def _matches(result, entry: dict) -> bool:
    if "doc_path" in entry and entry["doc_path"] != result.doc_path:
        return False
    if "section" in entry:
        want = normalise(entry["section"])
        headings = [result.section, *result.heading_breadcrumb.split(" > ")]
        if want not in {normalise(h) for h in headings if h}:
            return False
    if "text" in entry and normalise(entry["text"]) not in normalise(result.text):
        return False
    return True


def top_units(results, k: int = K) -> list:
    """The first k results with a distinct (doc_path, section)."""
    seen, kept = set(), []
    for r in results:
        key = (r.doc_path, r.section)
        if key in seen:
            continue
        seen.add(key)
        kept.append(r)
        if len(kept) == k:
            break
    return kept


def score_question(results, expected: list[dict], k: int = K) -> dict:
    kept = top_units(results, k)
    hits = [any(_matches(r, e) for e in expected) for r in kept]
    found = sum(1 for e in expected if any(_matches(r, e) for r in kept))
    first = next((i for i, h in enumerate(hits, 1) if h), None)
    return {
        "precision": sum(hits) / len(kept) if kept else 0.0,
        "recall": found / len(expected) if expected else 0.0,
        "mrr": 1.0 / first if first else 0.0,
    }


def evaluate(search, items: list[dict], mode: str, k: int = K, depth: int = 15) -> dict:
    """search(question, mode, top_k) -> results; returns averaged metrics and per-question scores."""
    rows, seconds = [], []
    for item in items:
        question = item.get("question") or item.get("query")
        start = time.perf_counter()
        results = search(question, mode, depth)
        seconds.append(time.perf_counter() - start)
        if len(top_units(results, k)) < k:
            results = search(question, mode, depth * 4)
        rows.append({"id": item.get("id"), **score_question(results, item.get("expected") or [], k)})
    mean = lambda key: statistics.fmean(r[key] for r in rows) if rows else 0.0  # noqa: E731
    seconds.sort()
    return {
        "mode": mode,
        "questions": len(rows),
        "P@3": mean("precision"),
        "R@3": mean("recall"),
        "MRR": mean("mrr"),
        "p50_ms": 1000 * seconds[len(seconds) // 2] if seconds else 0.0,
        "rows": rows,
    }


def _table(rows: list[tuple[str, dict]]) -> str:
    n = rows[0][1].get("weak_dense", {}).get("questions", 0) if rows else 0
    out = [
        f"| variant | P@3 | R@3 | MRR | weak-dense R@3 (n={n}) | weak-dense MRR | p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in rows:
        w = m.get("weak_dense", {"R@3": 0.0, "MRR": 0.0})
        out.append(
            f"| {name} | {m['P@3']:.3f} | {m['R@3']:.3f} | {m['MRR']:.3f} | {w['R@3']:.3f} | {w['MRR']:.3f} "
            f"| {m['p50_ms']:.1f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", default=None, help="eval set (default: RAG_EVAL_DIR/claude-docs.jsonl)")
    parser.add_argument("--modes", default="vector,keyword,hybrid")
    parser.add_argument("--variants", action="store_true", help="also fusion variants (static weights, k)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from rag_assets.config import Settings
    from rag_assets.retrieval import Retriever

    settings = Settings.from_env()
    eval_path = Path(args.eval) if args.eval else settings.eval_dir / "claude-docs.jsonl"
    items = load_eval(eval_path)
    retriever = Retriever.from_settings(settings)
    if retriever.store.count() == 0:
        print(f"the index at {settings.chroma_path} ({settings.collection}) is empty: ingest first", file=sys.stderr)
        return 2
    retriever.keyword.ensure_current()

    rows: list[tuple[str, dict]] = []
    for mode in args.modes.split(","):
        rows.append((mode, evaluate(retriever.search, items, mode)))
    if args.variants:
        base = retriever.settings
        variants = {
            "hybrid equal weights (1,1), k=60, no adaptation": dict(adaptive=False),
            "hybrid static (0.5,1), k=60": dict(adaptive=False, dense_weight=0.5, keyword_weight=1.0),
            "hybrid static (1,0.5), k=60": dict(adaptive=False, dense_weight=1.0, keyword_weight=0.5),
            "hybrid equal weights, k=20, no adaptation": dict(adaptive=False, rrf_k=20),
            "hybrid adaptive, k=60 (default)": dict(adaptive=True),
        }
        for name, opts in variants.items():
            adaptive = opts.pop("adaptive")
            clone = Retriever(
                retriever.embedder, retriever.store, dataclasses.replace(base, **opts), retriever.keyword, adaptive=adaptive
            )
            rows.append((name, evaluate(clone.search, items, "hybrid")))

    # Robustness: questions where BM25 alone is right at rank 1 but the dense list is weak
    # (vector MRR <= 0.5). Fusion should keep BM25's answer on top there.
    by_mode = {name: {r["id"]: r for r in m["rows"]} for name, m in rows}
    subset = []
    if "vector" in by_mode and "keyword" in by_mode:
        subset = [q for q, r in by_mode["keyword"].items() if r["mrr"] == 1.0 and by_mode["vector"][q]["mrr"] <= 0.5]
    for name, m in rows:
        picked = [by_mode[name][q] for q in subset]
        m["weak_dense"] = {
            "questions": len(picked),
            "R@3": statistics.fmean(r["recall"] for r in picked) if picked else 0.0,
            "MRR": statistics.fmean(r["mrr"] for r in picked) if picked else 0.0,
        }

    if args.json:
        print(json.dumps([{"variant": n, **{k: v for k, v in m.items() if k != "rows"}} for n, m in rows], indent=2))
    else:
        print(f"eval set: {eval_path} ({len(items)} questions); index: {retriever.store.count()} chunks")
        print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
