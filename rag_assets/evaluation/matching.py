"""The matching rules between retrieved chunks and labelled expected sources.

A retrieved chunk satisfies an expected entry when every key the entry gives holds:

- ``doc_path``: equals the chunk's document path (``/`` separators, relative to the docs folder);
- ``section``: after :func:`normalize_heading` on both sides, equals the chunk's own section heading, or any
  entry of its heading breadcrumb, or any heading line (``#`` ...) inside the chunk text;
- ``text``: the normalised snippet is a substring of the normalised chunk text, or of the result's
  ``context`` (the chunk with its neighbours: the text an answer is given) when it carries one.
  ``doc_path`` and ``section`` are always matched on the chunk itself.

:func:`normalize` strips the markdown emphasis/code markers ``*``, ``_`` and `````, collapses runs
of whitespace to one space, trims, and casefolds; :func:`normalize_heading` first drops a trailing
heading attribute (``{ #id }``, ``{: #id .class }``: rag_assets.vocabulary.markup).

Metrics are computed over distinct *units*, not chunks (several chunks of one section must not be
counted as several hits):

- section level: unit = (doc_path, normalised section of the chunk);
- document level: unit = doc_path. Entries are relaxed to their ``doc_path`` alone (deduplicated)
  when they have one; an entry without ``doc_path`` keeps its section/text keys.

A unit takes the rank of its first chunk in the result list (input order: ties in score are never
re-sorted). A unit satisfies an entry when ANY of its retrieved chunks does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence

from rag_assets.evaluation.evalset import EvalQuestion, ExpectedSource, normalize_doc_path
from rag_assets.vocabulary.markup import strip_heading_attributes

SECTION = "section"
DOCUMENT = "document"
LEVELS = (SECTION, DOCUMENT)
BREADCRUMB_SEPARATOR = " > "

_MARKERS = re.compile(r"[*_`]")
_SPACE = re.compile(r"\s+")
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}(?:\s+|$)(.*?)(?:\s+#+)?\s*$")


class ChunkLike(Protocol):
    doc_path: str
    section: str
    heading_breadcrumb: Any  # " > " joined string, or a list of headings
    text: str
    # optional: ``context`` (str), the text an answer is given when results carry one


def matched_text(chunk: ChunkLike) -> str:
    """What a ``text`` snippet is looked for in: the result's context when it has one, else its text."""
    return getattr(chunk, "context", None) or chunk.text or ""


def normalize(text: str | None) -> str:
    """Strip ``*``, ``_``, backticks; collapse whitespace; trim; casefold."""
    if not text:
        return ""
    return _SPACE.sub(" ", _MARKERS.sub("", text)).strip().casefold()


def normalize_heading(text: str | None) -> str:
    """:func:`normalize` of a heading without its trailing attribute block."""
    return normalize(strip_heading_attributes(text)) if text else ""


def breadcrumb_entries(breadcrumb: Any) -> list[str]:
    """Breadcrumb as a list: accepts a list of headings or a ``" > "`` joined string."""
    if not breadcrumb:
        return []
    if isinstance(breadcrumb, str):
        return [part for part in breadcrumb.split(BREADCRUMB_SEPARATOR) if part.strip()]
    return [str(part) for part in breadcrumb if str(part).strip()]


def headings_in_text(text: str | None) -> list[str]:
    """Heading text of every line starting with ``#`` (1-6 of them, then space or end of line)."""
    headings = []
    for line in (text or "").splitlines():
        m = _HEADING_LINE.match(line)
        if m and m.group(1).strip():
            headings.append(m.group(1).strip())
    return headings


def chunk_headings(chunk: ChunkLike) -> set[str]:
    """Normalised headings a ``section`` label may match for this chunk."""
    names = [chunk.section or "", *breadcrumb_entries(chunk.heading_breadcrumb), *headings_in_text(chunk.text)]
    return {n for n in map(normalize_heading, names) if n}


def entry_matches(entry: ExpectedSource, chunk: ChunkLike, *, _headings: set[str] | None = None) -> bool:
    """True when every key the entry gives holds for the chunk."""
    if entry.doc_path is not None and normalize_doc_path(entry.doc_path) != normalize_doc_path(chunk.doc_path or ""):
        return False
    if entry.section is not None:
        wanted = normalize_heading(entry.section)
        headings = _headings if _headings is not None else chunk_headings(chunk)
        if wanted not in headings:
            return False
    if entry.text is not None and normalize(entry.text) not in normalize(matched_text(chunk)):
        return False
    return True


def section_id(doc_path: str, section: str | None) -> str:
    """Stable id of a section unit: ``doc_path#normalised section``."""
    return f"{normalize_doc_path(doc_path)}#{normalize_heading(section)}"


def entry_id(entry: ExpectedSource) -> str | None:
    """Section-unit id of an entry that names both doc_path and section, else ``None``."""
    if entry.doc_path is None or entry.section is None:
        return None
    return section_id(entry.doc_path, entry.section)


