"""What a query must be before it is searched: a string with something visible, a letter or digit,
and at most RAG_MAX_QUERY_CHARS characters; format characters (zero-width spaces, BOM, ...) and
surrounding whitespace removed. Anything else is an InvalidQueryError saying what is wrong.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from rag_assets.errors import InvalidQueryError


def validate_query(query: Any, max_chars: int) -> str:
    """The query without format characters (zero-width spaces, BOM, ...) or surrounding whitespace;
    InvalidQueryError when nothing visible is left, no letter or digit, or it is too long."""
    if query is None:
        raise InvalidQueryError("query is required: got None")
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}")
    text = "".join(ch for ch in query if unicodedata.category(ch) != "Cf").strip()
    if not any(_visible(ch) for ch in text):
        raise InvalidQueryError("query is empty: ask a question with at least one visible character")
    if not any(unicodedata.category(ch)[0] in "LN" for ch in text):
        # "???" or "..." embeds to something close to everything: it would pass the threshold
        raise InvalidQueryError(f"query has no words: {text[:40]!r} has no letter or digit; ask a question")
    if len(text) > max_chars:
        raise InvalidQueryError(
            f"query is too long: {len(text)} characters, the limit is {max_chars} (RAG_MAX_QUERY_CHARS)"
        )
    return text


def _visible(ch: str) -> bool:
    # separators (Z*), controls/format/unassigned (C*) and lone combining marks (Mn, Me) draw nothing
    category = unicodedata.category(ch)
    return category[0] not in "ZC" and category not in ("Mn", "Me")
