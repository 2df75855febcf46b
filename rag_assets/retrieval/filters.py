"""Metadata filters for retrieval: which documents a query may return chunks from.

    {"module": "module-2"}                      # a scalar key: equal (as text: 3 == "3", True == "true")
    {"chapter": ["ch1", "ch2"]}                 # a list: any of them
    {"tags": ["ros", "nodes"]}                  # tags: the document has any of them (case-insensitive)
    {"path_prefix": "guides/"}                  # doc_path starts with it (any of, for a list)
    {"module": "module-2", "doc_type": "lab"}   # several keys: all of them
    {"language": "zh"}                          # a page's language: zh matches zh, zh-CN, zh-TW; zh-CN only zh-CN

Keys are the document-level fields every chunk carries: `module`, `chapter`, `doc_type`, `tags`,
`source`, `last_update_date`, `title`, any scalar frontmatter key, plus `path_prefix` (and
`doc_path`, exact). A key no indexed document has is an InvalidFilterError that lists the keys
there are. Filters select documents; the retriever then ranks inside that set (a Chroma `where` for
the dense list, a mask over the BM25 scores for the keyword list), so `top_k` results come back
whenever that many chunks match.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

from rag_assets.errors import InvalidFilterError
from rag_assets.index.chroma_store import CHUNK_KEYS

PATH_PREFIX = "path_prefix"
TAGS = "tags"
LANGUAGE = "language"
ALWAYS_KNOWN = frozenset({PATH_PREFIX, TAGS, LANGUAGE, "doc_path", "module", "chapter", "doc_type"})


def _norm(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def split_tags(value: Any) -> list[str]:
    """Stored tags ("a, b, c") as a list."""
    return [t.strip() for t in str(value or "").split(",") if t.strip()]


@dataclass(frozen=True)
class Filters:
    """Parsed filters: (key, accepted values) pairs, all of which a document must satisfy."""

    clauses: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | "Filters" | None) -> "Filters | None":
        """None or {} -> None (no filter). Values: a scalar or a list of scalars."""
        if raw is None or isinstance(raw, Filters):
            return raw or None
        if not isinstance(raw, Mapping):
            raise InvalidFilterError(f"filters must be a mapping of key -> value(s), got {type(raw).__name__}")
        clauses = []
        for key in sorted(raw):
            if not isinstance(key, str) or not key.strip():
                raise InvalidFilterError(f"filter keys are non-empty strings, got {key!r}")
            value = raw[key]
            values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
            if not values or any(v is None or isinstance(v, (dict, list, tuple)) for v in values):
                raise InvalidFilterError(f"filter {key!r}: give a value or a list of values, got {value!r}")
            normalised = tuple(sorted({_norm(v) for v in values}))
            if key in (TAGS, LANGUAGE):
                normalised = tuple(sorted({v.casefold().replace("_", "-") for v in normalised}))
            clauses.append((key.strip(), normalised))
        return cls(tuple(clauses)) if clauses else None

    def __bool__(self) -> bool:
        return bool(self.clauses)

    def as_dict(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.clauses}

    def check_keys(self, known: Iterable[str]) -> None:
        known = set(known) | ALWAYS_KNOWN
        unknown = [key for key, _ in self.clauses if key not in known]
        if unknown:
            raise InvalidFilterError(
                f"unknown filter key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                f"known keys: {', '.join(sorted(known - CHUNK_KEYS))}"
            )

    def matches(self, doc_path: str, fields: Mapping[str, Any]) -> bool:
        for key, values in self.clauses:
            if key == PATH_PREFIX:
                ok = any(doc_path.startswith(v) for v in values)
            elif key == "doc_path":
                ok = doc_path in values
            elif key == TAGS:
                ok = any(t.casefold() in values for t in split_tags(fields.get(TAGS)))
            elif key == LANGUAGE:
                code = _norm(fields.get(LANGUAGE, "")).casefold().replace("_", "-")
                ok = code in values or code.split("-", 1)[0] in values
            else:
                ok = key in fields and _norm(fields[key]) in values
            if not ok:
                return False
        return True

    def documents(self, fields_by_document: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The documents that pass, after checking every key is known to some document."""
        self.check_keys({key for fields in fields_by_document.values() for key in fields})
        return {doc for doc, fields in fields_by_document.items() if self.matches(doc, fields)}
