"""Reading errors of OpenAI-compatible servers, shared by the embedder and the answer generator.

Nothing here ever includes request headers: callers still scrub the key from what they print.
"""

from __future__ import annotations

import base64
import math
from urllib.parse import unquote, urlsplit


def redact_url(url: str | None) -> str | None:
    """The URL without its user:password@ part, for messages, logs and metadata."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"***@{host}").geturl()


def url_secrets(url: str | None) -> list[str]:
    """What of a URL's credentials could be echoed back: user:password as written and decoded, the
    password alone, and the Basic auth value httpx sends for them. Longest first."""
    if not url:
        return []
    netloc = urlsplit(url).netloc
    if "@" not in netloc:
        return []
    userinfo = netloc.rsplit("@", 1)[0]
    decoded = unquote(userinfo)
    secrets = {userinfo, decoded, base64.b64encode(decoded.encode()).decode()}
    if ":" in decoded:
        password = decoded.split(":", 1)[1]
        if len(password) >= 3:  # a one-letter password would blank unrelated text
            secrets |= {password, userinfo.split(":", 1)[1]}
    return sorted((s for s in secrets if s), key=len, reverse=True)


def scrub_secrets(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


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
