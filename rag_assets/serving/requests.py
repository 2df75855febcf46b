"""What a client may ask `rag serve` (HTTP and MCP alike), checked before any work: the fields of
``RetrieveRequest`` (rag_assets.retrieval.context) under their names, ``top_k`` as the issue's
interface names ``max_chunks``, and ``corpus`` (one name or a list: one ranking over several).
Every problem is a BadRequest (a ValueError) with one line naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_assets.answer.generation import MAX_SOURCES
from rag_assets.retrieval.context import validate_min_relevance
from rag_assets.vocabulary.modes import MAX_TOP_K, RetrievalMode, validate_count

MAX_CORPORA = 16  # corpora in one request


class BadRequest(ValueError):
    """The request is malformed (HTTP 400); the message is one line naming the field."""


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


_SEARCH_FIELDS = {"query", "top_k", "max_chunks", "mode", "fusion", "filters", "corpus", "prefer", "min_relevance",
                  "context_key"}
_ANSWER_FIELDS = {"question", "query", "max_sources", "chapter_context", "prefer", "selected_text", "filters", "corpus",
                  "mode", "min_relevance", "context_key"}


def search_request(body: Any) -> SearchRequest:
    data = _object(body, _SEARCH_FIELDS)
    if "top_k" in data and "max_chunks" in data:
        raise BadRequest("give top_k or max_chunks (the same thing), not both")
    top_k = _count(data.get("top_k", data.get("max_chunks", 5)), "top_k", MAX_TOP_K)
    mode = _mode(data.get("mode"))
    fusion = _text(data.get("fusion"), "fusion")
    if fusion is not None:
        if fusion not in ("convex", "rrf"):
            raise BadRequest(f"fusion must be convex or rrf, got {fusion!r}")
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
    data = _object(body, _ANSWER_FIELDS)
    if "question" in data and "query" in data:
        raise BadRequest("give question or query (the same thing), not both")
    if "chapter_context" in data and "prefer" in data:
        raise BadRequest("give chapter_context or prefer (the same thing), not both")
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


def _object(body: Any, fields: set[str]) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    unknown = sorted(set(body) - fields)
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)} (accepted: {', '.join(sorted(fields))})")
    return body


def _query(value: Any, name: str) -> str:
    if value is None:
        raise BadRequest(f"{name} is required")
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string, got {type(value).__name__}")
    return value  # emptiness and length: the pipeline's InvalidQueryError (RAG_MAX_QUERY_CHARS)


def _count(value: Any, name: str, most: int) -> int:
    try:
        return validate_count(value, name, most)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _mode(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in (*RetrievalMode.names(), "rrf"):
        raise BadRequest(f"mode must be one of {', '.join((*RetrievalMode.names(), 'rrf'))}, got {value!r}")
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
        raise BadRequest(f"filters must be a JSON object (e.g. {{\"module\": \"guide\"}}), got {type(value).__name__}")
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


def _relevance(value: Any) -> float | None:
    try:
        return validate_min_relevance(value)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