def expected_for_level(expected: Sequence[ExpectedSource], level: str = SECTION) -> list[ExpectedSource]:
    """The entries scored at a level, deduplicated (normalised), order kept.

    Section level: the entries as given. Document level: ``doc_path`` only for entries that have
    one; entries without a doc_path keep their keys.
    """
    _check_level(level)
    out: list[ExpectedSource] = []
    seen: set[tuple] = set()
    for e in expected:
        if level == DOCUMENT and e.doc_path is not None:
            e = ExpectedSource(doc_path=normalize_doc_path(e.doc_path))
        key = (
            normalize_doc_path(e.doc_path) if e.doc_path is not None else None,
            normalize_heading(e.section) if e.section is not None else None,
            normalize(e.text) if e.text is not None else None,
        )
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


@dataclass
class RankedUnit:
    """One distinct unit in a ranked retrieval result."""

    level: str
    doc_path: str
    section: str | None  # the first chunk's own section heading (None at document level)
    rank: int  # 1-based rank among distinct units
    first_chunk_rank: int  # 1-based rank of its first chunk in the result list
    chunk_ids: list[str] = field(default_factory=list)
    satisfies: set[int] = field(default_factory=set)  # indices into expected_for_level(...)

    @property
    def id(self) -> str:
        return section_id(self.doc_path, self.section) if self.level == SECTION else normalize_doc_path(self.doc_path)

    @property
    def relevant(self) -> bool:
        return bool(self.satisfies)


def unit_key(chunk: ChunkLike, level: str) -> tuple[str, ...]:
    doc = normalize_doc_path(chunk.doc_path or "")
    return (doc, normalize_heading(chunk.section)) if level == SECTION else (doc,)


def rank_units(
    results: Sequence[ChunkLike],
    expected: Sequence[ExpectedSource],
    level: str = SECTION,
    top_k: int | None = None,
) -> list[RankedUnit]:
    """Ranked chunk list (first ``top_k`` chunks) → ranked list of distinct units, each with the
    set of indices of :func:`expected_for_level` entries it satisfies."""
    _check_level(level)
    entries = expected_for_level(expected, level)
    units: dict[tuple[str, ...], RankedUnit] = {}
    for position, chunk in enumerate(results[:top_k] if top_k is not None else results, start=1):
        key = unit_key(chunk, level)
        unit = units.get(key)
        if unit is None:
            unit = units[key] = RankedUnit(
                level=level,
                doc_path=normalize_doc_path(chunk.doc_path or ""),
                section=(chunk.section or "") if level == SECTION else None,
                rank=len(units) + 1,
                first_chunk_rank=position,
            )
        unit.chunk_ids.append(str(getattr(chunk, "chunk_id", position)))
        headings = chunk_headings(chunk)
        for i, entry in enumerate(entries):
            if i not in unit.satisfies and entry_matches(entry, chunk, _headings=headings):
                unit.satisfies.add(i)
    return list(units.values())


@dataclass(frozen=True)
class UnresolvedLabel:
    question_id: str
    entry: ExpectedSource
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"question_id": self.question_id, **self.entry.as_dict(), "reason": self.reason}


def unresolved_labels(
    questions: Iterable[EvalQuestion],
    index_units: Iterable[Any],
    doc_paths: Iterable[str] | None = None,
) -> list[UnresolvedLabel]:
    """Expected entries that point at nothing in the index (label drift).

    ``index_units``: what the index holds, each either a tuple ``(doc_path, heading, ...)`` whose
    later items are section headings or ``" > "`` breadcrumbs, or an object with ``doc_path``,
    ``section`` and ``heading_breadcrumb`` (e.g. a SearchResult). ``doc_paths``: documents in the
    index (defaults to those of the units). Only ``doc_path`` and ``section`` are checked; a
    ``text`` snippet cannot be checked from units and is never reported here.
    """
    headings_by_doc: dict[str, set[str]] = {}
    for unit in index_units:
        if isinstance(unit, (tuple, list)):
            doc, names = unit[0], unit[1:]
        else:
            doc, names = unit.doc_path, (getattr(unit, "section", ""), getattr(unit, "heading_breadcrumb", ""))
        bucket = headings_by_doc.setdefault(normalize_doc_path(doc or ""), set())
        for name in names:
            for part in [name, *breadcrumb_entries(name)] if name else []:
                if normalize_heading(part):
                    bucket.add(normalize_heading(part))
    docs = {normalize_doc_path(d) for d in doc_paths} if doc_paths is not None else set()
    docs |= set(headings_by_doc)
    all_headings = set().union(*headings_by_doc.values()) if headings_by_doc else set()

    out: list[UnresolvedLabel] = []
    for q in questions:
        for entry in q.expected:
            doc = normalize_doc_path(entry.doc_path) if entry.doc_path is not None else None
            if doc is not None and doc not in docs:
                out.append(UnresolvedLabel(q.id, entry, f"document not in index: {doc}"))
                continue
            if entry.section is not None:
                pool = headings_by_doc.get(doc, set()) if doc is not None else all_headings
                if normalize_heading(entry.section) not in pool:
                    where = doc if doc is not None else "any document"
                    out.append(UnresolvedLabel(q.id, entry, f"section not found in {where}: {entry.section!r}"))
    return out


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
