"""Run an eval set through a search function in several modes and report the scores.

``search(question, mode, top_k) -> list[SearchResult]`` is any callable; the results are taken
in the order returned (rank order as given, ties never re-sorted) and cut at ``top_k``. Results that
carry a ``context`` (RAG_CONTEXT_TOKENS) are matched on it for ``text`` labels (matching.py), and its
size is reported: ``context_tokens`` per question (the mean over its results) and
``context_tokens.mean`` per mode (the mean over every result returned). The headline means carry a
95 % bootstrap interval, hybrid's lead over each single mode a paired one, and ``compare_with`` pairs a
run with the one saved before it (confidence.py).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from rag_assets.evaluation.confidence import (
    HEADLINE, LEVEL, REFERENCE_MODE, Change, Interval, changes_as_dict, changes_between, mean_intervals,
    paired_differences, run_label, score_columns_by_mode)
from rag_assets.evaluation.evalset import EvalQuestion
from rag_assets.evaluation.matching import (
    DOCUMENT,
    LEVELS,
    SECTION,
    ChunkLike,
    entry_id,
    expected_for_level,
    matched_text,
    rank_units,
    unresolved_labels,
)
from rag_assets.vocabulary.modes import RetrievalMode
from rag_assets.evaluation.metrics import KS, RANK_CUTOFF, mean_metrics, metric_names, question_metrics

SearchFn = Callable[[str, str, int], Sequence[ChunkLike]]
AnswerFn = Callable[[str, Sequence[ChunkLike]], str]
DEFAULT_MODES = RetrievalMode.names()
TOP_UNITS_SHOWN = 5
DISTINCT_PAGES = f"distinct_pages@{RANK_CUTOFF}"
CONTEXT_TOKENS = "context_tokens"  # a result's context size (0 or absent: no context)
CONTEXT_MEAN = f"{CONTEXT_TOKENS}.mean"
LIST_COLUMNS = ("expected_units", "retrieved_units", "retrieved_docs", "missed")


def interval_metrics(ks: Sequence[int]) -> list[str]:
    """The metrics given an interval: hit@1, recall@k, MRR and nDCG at both levels."""
    names = ["hit@1", *(f"recall@{k}" for k in ks), f"mrr@{RANK_CUTOFF}", f"ndcg@{RANK_CUTOFF}"]
    return [f"{level}.{name}" for level in LEVELS for name in names]


@dataclass
class EvaluationReport:
    modes: tuple[str, ...]
    top_k: int
    ks: tuple[int, ...]
    metrics: dict[str, dict[str, float]]  # mode → flat metric name (e.g. "section.recall@5") → mean
    ragas: dict[str, dict[str, float]]  # mode → ragas metric → mean
    skipped: dict[str, str]  # metric → reason it was not computed
    rows: pd.DataFrame  # one row per (question, mode)
    questions: list[EvalQuestion] = field(default_factory=list, repr=False)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    ragas_seconds: dict[str, float] = field(default_factory=dict)
    # what was scored: {"kind": "labelled", "paths": [...]} or a synthetic set's description
    # ({"kind": "synthetic", "version", "generator", ...}: rag_assets.evaluation.synthetic)
    eval_set: dict[str, Any] = field(default_factory=dict)
    # mode → metric → its mean with a 95 % interval (interval_metrics)
    intervals: dict[str, dict[str, Interval]] = field(default_factory=dict)
    # mode → metric → hybrid minus that mode, paired by question (absent without hybrid)
    differences: dict[str, dict[str, Interval]] = field(default_factory=dict)
    # against the run before (compare_with): {"questions": shared, "created_at": its time}, and
    # mode → metric → how it moved over the questions both runs asked
    previous: dict[str, Any] = field(default_factory=dict)
    changes: dict[str, dict[str, Change]] = field(default_factory=dict)

    # -- views ---------------------------------------------------------------------------------
    def metric_names(self, level: str | None = None) -> list[str]:
        levels = LEVELS if level is None else (level,)
        return [f"{lv}.{name}" for lv in levels for name in metric_names(self.ks)]

    def worst(self, mode: str, n: int = 5, level: str = SECTION) -> pd.DataFrame:
        """The n questions with the lowest recall@(largest k), then lowest reciprocal rank
        (ties by question id), with what was expected, what came back and what was missed."""
        recall = f"{level}.recall@{max(self.ks)}"
        rr = f"{level}.mrr@{RANK_CUTOFF}"
        df = self.rows[self.rows["mode"] == mode]
        if df.empty and mode not in self.modes:
            raise KeyError(f"unknown mode {mode!r}; evaluated: {list(self.modes)}")
        df = df.sort_values([recall, rr, "question_id"], kind="mergesort")
        cols = ["question_id", "question", "expected_units", "retrieved_units", "missed", recall, rr]
        return df[cols].head(n).reset_index(drop=True)

    def markdown_table(self, mode: str | None = None, level: str | None = None) -> str:
        """Metric | value (one mode) or metric | mode1 | mode2 ... (all modes)."""
        modes = list(self.modes) if mode is None else [mode]
        for m in modes:
            if m not in self.metrics:
                raise KeyError(f"unknown mode {mode!r}; evaluated: {list(self.modes)}")
        names = self.metric_names(level) + sorted({f"ragas.{k}" for m in modes for k in self.ragas.get(m, {})})
        if any(not math.isnan(self.metrics[m].get(CONTEXT_MEAN, math.nan)) for m in modes):
            names.append(CONTEXT_MEAN)  # results carried a context: its mean size per result
        spans = self.intervals.get(modes[0], {}) if len(modes) == 1 else {}  # one mode: its intervals beside
        columns = (modes if len(modes) > 1 else ["value"]) + ([f"{LEVEL:.0%} interval"] if spans else [])
        lines = ["| metric | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]
        for name in names:
            cells = [_fmt(self._value(m, name)) for m in modes]
            if spans:
                cells.append(f"{span.low:.3f}–{span.high:.3f}" if (span := spans.get(name)) else "")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def differences_table(self) -> str:
        """Hybrid minus each single mode per metric, with the paired interval and what it says
        (``ahead`` / ``behind`` when the interval excludes 0, else ``unclear``); "" without hybrid."""
        others = [m for m in self.modes if m in self.differences]
        if not others:
            return ""
        lines = ["| metric | " + " | ".join(f"{REFERENCE_MODE} − {m}" for m in others) + " |",
                 "|" + "---|" * (len(others) + 1)]
        for name in self.differences[others[0]]:
            cells = []
            for m in others:
                d = self.differences[m].get(name)
                cells.append(f"{d.value:+.3f} ({d.low:+.3f} to {d.high:+.3f}) {d.verdict}" if d else "")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def hybrid_behind(self, metrics: Sequence[str] = HEADLINE) -> list[tuple[str, str, Interval]]:
        """(mode, metric, hybrid − mode) wherever hybrid is clearly behind one of its own parts: the
        paired interval lies below 0."""
        return [(mode, name, d) for mode, by_metric in self.differences.items() for name in metrics
                if (d := by_metric.get(name)) is not None and d.verdict == "behind"]

    def compare_with(self, previous_rows: pd.DataFrame, created_at: str | None = None) -> None:
        """Pair this run's per-question rows with an earlier run's (its saved parquet) and keep how each
        interval metric moved, over the questions both asked; nothing when they share none."""
        shared, changes = changes_between(previous_rows, self.rows, self.modes, interval_metrics(self.ks))
        if changes:
            self.previous, self.changes = {"questions": shared, "created_at": created_at}, changes

    def changes_table(self) -> str:
        """The headline metrics' move since the compared run, per mode; "" when there was none."""
        if not self.changes:
            return ""
        lines = [f"Since the evaluation of {run_label(self.previous.get('created_at'))}, over the "
                 f"{self.previous['questions']} questions both asked:", "",
                 f"| mode | metric | before | now | change ({LEVEL:.0%} interval) | |", "|---|---|---|---|---|---|"]
        for mode in self.modes:
            for name in HEADLINE:
                c = self.changes.get(mode, {}).get(name)
                if c:
                    lines.append(f"| {mode} | {name} | {c.before:.3f} | {c.now:.3f} | {c.change.value:+.3f} "
                                 f"({c.change.low:+.3f} to {c.change.high:+.3f}) | {c.verdict} |")
        return "\n".join(lines)

    def _value(self, mode: str, name: str) -> float:
        if name.startswith("ragas."):
            return self.ragas.get(mode, {}).get(name[len("ragas."):], math.nan)
        return self.metrics.get(mode, {}).get(name, math.nan)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: ``modes`` (mode → metric → value, ragas ones prefixed ``ragas.``),
        ``skipped``, ``rows``, ``eval_set`` (what was scored); NaN becomes ``null``."""
        modes = {
            m: {**self.metrics.get(m, {}), **{f"ragas.{k}": v for k, v in self.ragas.get(m, {}).items()}}
            for m in self.modes
        }
        return _json_safe(
            {
                "created_at": self.created_at.isoformat(),
                "top_k": self.top_k,
                "questions": len(self.questions),
                "modes": modes,
                "skipped": dict(self.skipped),
                "eval_set": dict(self.eval_set),
                # how sure the means are: 95 % bootstrap intervals; hybrid minus each mode, paired
                "confidence": {
                    "level": LEVEL,
                    "intervals": {m: {k: v.as_dict() for k, v in by.items()} for m, by in self.intervals.items()},
                    f"{REFERENCE_MODE}_minus": {
                        m: {k: {**v.as_dict(), "verdict": v.verdict} for k, v in by.items()}
                        for m, by in self.differences.items()},
                    "since_last": {**self.previous, "by_mode": changes_as_dict(self.changes)} if self.changes else {},
                },
                "rows": self.rows.to_dict(orient="records"),
            }
        )

    def save(self, directory: str | Path, prefix: str = "eval") -> dict[str, Path]:
        """Write ``<prefix>-<UTC timestamp>.parquet`` / ``.csv`` / ``.json`` and ``latest.parquet`` /
        ``latest.json`` under ``directory``; returns the paths written."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        stamp = self.created_at.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        stem, n = f"{prefix}-{stamp}", 1
        while (directory / f"{stem}.parquet").exists():
            n += 1
            stem = f"{prefix}-{stamp}-{n}"
        paths = {
            "parquet": directory / f"{stem}.parquet",
            "csv": directory / f"{stem}.csv",
            "json": directory / f"{stem}.json",
            "latest_parquet": directory / "latest.parquet",
            "latest_json": directory / "latest.json",
        }
        rows = self.rows.copy()
        for col in LIST_COLUMNS:
            if col in rows:
                rows[col] = rows[col].map(list)
        rows.to_parquet(paths["parquet"], index=False)
        rows.to_parquet(paths["latest_parquet"], index=False)
        csv_rows = rows.copy()
        for col in LIST_COLUMNS:
            if col in csv_rows:
                csv_rows[col] = csv_rows[col].map(" | ".join)
        csv_rows.to_csv(paths["csv"], index=False)
        summary = self.to_json()
        summary.pop("rows")
        text = json.dumps(summary, indent=2, sort_keys=True)
        paths["json"].write_text(text + "\n", encoding="utf-8")
        paths["latest_json"].write_text(text + "\n", encoding="utf-8")
        return paths

    @staticmethod
    def latest_saved(directory: str | Path) -> tuple[pd.DataFrame, str | None] | None:
        """The per-question rows and time of the last run saved under ``directory`` (what ``save``
        wrote as ``latest.*``), or None when there is none or it cannot be read."""
        directory = Path(directory)
        try:
            rows = pd.read_parquet(directory / "latest.parquet")
        except (OSError, ValueError):  # none yet, or a broken file: nothing to compare with
            return None
        try:
            created_at = json.loads((directory / "latest.json").read_text(encoding="utf-8")).get("created_at")
        except (OSError, ValueError, AttributeError):
            created_at = None
        return rows, created_at

    def unresolved_labels(self, index_units: Iterable[Any], doc_paths: Iterable[str] | None = None) -> list[dict]:
        """Expected entries of the evaluated questions that point at nothing in the index
        (see :func:`rag_assets.evaluation.matching.unresolved_labels`)."""
        return [u.as_dict() for u in unresolved_labels(self.questions, index_units, doc_paths)]


