"""`rag evaluate`: score retrieval on the eval sets (the retrieval_evaluation asset, through Dagster)
and print the table, intervals and moves; or a JSON test set of the ingestion contract's shape,
scored here (--test-set)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rag_assets.cli.common import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, UsageError, finite, jsonable, valid_count
from rag_assets.errors import ConfigurationError
from rag_assets.vocabulary.modes import RetrievalMode


def add_parser(sub) -> None:
    p = sub.add_parser("evaluate", help="score retrieval on the eval sets, or on a synthetic set generated from the "
                                        "documents when there is none (materializes retrieval_evaluation)")
    p.add_argument("--eval-set", action="append", metavar="FILE.jsonl",
                   help="an eval set (repeatable; default: every *.jsonl under RAG_EVAL_DIR)")
    p.add_argument("--test-set", metavar="FILE",
                   help="a JSONL eval set (as --eval-set), or a JSON test set of the ingestion contract's shape "
                        "({\"queries\": [...]} with expected_modules / expected_keywords / selected_text), "
                        "scored by module hit@k and keyword coverage")
    p.add_argument("--collection", help="the Chroma collection to score (default: RAG_COLLECTION or rag_chunks)")
    p.add_argument("--top-k", type=int, default=0, help="results retrieved per question (default RAG_EVAL_TOP_K=10)")
    p.add_argument("--json", action="store_true", help="print the metrics (mode -> metric -> value) and per-question rows")
    p.add_argument("--against", metavar="RUN.parquet",
                   help="also compare with this earlier run (an eval-*.parquet under RAG_EVAL_RESULTS_DIR), "
                        "paired over the questions both asked")


# The table `rag evaluate` prints: section-level headline metrics, one column per mode.
_EVAL_TABLE = ("section.hit@1", "section.precision@3", "section.recall@3", "section.recall@5",
               "section.recall@10", "section.mrr@10", "section.ndcg@10", "document.recall@5", "document.mrr@10",
               "ragas.id_based_context_precision", "ragas.id_based_context_recall", "latency_ms.p95",
               "context_tokens.mean")


def run(args) -> int:
    from rag_assets.evaluation.corpora import NO_EVAL_SET, SYNTHETIC_OFF, main_eval_sets, parse_eval_corpora
    from rag_assets.evaluation.test_set import is_test_set_json
    from rag_assets.orchestration.evaluate_run import evaluate

    if args.test_set:
        if not Path(args.test_set).is_file():
            raise FileNotFoundError(f"no such test set: {args.test_set}")
        if is_test_set_json(args.test_set):
            return _evaluate_test_set(args)
        args.eval_set = [*(args.eval_set or []), args.test_set]
    settings = args.corpus.settings()
    try:
        corpora = parse_eval_corpora(settings.eval_corpora)
    except ValueError as exc:
        raise ConfigurationError(f"RAG_EVAL_CORPORA: {exc}") from None
    # no labelled set: the index is scored on a synthetic set generated from its documents, unless those are off
    if not main_eval_sets(settings.eval_dir, args.eval_set or []) and not corpora and settings.eval_synthetic == "off":
        print(f"rag: {NO_EVAL_SET.format(eval_dir=settings.eval_dir)}{SYNTHETIC_OFF}", file=sys.stderr)
        return EXIT_USAGE
    if args.top_k and not valid_count(args.top_k, "--top-k"):
        return EXIT_USAGE
    for path in args.eval_set or []:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such eval set: {path}")
    against = _load_against(args.against) if args.against else None  # UsageError before anything runs
    from rag_assets.orchestration.loaded_corpora import corpus_definitions

    outcome = evaluate(args.eval_set, args.top_k or None, corpus=corpus_definitions(args.corpus))
    if not outcome.success:
        print(f"rag: evaluation failed (run {outcome.run_id}): {outcome.error}", file=sys.stderr)
        return EXIT_PARTIAL
    if outcome.skipped and not outcome.summary:
        print(f"rag: {outcome.skipped}", file=sys.stderr)
        return EXIT_USAGE
    modes = outcome.summary.get("modes", {})
    # a synthetic set scored next to the labelled one (RAG_EVAL_SYNTHETIC=always)
    extra = outcome.synthetic_summary if outcome.synthetic_rows_path != outcome.rows_path else {}
    now_rows = None  # this run's saved rows, read once for --json and --against
    if outcome.rows_path and (args.json or against is not None):
        import pandas as pd

        now_rows = pd.read_parquet(outcome.rows_path)
    compared = _compare_against(args.against, against, now_rows, list(modes)) if against is not None else None
    if args.json:
        rows = now_rows.to_dict(orient="records") if now_rows is not None else []
        payload = {"metrics": modes, "eval_set": outcome.summary.get("eval_set", {}), "checks": outcome.checks,
                   "skipped": outcome.summary.get("skipped", {}),
                   "confidence": outcome.summary.get("confidence", {}),
                   "questions": outcome.summary.get("questions"), "top_k": outcome.summary.get("top_k"),
                   "run_id": outcome.run_id, "rows_path": outcome.rows_path, "rows": rows}
        if compared is not None:
            payload["against"] = compared
        if extra:
            payload["synthetic"] = {"metrics": extra.get("modes", {}), "eval_set": extra.get("eval_set", {}),
                                    "questions": extra.get("questions"), "rows_path": outcome.synthetic_rows_path}
        print(json.dumps(finite(payload), indent=2, default=jsonable, ensure_ascii=False, allow_nan=False))
    else:
        _print_scores(outcome.summary, outcome.rows_path, outcome.run_id)
        if compared is not None:
            _print_moves(f"against {args.against} ({compared['questions']} questions in both)",
                         compared["by_mode"], [m for m in RetrievalMode.names() if m in modes])
        if extra:
            print()
            _print_scores(extra, outcome.synthetic_rows_path, outcome.run_id)
    sys.stdout.flush()
    failed_errors = 0
    for name, check in outcome.checks.items():
        status = "passed" if check["passed"] else f"FAILED ({check['severity']})"
        detail = check["metadata"].get("problems", "")
        print(f"check {name}: {status}" + (f"\n{detail}" if detail else ""), file=sys.stderr)
        failed_errors += (not check["passed"]) and check["severity"] == "ERROR"
    return EXIT_PARTIAL if failed_errors else EXIT_OK


def _print_scores(summary: dict, rows_path, run_id: str) -> None:
    """One eval set's table, one column per mode; a synthetic set's is titled so."""
    modes = summary.get("modes", {})
    eval_set = summary.get("eval_set") or {}
    names = [m for m in RetrievalMode.names() if m in modes] + [m for m in modes if m not in RetrievalMode.names()]
    if eval_set.get("kind") == "synthetic":
        print(f"SYNTHETIC eval set (generated from the documents, not labelled by a person): version "
              f"{eval_set.get('version')}, generator {eval_set.get('generator')}, {eval_set.get('documents')} documents "
              f"({eval_set.get('path')}); put a labelled *.jsonl under RAG_EVAL_DIR to score that instead")
    print(f"{summary.get('questions')} questions, top_k={summary.get('top_k')} (run {run_id})")
    print(f"{'metric':34}" + "".join(f"{m:>10}" for m in names))
    for metric in _EVAL_TABLE:
        values = [modes[m].get(metric) for m in names]
        if all(v is None for v in values):
            continue
        print(f"{metric:34}" + "".join(f"{v:>10.3f}" if v is not None else f"{'-':>10}" for v in values))
    _print_confidence(summary.get("confidence") or {}, names, summary.get("questions"))
    for reason in sorted(set(summary.get("skipped", {}).values()))[:3]:
        print(f"skipped: {reason}")
    print(f"per-question results: {rows_path}")


def _print_confidence(confidence: dict, names: list[str], questions) -> None:
    """The headline means' intervals under their columns, then hybrid minus each mode (paired): how
    much of a difference between modes, or between two runs, the eval set can tell apart."""
    from rag_assets.evaluation.confidence import HEADLINE

    intervals = confidence.get("intervals") or {}
    shown = [m for m in HEADLINE if any(m in intervals.get(mode, {}) for mode in names)]
    if not shown:
        return
    print(f"{confidence.get('level', 0.95):.0%} intervals (bootstrap over the {questions} questions):")
    for metric in shown:
        cells = [f"{s['low']:.2f}–{s['high']:.2f}" if s else "-"
                 for s in (intervals.get(mode, {}).get(metric) for mode in names)]
        print(f"{metric:34}" + "".join(f"{c:>10}" for c in cells))
    minus = confidence.get("hybrid_minus") or {}
    for mode, by_metric in sorted(minus.items(), key=lambda item: names.index(item[0]) if item[0] in names else 99):
        parts = [f"{metric} {d['value']:+.3f} ({d['low']:+.3f} to {d['high']:+.3f}: {d['verdict']})"
                 for metric in shown if (d := by_metric.get(metric))]
        if parts:
            print(f"hybrid − {mode}: " + "; ".join(parts))
    since = confidence.get("since_last") or {}
    if since.get("by_mode"):
        from rag_assets.evaluation.confidence import run_label

        _print_moves(f"since the evaluation of {run_label(since.get('created_at'))} ({since.get('questions')} "
                     "questions in both)", since["by_mode"], names)


def _print_moves(title: str, by_mode: dict, names: list[str]) -> None:
    """How the headline metrics moved against another run, one line per mode (Change.as_dict values)."""
    from rag_assets.evaluation.confidence import HEADLINE

    print(f"{title}:" if by_mode else f"{title}: nothing to compare")
    for mode in [m for m in names if m in by_mode]:
        moves = by_mode[mode]
        parts = [f"{metric} {c['before']:.3f} → {c['now']:.3f}, {c['change']:+.3f} ({c['low']:+.3f} to "
                 f"{c['high']:+.3f}: {c['verdict']})" for metric in HEADLINE if (c := moves.get(metric))]
        print(f"  {mode}: " + "; ".join(parts))


def _load_against(path: str):
    """An earlier run's per-question rows for --against, checked whole before the evaluation runs:
    UsageError naming the file (and the column) when it is not a saved evaluation run."""
    import numpy as np
    import pandas as pd

    from rag_assets.evaluation.confidence import QUESTION_KEY
    from rag_assets.evaluation.metrics import KS
    from rag_assets.evaluation.runner import interval_metrics

    def refuse(why: str) -> UsageError:
        return UsageError(f"--against {path}: not a saved evaluation run (an eval-*.parquet under "
                          f"RAG_EVAL_RESULTS_DIR): {why}")

    try:
        rows = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise refuse(f"cannot be read as parquet ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None
    missing = [c for c in QUESTION_KEY if c not in rows]
    if missing:
        raise refuse(f"no {', '.join(missing)} column")
    for key in QUESTION_KEY:  # compared as text with this run's (a crafted file may hold numbers)
        rows[key] = rows[key].astype(str)
    for metric in (m for m in interval_metrics(KS) if m in rows):
        values = pd.to_numeric(rows[metric], errors="coerce")
        if values.isna().sum() > rows[metric].isna().sum():
            raise refuse(f"column {metric} holds values that are not numbers")
        if np.isinf(values.to_numpy(dtype=float)).any():
            raise refuse(f"column {metric} holds infinite values")
        rows[metric] = values.astype(float)
    return rows


def _compare_against(path: str, before, now, modes: list[str]) -> dict:
    """This run's rows (a DataFrame, or None) against --against's, paired over the questions both asked."""
    from rag_assets.evaluation.confidence import changes_as_dict, changes_between
    from rag_assets.evaluation.metrics import KS
    from rag_assets.evaluation.runner import interval_metrics

    shared, changes = changes_between(before, now, modes, interval_metrics(KS)) if now is not None else (0, {})
    return {"path": str(path), "questions": shared, "by_mode": changes_as_dict(changes)}


def _evaluate_test_set(args) -> int:
    """A JSON test set (the ingestion contract's shape): module hit@k and keyword coverage per mode,
    scored here over the index (such a set labels no sections, so the evaluation asset's metrics
    do not apply). Exit 1 when an entry of the file was malformed or its question could not be
    retrieved (no words, too long: named on stderr); the others are scored."""
    from rag_assets.evaluation.test_set import load_test_set, score_test_set
    from rag_assets.pipeline import RAGPipeline

    try:
        loaded = load_test_set(args.test_set)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return EXIT_USAGE
    k = args.top_k or 5
    if not valid_count(k, "--top-k"):
        return EXIT_USAGE
    pipeline = RAGPipeline.from_settings(args.corpus.settings())
    report = score_test_set(loaded.questions, pipeline.search, RetrievalMode.names(), k)
    if args.json:
        print(json.dumps({**report, "errors": loaded.errors, "test_set": str(args.test_set)}, indent=2))
    else:
        print(f"{report['questions']} questions from {args.test_set}, top_k={k} "
              f"({report['skipped']} skipped: answer-only or unlabelled"
              + (f"; {len(report['unscored'])} not scored, named below" if report["unscored"] else "") + ")")
        names = sorted({n for m in report["modes"].values() for n in m if not n.endswith(".questions")})
        print(f"{'metric':34}" + "".join(f"{m:>10}" for m in report["modes"]))
        for name in names:
            values = [report["modes"][m].get(name) for m in report["modes"]]
            count = max(report["modes"][m].get(f"{name}.questions", 0) for m in report["modes"])
            print(f"{name + f' ({count} q)':34}" + "".join(f"{v:>10.3f}" if v is not None else f"{'-':>10}" for v in values))
    for error in loaded.errors:
        print(f"rag: {error}", file=sys.stderr)
    name = Path(args.test_set).name
    for unscored in report["unscored"]:
        print(f"rag: {name}: question {unscored['id']!r} not scored: {unscored['error']}", file=sys.stderr)
    return EXIT_PARTIAL if loaded.errors or report["unscored"] else EXIT_OK
