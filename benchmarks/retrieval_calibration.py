"""Cosine distributions behind the default relevance threshold (RAG_MIN_RELEVANCE), on an EXISTING index.

For the eval questions (on-topic) and a list of off-topic questions, prints the distribution of
the threshold statistic the pipeline uses: the mean dense cosine of the top max_chunks candidates
(avg_relevance), plus the top-1 cosine and the per-chunk cosines, for each mode.

    python benchmarks/retrieval_calibration.py [--eval FILE] [--max-chunks 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

OFF_TOPIC = [
    "How do I cook pasta?",
    "What is the best recipe for chocolate chip cookies?",
    "Who won the football world cup in 1998?",
    "How do I change a flat tyre on a bicycle?",
    "What is the capital of Australia?",
    "How tall is Mount Everest?",
    "When should I plant tomatoes in my garden?",
    "How do I knit a scarf for beginners?",
    "What are the rules of chess castling?",
    "How many calories are in a banana?",
    "Which dog breeds are good with small children?",
    "How do I descale my coffee machine?",
    "What is the plot of Pride and Prejudice?",
    "How do I get rid of mould in the bathroom?",
    "What time does the sun set in Paris in June?",
    "How do I train for a marathon?",
    "What causes the northern lights?",
    "How do I fold a fitted sheet?",
    "What is the difference between a crocodile and an alligator?",
    "How long should I boil an egg?",
]


def quantiles(values: list[float]) -> str:
    v = sorted(values)
    if not v:
        return "n/a"
    q = lambda p: v[min(len(v) - 1, int(round(p * (len(v) - 1))))]  # noqa: E731
    return (
        f"min {v[0]:.3f} · p05 {q(0.05):.3f} · p25 {q(0.25):.3f} · median {q(0.5):.3f} · "
        f"p75 {q(0.75):.3f} · max {v[-1]:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", default=None)
    parser.add_argument("--max-chunks", type=int, default=5)
    args = parser.parse_args(argv)

    from rag_assets.config import Settings
    from rag_assets.evaluation import load_eval_set
    from rag_assets.retrieval.retriever import Retriever

    settings = Settings.from_env()
    eval_path = Path(args.eval) if args.eval else settings.eval_dir / "claude-docs.jsonl"
    questions = [q.question for q in load_eval_set(eval_path).questions]
    retriever = Retriever.from_settings(settings)
    print(f"index: {retriever.store.count()} chunks; model {retriever.embedder.model_name}; "
          f"threshold now {settings.min_relevance}")
    for mode in ("vector", "keyword", "hybrid"):
        for label, qs in (("eval", questions), ("off-topic", OFF_TOPIC)):
            avgs, tops, every = [], [], []
            for q in qs:
                rel = [r.relevance for r in retriever.search(q, mode, args.max_chunks)]
                avgs.append(statistics.fmean(rel) if rel else 0.0)
                tops.append(max(rel) if rel else 0.0)
                every.extend(rel)
            print(f"\n{mode:7s} {label:9s} (n={len(qs)})")
            print(f"  avg_relevance : {quantiles(avgs)}")
            print(f"  top-1 cosine  : {quantiles(tops)}")
            print(f"  every chunk   : {quantiles(every)}")
            passed = sum(a >= settings.min_relevance for a in avgs)
            print(f"  pass avg >= {settings.min_relevance}: {passed}/{len(qs)}")
    pasta = retriever.search("How do I cook pasta?", "hybrid", args.max_chunks)
    print("\npasta (hybrid) cosines:", [round(r.relevance, 3) for r in pasta])
    return 0


if __name__ == "__main__":
    sys.exit(main())