def evaluate_retrieval(
    questions: Iterable[EvalQuestion],
    search: SearchFn,
    modes: Sequence[str] = DEFAULT_MODES,
    top_k: int = 10,
    *,
    ks: Sequence[int] = KS,
    ragas: bool = True,
    llm_config: Any = None,
    answer_fn: AnswerFn | None = None,
) -> EvaluationReport:
    """Search every question in every mode, score section- and document-level metrics, and
    (``ragas=True``) the ragas metrics. ``llm_config``: ``None`` (no LLM) or a
    :class:`ragas_scores.LLMConfig` (the caller's settings make it: ``LLMConfig.from_settings``). ``answer_fn(question, results)``
    produces answers for the answer-level LLM metrics; without it they are skipped with a reason.
    A search that raises counts as zero results and its error is kept in the row."""
    if top_k < 1:
        raise ValueError("top_k must be >= 1")
    questions = list(questions)
    modes = tuple(modes)
    ks = tuple(k for k in ks if k <= top_k) or (top_k,)
    rows: list[dict[str, Any]] = []
    samples_by_mode: dict[str, list] = {m: [] for m in modes}
    context_sizes: dict[str, list[int]] = {m: [] for m in modes}
    if ragas:
        from rag_assets.evaluation import ragas_scores

    for mode in modes:
        for q in questions:
            row, results, sections = _question_row(q, mode, search, top_k, ks)
            context_sizes[mode].extend(_context_sizes(results))
            rows.append(row)
            if ragas:
                response = answer_fn(q.question, results) if answer_fn is not None else None
                samples_by_mode[mode].append(
                    ragas_scores.build_sample(q, sections, [matched_text(r) for r in results], response)
                )

    if ragas:
        ragas_means, skipped, ragas_seconds = _ragas_scores(rows, samples_by_mode, modes, llm_config)
    else:
        ragas_means, skipped, ragas_seconds = {m: {} for m in modes}, {"ragas": "disabled (ragas=False)"}, {}
    frame = pd.DataFrame(rows)
    metrics = {mode: _mode_means([r for r in rows if r["mode"] == mode], context_sizes[mode], ks) for mode in modes}
    intervals, differences = _confidence(frame, modes, ks)
    return EvaluationReport(
        modes=modes,
        top_k=top_k,
        ks=ks,
        metrics=metrics,
        ragas=ragas_means,
        skipped=skipped,
        rows=frame,
        questions=questions,
        ragas_seconds=ragas_seconds,
        intervals=intervals,
        differences=differences,
    )


