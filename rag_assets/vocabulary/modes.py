"""The retrieval modes, the fusion rules and the result-count limit: one definition for config, CLI,
API, evaluation and Dagster (no heavy imports: config and the CLI load this)."""

from __future__ import annotations

import enum
import numbers
from typing import Any

MAX_TOP_K = 100  # results per query, for every caller (CLI, API, evaluation)


class RetrievalMode(str, enum.Enum):
    VECTOR = "vector"  # dense: Chroma cosine over the query embedding
    KEYWORD = "keyword"  # BM25 over the indexed text
    HYBRID = "hybrid"  # both, fused (the default)

    def __str__(self) -> str:  # "hybrid", not "RetrievalMode.HYBRID", in messages and f-strings
        return self.value

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)

    @classmethod
    def parse(cls, value: Any, default: "RetrievalMode | str | None" = None) -> "RetrievalMode":
        """A mode from its name or a common alias (dense, bm25, ...); ``default`` for None/"".

        Raises ValueError naming the valid modes.
        """
        if value is None or value == "":
            if default is None:
                return cls.HYBRID
            return cls.parse(default)
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise ValueError(f"retrieval mode must be a string, got {type(value).__name__}")
        key = value.strip().lower()
        key = _ALIASES.get(key, key)
        try:
            return cls(key)
        except ValueError:
            raise ValueError(f"unknown retrieval mode {value!r}: use one of {', '.join(cls.names())}") from None


_ALIASES = {"dense": "vector", "semantic": "vector", "bm25": "keyword", "lexical": "keyword", "rrf": "hybrid"}


class FusionMethod(str, enum.Enum):
    """How hybrid mode fuses its two lists (RAG_FUSION; rag_assets/retrieval/fusion.py)."""

    CONVEX = "convex"  # weighted sum of z-scored cosine and BM25 (default)
    RRF = "rrf"  # reciprocal rank fusion with per-query weights

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: Any) -> "FusionMethod":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise ValueError(f"unknown fusion {value!r}: use one of {', '.join(m.value for m in cls)}") from None


def validate_top_k(value: Any, name: str = "top_k") -> int:
    """``value`` as an int in 1..MAX_TOP_K, else ValueError (bools are not counts)."""
    return validate_count(value, name, MAX_TOP_K)


def validate_count(value: Any, name: str, most: int) -> int:
    """``value`` as an int in 1..most, else ValueError naming it (bools are not counts): the one check
    of a count a request carries (top_k, max_chunks, max_sources), for the API, the CLI and `rag serve`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= most:
        raise ValueError(f"{name} must be an integer between 1 and {most}, got {value!r}")
    return int(value)
