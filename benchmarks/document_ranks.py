"""Where the right document lands: the rank of each question's expected paper among the distinct
documents of a long result list, per mode (covid-qa-dev's document R@5, benchmarks/retrieval_corpora.md).

    .venv/bin/python benchmarks/document_ranks.py [--workdir /tmp/rag-corpora] [--corpus covid-qa-dev] [--depth 40]

Prints the rank distribution per mode and every question whose document is not in the hybrid top 5.
The index is the one benchmarks/corpora.py builds (built here when missing).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402

MISSING = 10_000  # rank of a document that is not in the list at all


def document_ranks(retriever, questions: list[dict], mode: str, depth: int) -> list[int]:
    ranks = []
    for q in questions:
        expected = q["expected"][0]["doc_path"]
        docs: list[str] = []
        for result in retriever.search(q["question"], mode, depth, None, context_tokens=0):
            if result.doc_path not in docs:
                docs.append(result.doc_path)
        ranks.append(docs.index(expected) + 1 if expected in docs else MISSING)
    return ranks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--corpus", default="covid-qa-dev")
    parser.add_argument("--depth", type=int, default=40)
    args = parser.parse_args()
    retriever, _ = open_corpus(args.corpus, Path(args.workdir))
    questions = [json.loads(line) for line in CORPORA[args.corpus].eval_set.read_text().splitlines() if line.strip()]
    by_mode = {mode: document_ranks(retriever, questions, mode, args.depth) for mode in ("hybrid", "keyword", "vector")}
    for mode, ranks in by_mode.items():
        buckets = collections.Counter("1" if r == 1 else "2-5" if r <= 5 else "6-10" if r <= 10 else "lower"
                                      for r in ranks)
        print(f"{mode}: document R@5 {sum(r <= 5 for r in ranks) / len(ranks):.3f}; first {buckets['1']}, "
              f"2-5 {buckets['2-5']}, 6-10 {buckets['6-10']}, lower or absent {buckets['lower']}")
    print("\nnot in the hybrid top 5 (hybrid / keyword / vector rank):")
    for i, q in enumerate(questions):
        if by_mode["hybrid"][i] > 5:
            shown = " / ".join(str(by_mode[m][i]) if by_mode[m][i] < MISSING else "-" for m in by_mode)
            print(f"  {q['id']}  {shown}  {q['question']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