def _question_row(q: EvalQuestion, mode: str, search: SearchFn, top_k: int, ks: Sequence[int]):
    """One question searched in one mode and scored: (its row, the results, the ranked section units)."""
    error = None
    started = time.perf_counter()
    try:
        filters = q.metadata.get("filters")  # a line may carry its own (retrieval.filters)
        found = search(q.question, mode, top_k, filters) if filters else search(q.question, mode, top_k)
        results = list(found)[:top_k]
    except Exception as exc:  # one failing question must not stop the run
        results, error = [], f"{type(exc).__name__}: {exc}"
    latency_ms = (time.perf_counter() - started) * 1000.0
    row: dict[str, Any] = {
        "question_id": q.id,
        "question": q.question,
        "mode": mode,
        "n_results": len(results),
        # diversity next to recall: how many pages the first 10 results come from
        DISTINCT_PAGES: len({r.doc_path for r in results[:RANK_CUTOFF]}),
        CONTEXT_TOKENS: _mean(_context_sizes(results)),
        "latency_ms": latency_ms,
        "error": error,
    }
    units = {}
    for level in LEVELS:
        units[level] = rank_units(results, q.expected, level, top_k)
        n_expected = len(expected_for_level(q.expected, level))
        scores = question_metrics([u.satisfies for u in units[level]], n_expected, ks)
        row.update({f"{level}.{k}": v for k, v in scores.items()})
    entries = expected_for_level(q.expected, SECTION)
    found = set().union(*(u.satisfies for u in units[SECTION])) if units[SECTION] else set()
    row["expected_units"] = [entry_id(e) or e.describe() for e in entries]
    row["retrieved_units"] = [u.id for u in units[SECTION][:TOP_UNITS_SHOWN]]
    row["retrieved_docs"] = [u.id for u in units[DOCUMENT][:TOP_UNITS_SHOWN]]
    row["missed"] = [entry_id(e) or e.describe() for i, e in enumerate(entries) if i not in found]
    return row, results, units[SECTION]


