"""Reading errors of OpenAI-compatible servers, shared by the embedder and the answer generator.

Nothing here ever includes request headers: callers still scrub the key from what they print.
"""

from __future__ import annotations

import math


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms (OpenAI's) or retry-after, in seconds."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def error_message(exc: BaseException) -> str:
    """The server's own message when it sent one, else the exception's; at most 300 characters."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        if isinstance(body, dict):
            detail = body.get("error", body)
            if isinstance(detail, dict) and detail.get("message"):
                return str(detail["message"])[:300]
        try:
            text = exc.response.text
        except Exception:  # noqa: BLE001 - a streamed/closed body
            text = ""
        return (text or exc.message)[:300]
    return (str(exc) or type(exc).__name__)[:300]


def describe(exc: BaseException | None) -> str:
    """`HTTP <status>: <message>` (or just the message), for error text."""
    if exc is None:
        return "unknown"
    status = getattr(exc, "status_code", None)
    return (f"HTTP {status}: " if status else "") + error_message(exc)
