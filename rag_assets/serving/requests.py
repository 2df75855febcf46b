"""What a client may ask `rag serve` and `rag mcp`, checked before any work, in one place for HTTP and
MCP alike: the fields of ``RetrieveRequest`` (rag_assets.retrieval.context) under their names,
``top_k`` as the issue's interface names ``max_chunks``, ``corpus`` (one name or a list: one ranking
over several), and the page tools' arguments.

``FIELDS`` holds each field's JSON schema (type, range, allowed values, default, one line saying what it
is): the OpenAPI document and the MCP tools' input schemas are built from it, and the checks below
refuse a value in the same words (an HTTP 400 and an MCP tool error read alike). Every problem is a
BadRequest (a ValueError) with one line naming the field and what it accepts."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_assets.answer.generation import MAX_SOURCES
from rag_assets.retrieval.context import validate_min_relevance
from rag_assets.vocabulary.modes import MAX_TOP_K, RetrievalMode, validate_count

MAX_CORPORA = 16  # corpora in one request
MODES = (*RetrievalMode.names(), "rrf")  # rrf: hybrid with reciprocal rank fusion
FUSIONS = ("convex", "rrf")
MAX_PAGE_LIMIT = 100  # pages in one list_pages answer, at most (the byte budget may stop it sooner)
DEFAULT_PAGE_LIMIT = 25

# The filter keys a client can use, said once for every surface that describes them. `version` is the
# docs site version a page belongs to (a page's frontmatter `version`, or the site's own versions);
# any other scalar frontmatter key filters too (docs/api.md#filters).
FILTER_KEYS = {
    "module": "the page's top folder (or frontmatter module)",
    "chapter": "the page's chapter (frontmatter chapter)",
    "doc_type": "the page's type (frontmatter doc_type, else its first folder)",
    "tags": "any of these tags (case-insensitive)",
    "path_prefix": "doc_path starts with it (e.g. \"guides/\")",
    "doc_path": "exactly this page",
    "language": "the page's language: \"zh\" matches zh, zh-CN, zh-TW",
    "version": "the docs version the page belongs to (e.g. \"v2\"; sites with versions)",
}
FILTERS_DESCRIPTION = ("only pages whose fields match, every key given (a list: any of its values): "
                       + "; ".join(f"{key}: {what}" for key, what in FILTER_KEYS.items())
                       + "; any other scalar frontmatter key too. An unknown key is refused, naming the known ones.")

_STRING_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": MAX_CORPORA}
FIELDS: dict[str, dict[str, Any]] = {
    "query": {"type": "string", "minLength": 1,
              "description": "the question, in words (at most RAG_MAX_QUERY_CHARS characters, 2,000 by default)"},
    "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5,
              "description": f"how many results to return, 1 to {MAX_TOP_K}"},
    "max_chunks": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K,
                   "description": "RetrieveRequest's name for top_k (give one of the two)"},
    "mode": {"type": "string", "enum": list(MODES),
             "description": "how to rank: hybrid (words and meaning, the default: RAG_RETRIEVAL_MODE), vector "
                            "(meaning only), keyword (BM25 words only), rrf (hybrid with reciprocal rank fusion)"},
    "fusion": {"type": "string", "enum": list(FUSIONS), "description": "hybrid's fusion: convex (default) or rrf"},
    "filters": {"type": "object", "additionalProperties": True, "description": FILTERS_DESCRIPTION,
                "examples": [{"module": "guide"}, {"tags": ["eval"], "version": "v2"}]},
    "version": {"type": "string", "minLength": 1,
                "description": "only pages of this docs version (the same as filters.version)"},
    "corpus": {"anyOf": [{"type": "string", "minLength": 1}, _STRING_LIST],
               "description": f"a corpus name, or a list of up to {MAX_CORPORA} for one ranking over several "
                              "(default: the server's first corpus; list_pages names them)"},
    "prefer": {"type": "string", "description": "the reader's module, chapter or doc_path: its results move up a "
                                                "few places (nothing is filtered)"},
    "min_relevance": {"type": "number", "minimum": 0, "maximum": 1,
                      "description": "the gate of meets_threshold: a relevance, the chance a chunk is relevant "
                                     "(default RAG_MIN_RELEVANCE)"},
    "context_key": {"type": "string", "description": "accepted as RetrieveRequest has it (part of the cache key)"},
    "question": {"type": "string", "minLength": 1, "description": "the question to answer"},
    "max_sources": {"type": "integer", "minimum": 1, "maximum": MAX_SOURCES, "default": 5,
                    "description": f"how many sources the answer may cite, 1 to {MAX_SOURCES}"},
    "chapter_context": {"type": "string", "description": "the reader's place (module, chapter or doc_path): its "
                                                         "sources move up a few places"},
    "selected_text": {"type": "string", "minLength": 1, "description": "a passage the reader selected, to explain"},
    "path": {"type": "string", "minLength": 1,
             "description": "the page's path as search and list_pages give it (e.g. \"guide/streaming.md\")"},
    "section": {"type": "string", "description": "one section: its anchor, heading or heading path (omit for the "
                                                 "whole page)"},
    "offset": {"type": "integer", "minimum": 0, "default": 0,
               "description": "where to start reading, in characters (a long page is answered in parts; each part "
                              "ends saying the offset of the next)"},
    "prefix": {"type": "string", "description": "only pages whose path starts with it (a folder, e.g. \"guide/\")"},
    "cursor": {"type": "string", "description": "next_cursor of the previous answer, to go on listing (omit to start)"},
    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_LIMIT, "default": DEFAULT_PAGE_LIMIT,
              "description": f"pages per answer, 1 to {MAX_PAGE_LIMIT} (an answer also stops near 8 KB of pages)"},
}
_ANSWER_ALIASES = {"query": "question", "prefer": "chapter_context"}


class BadRequest(ValueError):
    """The request is malformed (HTTP 400, an MCP tool error); the message is one line naming the field."""


class UnknownCorpus(LookupError):
    """The request names a corpus this server does not serve (HTTP 404)."""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    top_k: int = 5
    mode: str | None = None
    filters: Mapping[str, Any] | None = None
    corpora: tuple[str, ...] = ()  # empty: the server's default corpus
    prefer: str | None = None
    min_relevance: float | None = None
    context_key: str | None = None


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    max_sources: int = 5
    chapter_context: str | None = None
    selected_text: str | None = None
    filters: Mapping[str, Any] | None = None
    corpus: str | None = None
    mode: str | None = None
    min_relevance: float | None = None
    context_key: str | None = None


@dataclass(frozen=True)
class PageRequest:
    path: str
    section: str | None = None
    corpus: str | None = None
    offset: int = 0


@dataclass(frozen=True)
class ListRequest:
    corpus: str | None = None
    prefix: str | None = None
    after: tuple[str, str] | None = None  # (corpus, path) of the last page listed before: the cursor
    limit: int = DEFAULT_PAGE_LIMIT


SEARCH_FIELDS = ("query", "top_k", "max_chunks", "mode", "fusion", "filters", "corpus", "prefer", "min_relevance",
                 "context_key")
ANSWER_FIELDS = ("question", "query", "max_sources", "chapter_context", "prefer", "selected_text", "filters", "corpus",
                 "mode", "min_relevance", "context_key")


def schema(fields: tuple[str, ...] | list[str], required: tuple[str, ...] = (), *,
           single_corpus: bool = False) -> dict[str, Any]:
    """The JSON schema of an object of these fields (FIELDS' entries; any other field is refused).
    single_corpus: `corpus` is one name (answers and pages come from one corpus)."""
    properties = {name: dict(FIELDS[name]) for name in fields}
    if single_corpus and "corpus" in properties:
        properties["corpus"] = {"type": "string", "minLength": 1,
                                "description": "a corpus name (default: the server's first corpus; list_pages names them)"}
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


# The MCP tools' arguments: (the fields, the required ones, corpus as one name). The tools' input
# schemas and their checks (tool_request) both come from here.
TOOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "search": (("query", "top_k", "corpus", "filters", "mode", "version"), ("query",), False),
    "read_page": (("path", "section", "corpus", "offset"), ("path",), True),
    "list_pages": (("corpus", "prefix", "cursor", "limit"), (), True),
    "answer": (("question", "max_sources", "corpus", "filters", "chapter_context"), ("question",), True),
}


def tool_schema(tool: str) -> dict[str, Any]:
    fields, required, single = TOOLS[tool]
    return schema(fields, required, single_corpus=single)


def tool_request(tool: str, arguments: Mapping[str, Any] | None) -> Any:
    """An MCP tool's arguments checked as the HTTP endpoints check theirs (the same words): the
    SearchRequest, AnswerRequest, PageRequest or ListRequest it asks for. None values are left out
    (an argument not given)."""
    fields = TOOLS[tool][0]
    given = {k: v for k, v in (arguments or {}).items() if v is not None}
    _object(given, fields, noun="argument")
    if tool == "search":
        version = given.pop("version", None)
        if version is not None:
            given["filters"] = with_version(given.get("filters"), version)
        return search_request(given)
    if tool == "answer":
        return answer_request(given)
    return page_request(given) if tool == "read_page" else list_request(given)


def search_request(body: Any) -> SearchRequest:
    data = _object(body, SEARCH_FIELDS)
    if "top_k" in data and "max_chunks" in data:
        raise BadRequest("give top_k or max_chunks (the same thing), not both")
    top_k = _count(data.get("top_k", data.get("max_chunks", 5)), "top_k", MAX_TOP_K)
    mode = _mode(data.get("mode"))
    fusion = _text(data.get("fusion"), "fusion")
    if fusion is not None:
        if fusion not in FUSIONS:
            raise BadRequest(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
        if mode not in (None, "hybrid", "rrf"):
            raise BadRequest(f"fusion applies to the hybrid mode, not {mode}")
        mode = "rrf" if fusion == "rrf" else "hybrid"
    return SearchRequest(
        query=_query(data.get("query"), "query"),
        top_k=top_k,
        mode=mode,
        filters=_filters(data.get("filters")),
        corpora=_corpora(data.get("corpus")),
        prefer=_text(data.get("prefer"), "prefer"),
        min_relevance=_relevance(data.get("min_relevance")),
        context_key=_text(data.get("context_key"), "context_key"),
    )


def answer_request(body: Any) -> AnswerRequest:
    data = _object(body, ANSWER_FIELDS)
    for alias, name in _ANSWER_ALIASES.items():
        if alias in data and name in data:
            raise BadRequest(f"give {name} or {alias} (the same thing), not both")
    corpora = _corpora(data.get("corpus"))
    if len(corpora) > 1:
        raise BadRequest("an answer comes from one corpus: give corpus as one name")
    selected = data.get("selected_text")
    if selected is not None and (not isinstance(selected, str) or not selected.strip()):
        raise BadRequest("selected_text, when given, is the non-empty passage the reader selected")
    return AnswerRequest(
        question=_query(data.get("question", data.get("query")), "question"),
        max_sources=_count(data.get("max_sources", 5), "max_sources", MAX_SOURCES),
        chapter_context=_text(data.get("chapter_context", data.get("prefer")), "chapter_context"),
        selected_text=selected,
        filters=_filters(data.get("filters")),
        corpus=corpora[0] if corpora else None,
        mode=_mode(data.get("mode")),
        min_relevance=_relevance(data.get("min_relevance")),
        context_key=_text(data.get("context_key"), "context_key"),
    )


def with_version(filters: Mapping[str, Any] | None, version: Any) -> Mapping[str, Any] | None:
    """filters with `version` as its version key (the search tool's shortcut for filters.version)."""
    if version is None:
        return filters
    version = _text(version, "version")
    if not version.strip():
        raise BadRequest("version, when given, is a non-empty string such as \"v2\"")
    if filters is not None and not isinstance(filters, Mapping):
        return filters  # search_request says what is wrong with it
    given = (filters or {}).get("version")
    if given is not None and given != version:
        raise BadRequest(f"version {version!r} and filters.version {given!r} disagree: give one of them")
    return {**(filters or {}), "version": version}


def page_request(body: Any) -> PageRequest:
    data = _object(body, ("path", "section", "corpus", "offset"))
    path = _text(data.get("path"), "path")
    if path is None or not path.strip():
        raise BadRequest("path is required: a page's path as search or list_pages give it (e.g. \"guide/streaming.md\")")
    offset = data.get("offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise BadRequest(f"offset must be an integer of 0 or more (a character offset), got {offset!r}")
    return PageRequest(path=path, section=_text(data.get("section"), "section"), corpus=_one_corpus(data.get("corpus")),
                       offset=offset)


def list_request(body: Any) -> ListRequest:
    data = _object(body, ("corpus", "prefix", "cursor", "limit"))
    return ListRequest(corpus=_one_corpus(data.get("corpus")), prefix=_text(data.get("prefix"), "prefix"),
                       after=decode_cursor(data.get("cursor")),
                       limit=_count(data.get("limit", DEFAULT_PAGE_LIMIT), "limit", MAX_PAGE_LIMIT))


def encode_cursor(corpus: str, path: str) -> str:
    """An opaque cursor: the last (corpus, path) an answer listed; the next answer starts after it."""
    return base64.urlsafe_b64encode(json.dumps([corpus, path], ensure_ascii=False).encode("utf-8")).decode("ascii")


def decode_cursor(cursor: Any) -> tuple[str, str] | None:
    if cursor is None or cursor == "":
        return None
    try:
        if not isinstance(cursor, str):
            raise ValueError
        after = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8"))
        if not (isinstance(after, list) and len(after) == 2 and all(isinstance(a, str) for a in after)):
            raise ValueError
    except (ValueError, UnicodeError, binascii.Error):
        raise BadRequest("cursor is not one this server gave: pass next_cursor of the previous answer as it is, "
                         "or omit it to start from the first page") from None
    return after[0], after[1]


def _object(body: Any, fields: tuple[str, ...] | set[str], noun: str = "field") -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    unknown = sorted(str(k) for k in set(body) - set(fields))
    if unknown:
        raise BadRequest(f"unknown {noun}(s) {', '.join(unknown)} (accepted: {', '.join(sorted(fields))})")
    _no_lone_surrogates(body, "the request")
    return body


def _no_lone_surrogates(value: Any, where: str) -> None:
    """JSON may carry "\\ud800" escapes that make no character: refused here, as a client's mistake
    (they reached the model's tokenizer as a 500 before)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadRequest(f"{where} holds a lone surrogate ({value[exc.start]!r} at character {exc.start}): "
                             "text must be valid Unicode") from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _no_lone_surrogates(key, where)
            _no_lone_surrogates(item, f"field {key}" if where == "the request" else where)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _no_lone_surrogates(item, where)


def _query(value: Any, name: str) -> str:
    if value is None:
        raise BadRequest(f"{name} is required: a string, the question in words")
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string (the question in words), got {type(value).__name__}")
    return value  # emptiness and length: the pipeline's InvalidQueryError (RAG_MAX_QUERY_CHARS)


def _count(value: Any, name: str, most: int) -> int:
    try:
        return validate_count(value, name, most)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _mode(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in MODES:
        raise BadRequest(f"mode must be one of {', '.join(MODES)}, got {value!r}")
    return value.lower()


def _text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string, got {type(value).__name__}")
    return value


def _filters(value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise BadRequest(f"filters must be a JSON object of key -> value or list of values (e.g. "
                         f"{{\"module\": \"guide\"}}; keys: {', '.join(FILTER_KEYS)}, or a frontmatter key), "
                         f"got {type(value).__name__}")
    return value  # the keys and values: rag_assets.retrieval.filters (InvalidFilterError, a 400 too)


def _corpora(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise BadRequest("corpus must be a corpus name or a non-empty list of names")
    if len(names) > MAX_CORPORA:
        raise BadRequest(f"at most {MAX_CORPORA} corpora in one request, got {len(names)}")
    return tuple(dict.fromkeys(names))


def _one_corpus(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise BadRequest(f"corpus must be one corpus name (a string), got {value!r:.60}")
    return value


def _relevance(value: Any) -> float | None:
    try:
        return validate_min_relevance(value)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