def _ragas_scores(rows: list[dict[str, Any]], samples_by_mode: dict[str, list], modes: Sequence[str], llm_config):
    """The ragas metrics of each mode's samples, written into its rows: (means by mode, skipped
    metrics with their reasons, seconds by mode)."""
    from rag_assets.evaluation import ragas_scores

    ragas_means: dict[str, dict[str, float]] = {m: {} for m in modes}
    skipped: dict[str, str] = {}
    ragas_seconds: dict[str, float] = {}
    per_mode_rows = {m: [r for r in rows if r["mode"] == m] for m in modes}
    for mode in modes:
        try:
            result = ragas_scores.score_samples(samples_by_mode[mode], llm_config=llm_config)
        except ImportError as exc:
            for name in ragas_scores.OFFLINE_METRICS + ragas_scores.LLM_METRICS:
                skipped.setdefault(name, f"ragas unavailable: {exc}")
            continue
        ragas_means[mode] = result.scores
        ragas_seconds[mode] = result.elapsed_s
        for name, reason in result.skipped.items():
            skipped.setdefault(name, reason)
        for row, extra in zip(per_mode_rows[mode], result.per_sample):
            row.update({f"ragas.{k}": v for k, v in extra.items()})
    return ragas_means, skipped, ragas_seconds


