"""Metadata filters for retrieval: which documents a query may return chunks from.

    {"module": "module-2"}                      # a scalar key: equal (as text: 3 == "3" == "3.0", True == "true")
    {"chapter": ["ch1", "ch2"]}                 # a list: any of them
    {"tags": ["ros", "nodes"]}                  # tags: the document has any of them (case-insensitive)
    {"path_prefix": "guides/"}                  # doc_path or site_path starts with it (any of, for a list)
    {"module": "module-2", "doc_type": "lab"}   # several keys: all of them
    {"language": "zh"}                          # a page's language: zh matches zh, zh-CN, zh-TW; zh-CN only zh-CN
    {"version": ["2.x", "next"]}                # a docs site's version, as the site names it (text: 1.10 is not 1.1)

Keys are the document-level fields every chunk carries: `module`, `chapter`, `doc_type`, `tags`,
`source`, `last_update_date`, `title`, a site's `version`, `url`, `route` and `site_path`
(rag_assets.vocabulary.site), any scalar frontmatter key, plus `path_prefix` (and `doc_path`,
exact). `path_prefix` matches a page's `site_path` too (its path under the site's content root), so
`plugin/` selects a site's `plugin/` section when the folder indexed is the site's repository. A key
no indexed document has is an InvalidFilterError that lists the keys there are (`version` says that
no page of the corpus has one). Filters select documents; the retriever then ranks inside that set (a Chroma `where` for
the dense list, a mask over the BM25 scores for the keyword list), so `top_k` results come back
whenever that many chunks match.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

from rag_assets.errors import InvalidFilterError
from rag_assets.index.chroma_store import CHUNK_KEYS
from rag_assets.vocabulary.site import SITE_PATH, VERSION, site_path_of

PATH_PREFIX = "path_prefix"
TAGS = "tags"
LANGUAGE = "language"
ALWAYS_KNOWN = frozenset({PATH_PREFIX, TAGS, LANGUAGE, "doc_path", "module", "chapter", "doc_type"})
# keys compared as the text they are written in: "no" is Norwegian, version 1.10 is not 1.1
_TEXT_KEYS = frozenset({TAGS, LANGUAGE, PATH_PREFIX, "doc_path", VERSION, SITE_PATH})


# YAML's words for booleans (frontmatter `draft: yes` is True): a filter's text compares as the boolean
_BOOLEAN_WORDS = {"true": "true", "yes": "true", "on": "true", "false": "false", "no": "false", "off": "false"}
FILTER_SCALARS = (str, int, float, bool, dt.date)  # what a filter value may be (a date compares as its ISO text)


def normalise(value: Any) -> str:
    """The one form a filter value and a stored field are compared in, whether the value came from
    Python (`{"level": 2.0, "draft": True}`) or from a command line (`--where level=2.0 --where
    draft=True`): booleans as "true"/"false" (YAML's yes/no/on/off too, any case), numbers as their
    shortest text (2 == 2.0 == "2.0" -> "2"), anything else as its stripped text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        number = float(value)
        if math.isfinite(number) and number.is_integer() and abs(number) < 2**53:
            return str(int(number))
        return repr(number) if isinstance(value, float) else str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).strip()
    word = _BOOLEAN_WORDS.get(text.lower())
    if word is not None:
        return word
    if text and (text[0].isdigit() or text[0] in "+-.") and _NUMBER.fullmatch(text):
        return normalise(float(text))
    return text


_NUMBER = re.compile(r"[+-]?((0|[1-9]\d*)(\.\d*)?|\.\d+)([eE][+-]?\d+)?")  # "00123" is a code, not 123


def _text(key: str, value: Any) -> str:
    """A value of a key compared as text: tags in any case, a language code in any case and with `-`
    or `_` (zh_CN is zh-cn), a path as it is."""
    text = str(value).strip()
    if key == TAGS:
        return text.casefold()
    if key == LANGUAGE:
        return text.casefold().replace("_", "-")
    return text


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
        bad_key = next((key for key in raw if not isinstance(key, str) or not key.strip()), None)
        if bad_key is not None or any(not isinstance(key, str) for key in raw):
            raise InvalidFilterError(f"filter keys are non-empty strings, got {bad_key!r}")
        clauses = []
        for key in sorted(raw):
            value = raw[key]
            values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
            if not values or any(v is None or isinstance(v, (dict, list, tuple)) for v in values):
                raise InvalidFilterError(f"filter {key!r}: give a value or a list of values, got {value!r}")
            odd = next((v for v in values if not isinstance(v, FILTER_SCALARS)), None)
            if odd is not None:
                raise InvalidFilterError(f"filter {key!r}: a value is a string, number, boolean or date, got "
                                         f"{type(odd).__name__} {odd!r:.60}")
            if any(isinstance(v, float) and not math.isfinite(v) for v in values):
                raise InvalidFilterError(f"filter {key!r}: a number must be finite, got {value!r}")
            if key in _TEXT_KEYS:
                normalised = tuple(sorted({_text(key, v) for v in values}))
            else:
                normalised = tuple(sorted({normalise(v) for v in values}))
            clauses.append((key.strip(), normalised))
        return cls(tuple(clauses)) if clauses else None

    def __bool__(self) -> bool:
        return bool(self.clauses)

    def as_dict(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.clauses}

    def check_keys(self, known: Iterable[str]) -> None:
        known = set(known) | ALWAYS_KNOWN
        unknown = [key for key, _ in self.clauses if key not in known]
        if VERSION in unknown:
            raise InvalidFilterError(
                "filter 'version': no indexed page has a version. Versions come from a docs site that keeps "
                "several (Docusaurus versioned_docs/, a Mintlify or MkDocs version list...); this corpus has none, "
                "or its pages were indexed before versions were read (`rag ingest` again)")
        if unknown:
            raise InvalidFilterError(
                f"unknown filter key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                f"known keys: {', '.join(sorted(known - CHUNK_KEYS))}"
            )

    def matches(self, doc_path: str, fields: Mapping[str, Any]) -> bool:
        for key, values in self.clauses:
            if key == PATH_PREFIX:
                site_path = site_path_of(fields)
                ok = any(doc_path.startswith(v) or (site_path and site_path.startswith(v)) for v in values)
            elif key == "doc_path":
                ok = doc_path in values
            elif key == TAGS:
                ok = any(t.casefold() in values for t in split_tags(fields.get(TAGS)))
            elif key == LANGUAGE:
                code = _text(LANGUAGE, fields.get(LANGUAGE, ""))
                ok = code in values or code.split("-", 1)[0] in values
            elif key in _TEXT_KEYS:
                ok = key in fields and _text(key, fields[key]) in values
            else:
                ok = key in fields and normalise(fields[key]) in values
            if not ok:
                return False
        return True

    def documents(self, fields_by_document: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The documents that pass, after checking every key is known to some document."""
        self.check_keys({key for fields in fields_by_document.values() for key in fields})
        return {doc for doc, fields in fields_by_document.items() if self.matches(doc, fields)}
