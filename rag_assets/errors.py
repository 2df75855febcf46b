"""The project's exceptions: each says what went wrong and, where it can, what to change."""

from __future__ import annotations


class RagError(Exception):
    """Base class for every error rag_assets raises on purpose."""


class ConfigurationError(RagError):
    """A setting is missing or invalid; the message names the variable to change."""


class DocumentError(RagError):
    """One document cannot be processed; carries the document path and the reason."""

    def __init__(self, doc_path: str, reason: str, line: int | None = None):
        self.doc_path = doc_path
        self.reason = reason
        self.line = line
        where = f"{doc_path}:{line}" if line is not None else doc_path
        super().__init__(f"{where}: {reason}")


class EmbeddingError(RagError):
    """The embedding model or service failed after its retries."""


class EmbeddingServiceUnavailable(EmbeddingError):
    """The embedding service failed too often in a row (its circuit breaker is open): every further
    call fails at once, so a run stops waiting on a dead endpoint document after document."""


class VectorDBUnavailableError(RagError):
    """The vector store (Chroma) cannot be reached or opened."""


class InvalidQueryError(RagError, ValueError):
    """A query is empty, too long or otherwise unusable."""
