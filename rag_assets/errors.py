"""The project's exceptions: each says what went wrong and, where it can, what to change.

The seed contracts' names are here too, as aliases of ours (docs/api.md has the table):
``EmbeddingFailureError`` is ``EmbeddingError``; ``VectorDBWriteError`` is the store's own write
failure (a ``VectorDBUnavailableError``, and so a ``ConnectionError``).
"""

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


class InvalidDocumentError(DocumentError):
    """A document lacks metadata the configuration requires, or has a value it does not allow."""


class EmbeddingError(RagError):
    """The embedding model or service failed after its retries."""


class EmbeddingServiceUnavailable(EmbeddingError):
    """The embedding endpoint's circuit breaker is open: it failed `failures` requests in a row
    (each after its retries), so calls fail at once instead of retrying per document.

    Raised by the call whose failure opened the breaker and by every call while it stays open. A
    caller that embeds many documents should stop on it: later documents would fail the same way.
    `endpoint` is the host (never a key or full URL), `last_error` the last failure's message.
    """

    def __init__(self, message: str, *, endpoint: str, failures: int, last_error: str):
        super().__init__(message)
        self.endpoint = endpoint
        self.failures = failures
        self.last_error = last_error


class StateDatabaseError(RagError):
    """The state database cannot be used as it is (read-only for a writer, damaged, not a database);
    the message names the file and what to do."""


class VectorDBUnavailableError(RagError, ConnectionError):
    """The vector store (Chroma) cannot be reached or opened. A ConnectionError too (the
    pipeline-API contract's "database connection failure"): `except ConnectionError` catches it."""


class VectorDBWriteError(VectorDBUnavailableError):
    """A write to the vector store (an upsert or a delete) failed; a document whose write failed is
    not indexed at its new version (what was indexed of it before stays)."""


class VectorStoreFullError(VectorDBWriteError):
    """The disk under an embedded vector store has too little room for a write: nothing was written."""


class DeletionRefusedError(RagError):
    """The deletion guard kept documents an explicit deletion would have removed together with
    others that vanished from the docs folder: nothing was removed (the message says why and what
    to do)."""


class DimensionMismatchError(ConfigurationError):
    """Vectors of one size meet a collection (or a model) of another."""

    def __init__(self, message: str, *, expected: int | None = None, actual: int | None = None):
        super().__init__(message)
        self.expected, self.actual = expected, actual


class RetrievalTimeoutError(RagError, TimeoutError):
    """A retrieval took longer than RAG_RETRIEVE_TIMEOUT_SECONDS."""


class InvalidQueryError(RagError, ValueError):
    """A query is empty, too long or otherwise unusable."""


class InvalidFilterError(InvalidQueryError):
    """A retrieval filter names a key no indexed document has, or gives an unusable value."""


# The seed contracts' names for the same errors (docs/api.md, "Seed names and ours").
EmbeddingFailureError = EmbeddingError
