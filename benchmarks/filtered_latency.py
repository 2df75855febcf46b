"""Filtered hybrid query latency at 10k chunks: no filter, a filter keeping ~14 %, and one keeping ~1 %.

The 10k-chunk collection is made as in benchmarks/retrieval_latency.py (the bundled corpus indexed
once with the real model, then replicated with noisy vectors and a per-copy token, no re-embedding).
Every query goes through RAGPipeline.search (hybrid, top_k 5) with the filters, over the 100 bundled
eval questions (twice), the query-embedding cache emptied before each query. Also checked per query:
every result is inside the filter, and top_k results come back whenever that many chunks match.

    python benchmarks/filtered_latency.py [--workdir /tmp/rag-latency] [--size 10000]

Results: benchmarks/filtered_latency.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from retrieval_latency import _settings, ensure_scaled, ensure_source, load1, machine, summary  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rag-latency"))
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()

    from rag_assets.config import Settings
    from rag_assets.embedding import load_embedder
    from rag_assets.pipeline import RAGPipeline
    from rag_assets.retrieval.filters import Filters

    embedder = load_embedder(Settings.from_env().embedding)
    source = ensure_source(args.workdir, embedder)
    ensure_scaled(args.workdir, embedder, source, args.size, noise=0.01)
    settings = _settings(args.workdir, f"scale_{args.size}")
    pipeline = RAGPipeline.from_settings(settings)
    store = pipeline.retriever.store
    per_doc = Counter(meta["doc_path"] for _, _, meta in store.iter_all())
    total = sum(per_doc.values())
    # ~1 %: whole documents of copy 2, smallest first, until 1 % of the chunks
    small, kept = [], 0
    for doc, n in sorted(((d, n) for d, n in per_doc.items() if d.startswith("copy-2/")), key=lambda t: (t[1], t[0])):
        if kept >= total // 100:
            break
        small.append(doc)
        kept += n
    cases = {
        "no filter": None,
        "path_prefix copy-1/": {"path_prefix": "copy-1/"},
        f"{len(small)} documents (doc_path)": {"doc_path": small},
    }
    questions = [json.loads(line)["question"] for line in (HERE.parent / "data" / "eval" / "claude-docs.jsonl").open()
                 if line.strip()]
    rows = []
    for name, raw in cases.items():
        filters = Filters.parse(raw)
        matching = sum(n for d, n in per_doc.items() if filters is None or filters.matches(d, {}))
        for q in questions[:5]:  # warm-up (and the keyword index build, once)
            pipeline.search(q, "hybrid", 5, raw)
        times, outside, short = [], 0, 0
        for _ in range(args.passes):
            for q in questions:
                pipeline.retriever._embeddings.clear()
                started = time.perf_counter()
                results = pipeline.search(q, "hybrid", 5, raw)
                times.append((time.perf_counter() - started) * 1000)
                outside += sum(1 for r in results if filters is not None and not filters.matches(r.doc_path, {}))
                short += len(results) < min(5, matching)
        stats = summary(times)
        rows.append((name, matching, matching / total, stats, outside, short))
        print(f"{name}: {matching} chunks ({matching / total:.1%}), p50 {stats['p50']:.1f} ms, p95 {stats['p95']:.1f} ms, "
              f"results outside the filter {outside}, short lists {short} (load {load1():.1f})", flush=True)
    print()
    print(f"| hybrid, top_k 5, {total:,} chunks | chunks kept | p50 ms | p95 ms | max ms | results outside | short lists |")
    print("|---|---|---|---|---|---|---|")
    for name, matching, share, stats, outside, short in rows:
        print(f"| {name} | {matching:,} ({share:.1%}) | {stats['p50']:.1f} | {stats['p95']:.1f} | {stats['max']:.1f} | "
              f"{outside} | {short} |")
    print(f"\nmachine: {machine()}, load {load1():.1f}, {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
