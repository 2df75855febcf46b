"""Chapter context and selected text, measured on a textbook-style corpus and its JSON test set.

    python benchmarks/textbook_context.py DOCS_DIR TEST_SET.json [--workdir /tmp/rag-textbook]

DOCS_DIR is indexed once (plain modules, the local model) into the workdir. Then, over the test
set's questions that name expected modules (module hit@k: a result among the first k comes from one):

- no context: what `rag query` returns;
- the reader in the right place: `prefer=` the first expected module (answer_question's chapter_context);
- the reader elsewhere: `prefer=` a module the question is not about (it must still be answered:
  chapter context ranks, it does not filter);
- the same question filtered to that other module (what a hard filter would do, for contrast).

And over the `selected_text_only` questions with expected keywords: keyword coverage of the first k
results retrieved for the question alone vs. for the selection and the question (answer_question's
selected_text), plus the coverage of the sources answer_question hands the model (selection first).
Results: benchmarks/textbook_context.md. Nothing from the corpus is written to the repository.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

K = 5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("test_set", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rag-textbook"))
    args = parser.parse_args()

    from rag_assets.config import Settings
    from rag_assets.evaluation.test_set import load_test_set, module_of
    from rag_assets.pipeline import RAGPipeline
    from rag_assets.retrieval.context import RetrieveRequest
    from rag_assets_tests.support.index_builder import build_index

    settings = Settings.from_env({}, docs_dir=args.docs_dir, chroma_path=args.workdir / "chroma",
                                 state_dir=args.workdir / "state", cache_dir=args.workdir / "cache")
    started = time.perf_counter()
    stats = build_index(args.docs_dir, settings)
    print(f"indexed: {stats} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    pipeline = RAGPipeline.from_settings(settings)
    questions = load_test_set(args.test_set).questions
    modules = sorted({p.relative_to(args.docs_dir).parts[0] for p in args.docs_dir.rglob("*.md*")
                      if len(p.relative_to(args.docs_dir).parts) > 1})

    def hit(results, expected) -> float:
        return float(any(module_of(r) in expected for r in results[:K]))

    rows = {"no context": [], "reader in the right module": [], "reader in another module": [],
            "filtered to that other module": []}
    for q in (q for q in questions if q.expected_modules and not q.selected_text):
        right = q.expected_modules[0]
        other = next(m for m in modules if m not in q.expected_modules)
        def ask(**kw):  # DocumentChunks, best first (what answer_question hands the model)
            return pipeline.retrieve(RetrieveRequest(q.question, max_chunks=K, min_relevance=-1.0, **kw)).document_chunks

        rows["no context"].append(hit(ask(), q.expected_modules))
        rows["reader in the right module"].append(hit(ask(prefer=right), q.expected_modules))
        rows["reader in another module"].append(hit(ask(prefer=other), q.expected_modules))
        rows["filtered to that other module"].append(hit(ask(filters={"module": other}), q.expected_modules))

    def coverage(texts, keywords) -> float:
        text = " ".join(texts).casefold()
        return sum(k.casefold() in text for k in keywords) / len(keywords)

    sel = {"question alone": [], "selection + question (retrieved)": [], "sources answer_question hands over": []}
    for q in (q for q in questions if q.selected_text and q.expected_keywords and not q.expected_refuse):
        alone = pipeline.search(q.question, "hybrid", K)
        with_sel = pipeline.search(q.retrieval_query, "hybrid", K)
        sel["question alone"].append(coverage([r.text for r in alone], q.expected_keywords))
        sel["selection + question (retrieved)"].append(coverage([r.text for r in with_sel], q.expected_keywords))
        sel["sources answer_question hands over"].append(
            coverage([q.selected_text] + [r.text for r in with_sel][: K - 1], q.expected_keywords))

    print(f"\n| chapter context ({len(rows['no context'])} questions with expected modules) | module hit@{K} |")
    print("|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.fmean(values):.3f} |")
    n = len(sel["question alone"])
    print(f"\n| selected text ({n} questions with keywords) | keyword coverage@{K} |")
    print("|---|---|")
    for name, values in sel.items():
        print(f"| {name} | {statistics.fmean(values):.3f} |" if values else f"| {name} | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