def _mode_means(mode_rows: list[dict[str, Any]], sized: list[int], ks: Sequence[int]) -> dict[str, float]:
    """One mode's means over its questions: every score column, latency, pages, context size, errors."""
    score_columns = [f"{lv}.{n}" for lv in LEVELS for n in metric_names(ks)]
    means = mean_metrics({c: r[c] for c in score_columns} for r in mode_rows)
    latencies = [r["latency_ms"] for r in mode_rows]
    means["latency_ms.mean"] = _mean(latencies)
    means["latency_ms.p50"] = _percentile(latencies, 50)
    means["latency_ms.p95"] = _percentile(latencies, 95)
    means[DISTINCT_PAGES] = statistics.fmean(r[DISTINCT_PAGES] for r in mode_rows) if mode_rows else math.nan
    means[CONTEXT_MEAN] = _mean(sized)
    means["questions"] = float(len(mode_rows))
    means["search_errors"] = float(sum(1 for r in mode_rows if r["error"]))
    return means


def _confidence(frame: pd.DataFrame, modes: Sequence[str], ks: Sequence[int]):
    """Each mode's intervals, and hybrid minus each other mode (when hybrid was evaluated)."""
    columns = score_columns_by_mode(frame, modes, interval_metrics(ks))
    intervals = {m: mean_intervals(columns[m]) for m in modes}
    differences = {}
    if REFERENCE_MODE in modes:
        differences = {m: paired_differences(columns[REFERENCE_MODE], columns[m])
                       for m in modes if m != REFERENCE_MODE}
    return intervals, differences


def _context_sizes(results: Sequence[ChunkLike]) -> list[int]:
    """The context size in tokens of each result that carries a context."""
    return [int(getattr(r, "context_tokens", 0) or 0) for r in results if getattr(r, "context", None)]


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def _percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _fmt(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays / scalars
        return _json_safe(value.tolist())
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)
