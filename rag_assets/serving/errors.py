"""How an exception a request raised is answered: its HTTP status and a one-line message (HTTP and MCP alike)."""

from __future__ import annotations

from rag_assets.errors import (ConfigurationError, DimensionMismatchError, EmbeddingError, InvalidQueryError,
                               RetrievalTimeoutError, VectorDBUnavailableError)
from rag_assets.serving.requests import BadRequest, UnknownCorpus


class Busy(Exception):
    """More requests in flight than the server takes: a 503 at once."""


class TooLarge(Exception):
    """A request body over the limit: a 413."""


def error_status(exc: BaseException) -> tuple[int, str]:
    """The HTTP status and one-line message for an exception a request raised."""
    if isinstance(exc, TooLarge):
        return 413, str(exc)
    if isinstance(exc, Busy):
        return 503, str(exc)
    if isinstance(exc, UnknownCorpus):
        return 404, str(exc.args[0] if exc.args else exc)
    if isinstance(exc, (BadRequest, InvalidQueryError)):
        return 400, _line(exc)
    if isinstance(exc, RetrievalTimeoutError):
        return 504, _line(exc)
    if isinstance(exc, (VectorDBUnavailableError, EmbeddingError)):
        return 503, f"{type(exc).__name__}: {_line(exc)}"
    if isinstance(exc, DimensionMismatchError):
        return 500, _line(exc)
    if isinstance(exc, ConfigurationError):
        return 503, f"not configured: {_line(exc)}"
    if isinstance(exc, ValueError):  # the pipeline's checks of a value (max_sources, min_relevance, ...)
        return 400, _line(exc)
    return 500, f"internal error: {type(exc).__name__}: {_line(exc)}"


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
