"""A search result as every surface hands it on: `rag serve`'s /search, `rag query --json` (answered
locally or through a server, one corpus or several, and its --batch lines) give each result the same
fields, in the same order: SearchResult.as_dict's (chunk_id, doc_path, section, heading_breadcrumb,
text, score, relevance, context, context_tokens), then anchor, metadata (the page's fields, without
the index's bookkeeping), corpus and rank."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from rag_assets.retrieval.search_result import SearchResult

# stored chunk metadata that is bookkeeping, not something a client cites or filters on
BOOKKEEPING = frozenset({"content_hash", "embedding_model", "token_count", "oversized"})
_NOT_SLUG = re.compile(r"[^\w\- ]+")


def anchor(heading: str) -> str:
    """The anchor a docs site gives a heading (GitHub-style): lowercase, punctuation dropped, spaces
    to hyphens. "Server-sent events" -> "server-sent-events"."""
    text = unicodedata.normalize("NFKC", heading or "").strip().lower()
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return _NOT_SLUG.sub("", text).replace(" ", "-")


def result_fields(result: SearchResult, rank: int, corpus: str) -> dict[str, Any]:
    data = result.as_dict()
    data["context"] = result.context or result.text  # every result hands on a context (the text when windows are off)
    data["anchor"] = anchor(result.section)
    data["metadata"] = {k: v for k, v in (result.metadata or {}).items() if k not in BOOKKEEPING}
    data["corpus"] = corpus
    data["rank"] = rank
    return data
