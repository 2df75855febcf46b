"""Every retrieval mode on every development corpus: the per-corpus table of issue #10.

    python benchmarks/retrieval_corpora.py [--workdir /tmp/rag-corpora] [--corpora claude-docs,fastapi,textbook]
        [--modes vector,keyword,hybrid] [--set RAG_MAX_RESULTS_PER_PAGE=0 ...] [--json] [--worst N]
        [--probe "fastapi::How do I serve images and CSS files?::tutorial/static-files.md"] [--intervals]
        [--save DIR] [--against DIR]

Indexes come from benchmarks/corpora.py (built once into --workdir, embeddings cached). Scoring is
the project's evaluation (rag_assets.evaluation, the section rule of ../shared/README.md): each
question retrieves 10 results; section recall@3, recall@5, MRR@10 over distinct (doc_path, section)
units, and the number of distinct pages among the 10 results. With --intervals, per corpus: hybrid's
headline means with their 95 % bootstrap intervals, and hybrid minus each single mode, paired by
question (rag_assets.evaluation.confidence). --save DIR keeps each corpus's per-question rows
(DIR/<corpus>/); --against DIR pairs this run with the rows saved there, by question, per mode (each
headline metric's move with its 95 % interval): before and after a change, run at each commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402

COLUMNS = ("section.recall@3", "section.recall@5", "section.mrr@10", "distinct_pages@10")
HEADERS = ("R@3", "R@5", "MRR", "pages in top 10")
INTERVAL_LINES = ("section.recall@3", "section.recall@5", "section.mrr@10", "document.recall@5")


def score_corpus(retriever, name: str, modes: list[str], top_k: int = 10):
    from rag_assets.evaluation import evaluate_retrieval, load_eval_set

    questions = load_eval_set(CORPORA[name].eval_set).questions
    return evaluate_retrieval(questions, retriever.search, modes=modes, top_k=top_k, ragas=False)


def probe_rank(retriever, question: str, doc_path: str, mode: str, top_k: int = 10) -> int | None:
    """1-based rank of the first result from doc_path among the top_k for question, or None."""
    pages = [r.doc_path for r in retriever.search(question, mode, top_k)]
    return pages.index(doc_path) + 1 if doc_path in pages else None


def probe_line(retriever, question: str, doc_path: str, modes: list[str]) -> str:
    """Where doc_path lands for question in each mode's 10 results, as one line."""
    return f"{doc_path} for {question!r}: " + ", ".join(
        f"{m} {probe_rank(retriever, question, doc_path, m) or 'not in the top 10'}" for m in modes)


def markdown_table(results: dict[str, dict[str, dict[str, float]]], modes: list[str]) -> str:
    lines = ["| corpus | mode | " + " | ".join(HEADERS) + " |", "|---|---|" + "---|" * len(HEADERS)]
    for corpus, by_mode in results.items():
        for mode in modes:
            m = by_mode[mode]
            lines.append(f"| {corpus} | {mode} | " + " | ".join(
                f"{m[c]:.1f}" if c.startswith("distinct") else f"{m[c]:.3f}" for c in COLUMNS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--modes", default="vector,keyword,hybrid")
    parser.add_argument("--worst", type=int, default=0, help="also list the N worst hybrid questions per corpus")
    parser.add_argument("--set", action="append", default=[], metavar="VAR=VALUE",
                        help="a RAG_* setting for this run (e.g. RAG_FUSION=rrf); repeatable")
    parser.add_argument("--probe", action="append", default=[], metavar="CORPUS::QUESTION::DOC_PATH",
                        help="also print, per mode, where DOC_PATH first appears in the 10 results for QUESTION")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--intervals", action="store_true",
                        help="also print hybrid's 95%% intervals and its paired lead over each mode, per corpus")
    parser.add_argument("--save", type=Path, help="keep each corpus's per-question rows in DIR/<corpus>/")
    parser.add_argument("--against", type=Path, help="pair this run with the rows --save kept in DIR, by question")
    args = parser.parse_args(argv)
    probes = [p.split("::", 2) for p in args.probe]
    if any(len(p) != 3 for p in probes):
        parser.error("--probe takes CORPUS::QUESTION::DOC_PATH")

    modes = args.modes.split(",")
    names = args.corpora.split(",")
    saved_runs = {}
    if args.against:  # every corpus's saved run is read before anything is scored
        from rag_assets.evaluation.runner import EvaluationReport

        for name in names:
            saved_runs[name] = EvaluationReport.latest_saved(args.against / name)
            if saved_runs[name] is None:
                parser.error(f"no saved run of {name} in {args.against / name}")
    overrides = _overrides(args.set)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        retriever, _ = open_corpus(name, Path(args.workdir), **overrides)
        report = score_corpus(retriever, name, modes)
        results[name] = {m: {c: report.metrics[m][c] for c in COLUMNS} for m in modes}
        if args.against:
            report.compare_with(*saved_runs[name])
            print(f"\n{name}: this run against {args.against / name}\n"
                  f"{report.changes_table() or 'no question in common with the saved run'}",
                  file=sys.stderr if args.json else sys.stdout)
        if args.save:
            report.save(args.save / name)
        for corpus, question, doc_path in probes:
            if corpus == name:
                print(f"{name}: {probe_line(retriever, question, doc_path, modes)}", file=sys.stderr)
        if args.intervals and not args.json:
            print(f"\n{name}: hybrid, 95% intervals\n" + "\n".join(
                f"{metric} {span.value:.3f} ({span.low:.3f}–{span.high:.3f})"
                for metric, span in report.intervals.get("hybrid", {}).items() if metric in INTERVAL_LINES))
            print(report.differences_table())
        if args.worst and not args.json:
            print(f"\n{name}: worst hybrid questions")
            print(report.worst("hybrid", args.worst).to_string())
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(markdown_table(results, modes))
    return 0


def _overrides(pairs: list[str]) -> dict:
    """RAG_* VAR=VALUE pairs as Settings field overrides (typed and validated by Settings)."""
    from rag_assets.config import ENV_VARS, Settings

    env = dict(pair.split("=", 1) for pair in pairs)
    fields = {var: name for name, var in ENV_VARS.items()}
    unknown = set(env) - set(fields)
    if unknown:
        raise SystemExit(f"unknown settings: {', '.join(sorted(unknown))}")
    parsed = Settings.from_env(env)
    return {fields[var]: getattr(parsed, fields[var]) for var in env}


if __name__ == "__main__":
    sys.exit(main())
