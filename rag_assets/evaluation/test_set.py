"""Test sets in the ingestion contract's JSON shape, scored with the metrics that shape allows.

    {"version": "1.0", "queries": [
      {"id": "eval-001", "question": "...", "mode": "normal",
       "expected_modules": ["module-1"], "expected_keywords": ["embodiment", "real-time"]},
      {"id": "eval-006", "question": "Explain this", "mode": "selected_text_only",
       "selected_text": "...", "expected_keywords": [...]},
      {"id": "eval-008", "question": "...", "mode": "selected_text_only", "selected_text": "...",
       "expected_refuse": true}]}

Such a set labels no sections, so the section metrics of our JSONL eval sets do not apply. Per mode:

- ``module.hit@k``: a result among the first k comes from one of ``expected_modules`` (the module
  is the document's first folder, or its ``module`` field);
- ``keywords.coverage@k``: the share of ``expected_keywords`` (case-insensitive) found in the first k
  results' texts.

A ``selected_text_only`` question is retrieved with its selection prepended (what the reader
selected is the context the question is about); a question marked ``expected_refuse`` tests the
answer, not retrieval, and is counted as skipped. A malformed entry is an error naming the file and
the entry; the others are scored. So is a question retrieval refuses (no words, as `"???"`; longer than
RAG_MAX_QUERY_CHARS with its selected text): it is left out of every mode's scores and named, with
the reason, in the report's `unscored`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rag_assets.errors import InvalidQueryError

K = 5


@dataclass(frozen=True)
class TestSetQuestion:
    __test__ = False  # not a pytest test class
    id: str
    question: str
    expected_modules: tuple[str, ...] = ()
    expected_keywords: tuple[str, ...] = ()
    selected_text: str = ""
    expected_refuse: bool = False

    @property
    def retrieval_query(self) -> str:
        return f"{self.selected_text}\n\n{self.question}" if self.selected_text else self.question


@dataclass
class TestSetLoad:
    __test__ = False
    questions: list[TestSetQuestion] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def is_test_set_json(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def load_test_set(path: str | Path) -> TestSetLoad:
    """The questions of a JSON test set; ValueError (naming the file) when it is not one at all."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON test set ({exc})") from None
    items = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f'{path}: expected {{"queries": [...]}} or a list of questions')
    out = TestSetLoad()
    seen: set[str] = set()
    for i, item in enumerate(items, 1):
        try:
            question = _question(item, i)
        except ValueError as exc:
            out.errors.append(f"{path.name}: entry {i}: {exc}")
            continue
        if question.id in seen:
            out.errors.append(f"{path.name}: entry {i}: repeated id {question.id!r}")
            continue
        seen.add(question.id)
        out.questions.append(question)
    return out


def _strings(item: dict, key: str) -> tuple[str, ...]:
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{key!r} must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _question(item: Any, index: int) -> TestSetQuestion:
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {type(item).__name__}")
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError('needs a non-empty "question"')
    selected = item.get("selected_text", "")
    if not isinstance(selected, str):
        raise ValueError('"selected_text" must be a string')
    return TestSetQuestion(
        id=str(item.get("id") or f"q{index}"),
        question=question.strip(),
        expected_modules=_strings(item, "expected_modules"),
        expected_keywords=_strings(item, "expected_keywords"),
        selected_text=selected.strip(),
        expected_refuse=_flag(item, "expected_refuse"),
    )


_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0", ""}


def _flag(item: dict, key: str) -> bool:
    """A true/false field: a JSON boolean, or its spelling as text or 0/1 ("false" is false; anything
    else is an error naming the field, not a guess)."""
    value = item.get(key, False)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{key!r} must be true or false, got {value!r}")


def module_of(result) -> str:
    module = (getattr(result, "metadata", {}) or {}).get("module")
    if module:
        return str(module)
    parts = result.doc_path.split("/")
    return parts[0] if len(parts) > 1 else ""


def score_question(question: TestSetQuestion, results: Sequence, k: int = K) -> dict[str, float]:
    top = list(results)[:k]
    row: dict[str, float] = {}
    if question.expected_modules:
        row[f"module.hit@{k}"] = float(any(module_of(r) in question.expected_modules for r in top))
    if question.expected_keywords:
        text = " ".join(r.text for r in top).casefold()
        found = sum(1 for kw in question.expected_keywords if kw.casefold() in text)
        row[f"keywords.coverage@{k}"] = found / len(question.expected_keywords)
    return row


def score_test_set(
    questions: Sequence[TestSetQuestion], search: Callable[[str, str, int], Sequence], modes: Sequence[str], k: int = K
) -> dict[str, Any]:
    """{"modes": {mode: {metric: mean, "questions": n}}, "skipped": n, "unscored": [{"id", "error"}],
    "rows": [...]}. A question retrieval refuses (InvalidQueryError) is unscored in every mode and
    named; the others are scored."""
    scored = [q for q in questions if not q.expected_refuse and (q.expected_modules or q.expected_keywords)]
    report: dict[str, Any] = {"k": k, "questions": len(questions), "skipped": len(questions) - len(scored),
                              "unscored": [], "modes": {}, "rows": []}
    refused: dict[str, str] = {}
    for mode in modes:
        rows = []
        for q in scored:
            if q.id in refused:
                continue
            try:
                results = search(q.retrieval_query, mode, k)
            except InvalidQueryError as exc:
                refused[q.id] = str(exc)
                report["unscored"].append({"id": q.id, "error": str(exc)})
                continue
            row = score_question(q, results, k)
            rows.append((q.id, row))
            report["rows"].append({"id": q.id, "mode": mode, **row})
        rows = [row for qid, row in rows if qid not in refused]  # a question refused in a later mode counts in none
        names = sorted({name for row in rows for name in row})
        report["modes"][mode] = {
            **{name: round(statistics.fmean(r[name] for r in rows if name in r), 4) for name in names},
            **{f"{name}.questions": sum(1 for r in rows if name in r) for name in names},
        }
    report["rows"] = [r for r in report["rows"] if r["id"] not in refused]
    return report
