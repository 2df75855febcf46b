"""The document fields every chunk of a document carries in its metadata."""

from __future__ import annotations

import datetime
from typing import Any

from rag_assets.vocabulary.index_text import HEADER_ENTRY_MAX_CHARS
from rag_assets.vocabulary.markup import strip_heading_attributes
from rag_assets.models import ParsedDocument


def _scalar(value: Any) -> str | int | float | bool | None:
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date subclass
        return value.isoformat()
    return None


def _document_metadata(doc: ParsedDocument) -> dict[str, Any]:
    """Document fields every chunk carries: title/description/tags plus scalar frontmatter keys."""
    meta: dict[str, Any] = {
        "title": strip_heading_attributes(doc.title[: HEADER_ENTRY_MAX_CHARS * 4]),
        "description": doc.description,
        "tags": ", ".join(str(t) for t in doc.tags),
    }
    for key, value in doc.metadata.items():
        key = str(key)
        if key in meta:
            continue  # the parsed fields win over raw frontmatter of the same name
        scalar = _scalar(value)
        if scalar is not None:
            meta[key] = scalar
        elif isinstance(value, (list, tuple)):
            items = [_scalar(v) for v in value]
            if all(v is not None for v in items):
                meta[key] = ", ".join(str(v) for v in items)
    return meta
