"""Eval-set loading: JSON Lines, one question per line, validated line by line.

Format (see README "Evaluation"):

    {"id": "q1", "question": "...",
     "expected": [{"doc_path": "a/b.md", "section": "Heading", "text": "verbatim snippet"}],
     "reference_answer": "...", "reference_contexts": ["..."],
     "filters": {"module": "module-2"}}   # optional: retrieve only from these documents

Every key of an ``expected`` entry is optional but each entry has at least one of
``doc_path`` / ``section`` / ``text``. A bad line never stops the good ones: it becomes an
:class:`EvalSetError` carrying the file name, the 1-based line number and the reason.
Blank lines are skipped. A repeated id inside one file is an error on the later line (the first
question wins).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

ENTRY_KEYS = ("doc_path", "section", "text")
REFERENCE_CONTEXT_KEYS = ("reference_contexts", "reference_context")


@dataclass(frozen=True)
class ExpectedSource:
    """One labelled source of a question: a chunk satisfies it when every key given holds."""

    doc_path: str | None = None
    section: str | None = None
    text: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {k: v for k in ENTRY_KEYS if (v := getattr(self, k)) is not None}

    def describe(self) -> str:
        parts = []
        if self.doc_path is not None:
            parts.append(self.doc_path)
        if self.section is not None:
            parts.append(f"#{self.section}")
        if self.text is not None:
            snippet = self.text if len(self.text) <= 40 else self.text[:37] + "..."
            parts.append(f' "{snippet}"')
        return "".join(parts)


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    expected: tuple[ExpectedSource, ...]
    reference_answer: str | None = None
    reference_contexts: tuple[str, ...] = ()
    source: str = ""  # file the question came from
    line: int = 0  # 1-based line number in that file
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class EvalSetError:
    path: str
    line: int
    reason: str
    id: str | None = None

    def __str__(self) -> str:
        return f"{Path(self.path).name}:{self.line}: {self.reason}"


@dataclass
class EvalSetLoad:
    questions: list[EvalQuestion] = field(default_factory=list)
    errors: list[EvalSetError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def duplicates(self) -> list[EvalSetError]:
        return [e for e in self.errors if e.reason.startswith("duplicate id")]

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[EvalQuestion]:
        return iter(self.questions)


class _Invalid(ValueError):
    pass


def normalize_doc_path(path: str) -> str:
    """``\\`` → ``/`` and no leading ``./`` or ``/``: paths are relative to the docs folder."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def _string(value: Any, what: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{what} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise _Invalid(f"{what} must not be empty")
    return value


def _entry(raw: Any, index: int) -> ExpectedSource:
    where = f"expected[{index}]"
    if not isinstance(raw, dict):
        raise _Invalid(f"{where} must be an object, got {type(raw).__name__}")
    values: dict[str, str] = {}
    for key in ENTRY_KEYS:
        if key in raw and raw[key] is not None:
            values[key] = _string(raw[key], f"{where}.{key}")
    if not values:
        raise _Invalid(f"{where} has none of doc_path/section/text")
    if "doc_path" in values:
        values["doc_path"] = normalize_doc_path(values["doc_path"])
    return ExpectedSource(**values)


def parse_question(record: Any, *, source: str = "", line: int = 0) -> EvalQuestion:
    """Validate one decoded JSON value; raises ``ValueError`` with the reason."""
    if not isinstance(record, dict):
        raise _Invalid(f"line must be a JSON object, got {type(record).__name__}")
    for key in ("id", "question", "expected"):
        if key not in record:
            raise _Invalid(f"missing key '{key}'")
    qid = _string(record["id"], "id").strip()
    question = _string(record["question"], "question")
    expected = record["expected"]
    if not isinstance(expected, list):
        raise _Invalid(f"expected must be a list, got {type(expected).__name__}")
    if not expected:
        raise _Invalid("expected must not be empty")
    entries = tuple(_entry(raw, i) for i, raw in enumerate(expected))
    reference_answer = record.get("reference_answer")
    if reference_answer is not None:
        reference_answer = _string(reference_answer, "reference_answer", allow_empty=True) or None
    contexts: list[str] = []
    for key in REFERENCE_CONTEXT_KEYS:
        raw = record.get(key)
        if raw is None:
            continue
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise _Invalid(f"{key} must be a list of strings, got {type(raw).__name__}")
        contexts.extend(_string(c, f"{key}[{i}]") for i, c in enumerate(raw))
    if "filters" in record and not isinstance(record["filters"], dict):
        raise _Invalid(f"filters must be an object of key -> value(s), got {type(record['filters']).__name__}")
    known = {"id", "question", "expected", "reference_answer", *REFERENCE_CONTEXT_KEYS}
    return EvalQuestion(
        id=qid,
        question=question,
        expected=entries,
        reference_answer=reference_answer,
        reference_contexts=tuple(contexts),
        source=source,
        line=line,
        metadata={k: v for k, v in record.items() if k not in known},
    )


def iter_eval_set(path: str | Path) -> Iterator[EvalQuestion | EvalSetError]:
    """Stream a JSONL file: yields a question per good line and an error per bad line."""
    path = Path(path)
    seen: dict[str, int] = {}
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield EvalSetError(str(path), number, f"not UTF-8: {exc.reason} at byte {exc.start}")
                continue
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                yield EvalSetError(str(path), number, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            try:
                question = parse_question(record, source=str(path), line=number)
            except _Invalid as exc:
                qid = record.get("id") if isinstance(record, dict) and isinstance(record.get("id"), str) else None
                yield EvalSetError(str(path), number, str(exc), qid)
                continue
            if question.id in seen:
                yield EvalSetError(
                    str(path), number, f"duplicate id '{question.id}' (first seen on line {seen[question.id]})", question.id
                )
                continue
            seen[question.id] = number
            yield question


def load_eval_set(path: str | Path) -> EvalSetLoad:
    """Load one file; a missing/unreadable file is one error at line 0."""
    load = EvalSetLoad()
    try:
        for item in iter_eval_set(path):
            (load.errors if isinstance(item, EvalSetError) else load.questions).append(item)
    except OSError as exc:
        load.errors.append(EvalSetError(str(path), 0, f"cannot read file: {exc.strerror or exc}"))
    return load


def load_eval_sets(paths: Iterable[str | Path]) -> EvalSetLoad:
    """Load several files. An id used by more than one file is namespaced as ``<file stem>/<id>``
    in every file that uses it; a collision that even that cannot resolve is reported."""
    loads = [(Path(p), load_eval_set(p)) for p in paths]
    files_per_id = Counter(q.id for _, load in loads for q in {q.id: q for q in load.questions}.values())
    result = EvalSetLoad()
    taken: dict[str, tuple[str, int]] = {}
    for path, load in loads:
        result.errors.extend(load.errors)
        for q in load.questions:
            qid = f"{path.stem}/{q.id}" if files_per_id[q.id] > 1 else q.id
            if qid in taken:
                first_path, first_line = taken[qid]
                result.errors.append(
                    EvalSetError(
                        str(path), q.line,
                        f"duplicate id '{qid}' (first seen in {Path(first_path).name} line {first_line})", q.id,
                    )
                )
                continue
            taken[qid] = (str(path), q.line)
            result.questions.append(q if qid == q.id else _with_id(q, qid))
    return result


def _with_id(q: EvalQuestion, qid: str) -> EvalQuestion:
    from dataclasses import replace

    return replace(q, id=qid, metadata={**q.metadata, "original_id": q.id})
