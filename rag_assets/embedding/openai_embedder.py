"""OpenAI embeddings (or any OpenAI-compatible server: `base_url`, the settings' OPENAI_BASE_URL).

Batching: inputs are counted in cl100k_base tokens (one longer than `max_input_tokens` is cut
first: the API rejects, not truncates), sorted by that count, and packed into requests of at most
`batch_size` inputs and `max_batch_tokens` tokens -- similar lengths share a request, so a server
that pads a batch pads little. Up to `concurrency` requests are in flight at once (worker
threads); the vectors come back in input order. One failed request fails the call: requests not yet
sent are not sent, and the error is that request's.

Retries (the client's own are off): 429/5xx/408/409, timeouts, connection errors and malformed 200
answers are retried with jittered exponential backoff, at most `max_retries` attempts; 400, 401,
403 and 404 are not. A 429, or any answer with retry-after(-ms), closes a gate shared by every
worker until the time asked (capped at backoff_max): the workers back off together instead of
each hammering on.

Circuit breaker (shared by the workers): `breaker_failures` requests in a row that failed after all
their retries open it; then every call fails at once with EmbeddingServiceUnavailable (naming the
host, the count and the last error) instead of spending a retry budget per document. After
`breaker_cooldown_seconds` attempts go through again: the first answer closes it, a failure
re-opens it at once (rag_assets.embedding.circuit_breaker). `OpenAIEmbedder.unavailable` says whether it is
open. Answers are checked by rag_assets.embedding.openai_responses.

The API key never appears in a message, a log line or a repr.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import urlsplit

import numpy as np

from rag_assets.config import DEFAULT_OPENAI_MODEL, DEFAULTS, EmbeddingSettings
from rag_assets.embedding.base import TokenLimit, document_texts, l2_normalise
from rag_assets.embedding.circuit_breaker import CircuitBreaker
from rag_assets.embedding.openai_responses import MalformedResponse, vectors_of
from rag_assets.errors import ConfigurationError, EmbeddingError, EmbeddingServiceUnavailable
from rag_assets.openai_errors import describe, error_message, redact_url, retry_after, scrub_secrets, url_secrets

if TYPE_CHECKING:
    from openai import OpenAI

    from rag_assets.ingest.tokens import TokenCounter

log = logging.getLogger(__name__)

KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
MAX_INPUT_TOKENS = 8191  # per input, all three models
_RETRYABLE_STATUS = frozenset({408, 409, 429})  # plus every 5xx
_KEY_LIKE = re.compile(r"sk-[A-Za-z0-9_\-*]{6,}")
DEFAULT_ENDPOINT = "https://api.openai.com/v1"

# Defaults for direct construction; config.Settings holds the configured values (RAG_OPENAI_*).
DEFAULT_CONCURRENCY = DEFAULTS["openai_concurrency"]
DEFAULT_MAX_BATCH_TOKENS = DEFAULTS["openai_max_batch_tokens"]
DEFAULT_BREAKER_FAILURES = DEFAULTS["openai_breaker_failures"]
DEFAULT_BREAKER_COOLDOWN_SECONDS = DEFAULTS["openai_breaker_cooldown_seconds"]


class _Cancelled(Exception):
    """Another request of the same call failed: this one stops without sending."""


class _PermanentFailure(Exception):
    """Retrying cannot help (e.g. the service changed the vector size)."""


class OpenAIEmbedder(TokenLimit):
    """Token-budgeted, concurrent, retried calls to POST /embeddings; unit float32 vectors in input order."""

    max_input_tokens: int = MAX_INPUT_TOKENS

    def __init__(
        self,
        api_key: str | None,
        model_name: str = DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        batch_size: int = DEFAULTS["openai_batch_size"],
        max_retries: int = DEFAULTS["openai_max_retries"],
        timeout_seconds: float = DEFAULTS["openai_timeout_seconds"],
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        breaker_failures: int = DEFAULT_BREAKER_FAILURES,
        breaker_cooldown_seconds: float = DEFAULT_BREAKER_COOLDOWN_SECONDS,
        tiktoken_cache_dir: Path | None = None,
    ):
        if not api_key or not api_key.strip():
            raise ConfigurationError(
                "OPENAI_API_KEY is not set, and the OpenAI embedder (RAG_EMBEDDER=openai) needs it: "
                "export OPENAI_API_KEY=sk-... (or put it in .env), or set RAG_EMBEDDER=local for the offline model"
            )
        counts = dict(batch_size=batch_size, max_retries=max_retries, concurrency=concurrency,
                      max_batch_tokens=max_batch_tokens, breaker_failures=breaker_failures)
        if any(value <= 0 for value in counts.values()) or breaker_cooldown_seconds < 0:
            raise ValueError(f"{counts} must all be positive and breaker_cooldown_seconds >= 0")
        self.model_name = model_name
        self.base_url = base_url or None
        self.batch_size = batch_size
        self.max_retries = max_retries  # total attempts per request, the first one included
        self.timeout_seconds = timeout_seconds
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.concurrency = concurrency
        self.max_batch_tokens = max_batch_tokens
        # one input must fit in one request
        self.max_input_tokens = min(MAX_INPUT_TOKENS, max_batch_tokens)
        self._api_key = api_key.strip()
        self._tiktoken_cache_dir = tiktoken_cache_dir
        self._dimension: int | None = KNOWN_DIMENSIONS.get(model_name)
        self._client: OpenAI | None = None
        self._counter: TokenCounter | None = None
        self._lock = threading.Lock()
        self._not_before = 0.0  # monotonic time before which no worker sends (rate-limit gate)
        # the endpoint the client talks to: the one passed in (the settings' OPENAI_BASE_URL, resolved at the
        # edge) or OpenAI's, never the environment's (the openai client given no base_url would read it)
        self._endpoint = self.base_url or DEFAULT_ENDPOINT
        self._breaker = CircuitBreaker(_host(self._endpoint), breaker_failures, breaker_cooldown_seconds)

    @classmethod
    def from_settings(cls, embedding: EmbeddingSettings, **overrides: Any) -> "OpenAIEmbedder":
        """From the settings' embedding group (`settings.embedding`)."""
        kwargs: dict[str, Any] = dict(
            api_key=embedding.openai_api_key,
            model_name=embedding.model_name,
            base_url=embedding.openai_base_url,
            max_retries=embedding.openai_max_retries,
            timeout_seconds=embedding.openai_timeout_seconds,
            tiktoken_cache_dir=embedding.tiktoken_dir,
            batch_size=embedding.openai_batch_size,
            concurrency=embedding.openai_concurrency,
            max_batch_tokens=embedding.openai_max_batch_tokens,
            breaker_failures=embedding.openai_breaker_failures,
            breaker_cooldown_seconds=embedding.openai_breaker_cooldown_seconds,
        )
        kwargs.update(overrides)
        return cls(**kwargs)

    def __repr__(self) -> str:  # deliberately without the key
        where = f", base_url={redact_url(self.base_url)!r}" if self.base_url else ""
        return (f"OpenAIEmbedder(model_name={self.model_name!r}{where}, batch_size={self.batch_size}, "
                f"concurrency={self.concurrency})")

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed_query("dimension probe")  # a model we do not know: ask the service once
        assert self._dimension is not None
        return self._dimension

    @property
    def unavailable(self) -> bool:
        """True while the circuit breaker is open: calls fail at once with EmbeddingServiceUnavailable."""
        return self._breaker.is_open

    # -- lazy parts ----------------------------------------------------------------------------
    def _openai(self) -> OpenAI:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from openai import OpenAI

                    self._client = OpenAI(
                        api_key=self._api_key, base_url=self._endpoint, max_retries=0, timeout=self.timeout_seconds
                    )
        return self._client

    def _tokens(self) -> TokenCounter:
        if self._counter is None:
            from rag_assets.ingest.tokens import TokenCounter

            self._counter = TokenCounter.for_name("cl100k_base", self._tiktoken_cache_dir)
        return self._counter

    # -- Embedder ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return self._tokens().count(text)  # the embedding models add no special tokens

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = document_texts(texts)
        if len(texts) == 0:  # not `not texts`: a numpy array of strings has no truth value
            return np.empty((0, self.dimension), dtype=np.float32)
        prepared = self._prepare(texts)
        rows: list[np.ndarray | None] = [None] * len(prepared)
        for positions, vectors in self._run(self._plan([n for _, n in prepared]), [t for t, _ in prepared]):
            for position, vector in zip(positions, vectors):
                rows[position] = vector
        return np.stack(rows)  # type: ignore[arg-type]

    # -- batching ------------------------------------------------------------------------------
    def _prepare(self, texts: Sequence[str]) -> list[tuple[str, int]]:
        """(text as sent, its token count) per input: over-long ones cut, empty ones a space."""
        counter = self._tokens()
        prepared: list[tuple[str, int]] = []
        for text in texts:
            ids = counter.encode(text)
            if len(ids) > self.max_input_tokens:  # the API rejects, not truncates; match the local model instead
                text, ids = _cut(counter, ids, self.max_input_tokens)
            prepared.append((text or " ", max(len(ids), 1)))  # the API rejects empty strings
        return prepared

    def _plan(self, token_counts: list[int]) -> list[list[int]]:
        """Requests as lists of input positions: shortest first, at most batch_size inputs and
        max_batch_tokens tokens each."""
        requests: list[list[int]] = []
        request: list[int] = []
        tokens = 0
        for position in sorted(range(len(token_counts)), key=token_counts.__getitem__):
            count = token_counts[position]
            if request and (len(request) >= self.batch_size or tokens + count > self.max_batch_tokens):
                requests.append(request)
                request, tokens = [], 0
            request.append(position)
            tokens += count
        if request:
            requests.append(request)
        return requests

    def _run(self, requests: list[list[int]], texts: list[str]) -> list[tuple[list[int], np.ndarray]]:
        """Send the requests, up to `concurrency` at once; the first failure stops the rest."""
        cancel = threading.Event()
        failures: list[BaseException] = []

        def send(positions: list[int]) -> np.ndarray:
            try:
                return self._embed_batch([texts[p] for p in positions], cancel)
            except _Cancelled:
                raise
            except BaseException as exc:
                with self._lock:
                    failures.append(exc)
                cancel.set()  # requests not yet sent are not sent
                raise

        if len(requests) == 1:  # a query or a small document: no thread
            return [(requests[0], send(requests[0]))]
        with ThreadPoolExecutor(min(self.concurrency, len(requests)), thread_name_prefix="openai-embed") as pool:
            futures = [pool.submit(send, positions) for positions in requests]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:
                cancel.set()  # interrupted: the workers stop before the pool drains
                raise
            finally:
                if cancel.is_set():
                    for future in futures:
                        future.cancel()
        # the pool has drained: requests in flight at the failure finished (or stopped) first
        if failures:
            # an open breaker says more than the request that failed first: the service is down
            raise next((f for f in failures if isinstance(f, EmbeddingServiceUnavailable)), failures[0])
        return [(positions, future.result()) for positions, future in zip(requests, futures)]

    # -- one request ---------------------------------------------------------------------------
    def _embed_batch(self, batch: list[str], cancel: threading.Event) -> np.ndarray:
        import openai

        attempt = 0
        while True:
            attempt += 1
            self._wait_for_gate(cancel)
            probe = self._breaker.before_attempt()
            try:
                vectors = self._request(batch)
            except Exception as exc:
                if not _is_transient(exc):
                    if isinstance(exc, (openai.APIStatusError, _PermanentFailure)):
                        self._breaker.record_answer()  # the service is up; it refused this request
                        raise EmbeddingError(self._rejected(exc)) from None
                    raise
                if probe or attempt >= self.max_retries:  # counted even if another request failed first
                    message = self._failed(exc, attempt)
                    opened = self._breaker.record_failure(message, probe=probe)
                    raise (opened or EmbeddingError(message)) from None
                if cancel.is_set():
                    raise _Cancelled() from None
                delay = self._backoff(attempt, exc)
                log.warning(
                    "OpenAI embeddings attempt %d/%d failed (%s); retrying in %.2f s",
                    attempt, self.max_retries, self._scrub(describe(exc)), delay,
                )
                if getattr(exc, "status_code", None) == 429 or retry_after(exc) is not None:
                    self._close_gate(delay)  # every worker waits, not only this one
                elif cancel.wait(delay):
                    raise _Cancelled() from None
                continue
            self._breaker.record_answer()
            return vectors

    def _close_gate(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    def _wait_for_gate(self, cancel: threading.Event) -> None:
        while True:
            if cancel.is_set():
                raise _Cancelled()
            with self._lock:
                remaining = self._not_before - time.monotonic()
            if remaining <= 0:
                return
            cancel.wait(remaining)

    def _request(self, batch: list[str]) -> np.ndarray:
        import openai

        try:
            # base64: a quarter of the JSON size; decoded and checked by us, not by the client
            response = self._openai().embeddings.create(model=self.model_name, input=batch, encoding_format="base64")
        except (openai.APIResponseValidationError, ValueError) as exc:  # unparseable body (ValueError: bad JSON)
            raise MalformedResponse(f"unparseable response: {type(exc).__name__}") from exc
        matrix = vectors_of(response, len(batch))
        size = matrix.shape[1]
        with self._lock:
            if self._dimension is None:
                self._dimension = size
        if size != self._dimension:
            raise _PermanentFailure(f"the service returned {size}-d vectors, expected {self._dimension}")
        return l2_normalise(matrix)

    def _backoff(self, attempt: int, exc: BaseException) -> float:
        # exponential with "equal jitter": spreads concurrent clients, never collapses to zero
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        delay = random.uniform(ceiling / 2, ceiling)
        asked = retry_after(exc)
        if asked is not None:
            delay = max(delay, min(asked, self.backoff_max))
        return delay

    # -- messages ------------------------------------------------------------------------------
    def _failed(self, exc: BaseException, attempts: int) -> str:
        import openai

        if isinstance(exc, openai.APIStatusError):
            reason = f"HTTP {exc.status_code}"
        elif isinstance(exc, openai.APITimeoutError):
            reason = f"timeout after {self.timeout_seconds:g} s"
        elif isinstance(exc, openai.APIConnectionError):
            reason = "connection error"
        else:
            reason = "malformed response"
        return (
            f"OpenAI embeddings request failed after {attempts} attempt(s) ({reason}), "
            f"model {self.model_name!r}: {self._scrub(error_message(exc))}"
        )

    def _rejected(self, exc: BaseException) -> str:
        if isinstance(exc, _PermanentFailure):
            return f"OpenAI embeddings for model {self.model_name!r}: {self._scrub(str(exc))}"
        status = getattr(exc, "status_code", None)
        hint = {
            401: "check OPENAI_API_KEY",
            403: "check the key's project and permissions",
            404: "check RAG_EMBEDDING_MODEL and OPENAI_BASE_URL",
        }.get(status, "the request was rejected")  # type: ignore[arg-type]
        return (
            f"OpenAI embeddings request rejected with HTTP {status} (not retried; {hint}), "
            f"model {self.model_name!r}: {self._scrub(error_message(exc))}"
        )

    def _scrub(self, text: str) -> str:
        text = scrub_secrets(text, url_secrets(self.base_url))  # a server may echo the URL's user:password
        return _KEY_LIKE.sub("sk-***", text.replace(self._api_key, "***"))


def _host(url: str) -> str:
    """host[:port] of a URL: what messages may name (never a path, query or user:password)."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    host = parts.hostname or "unknown host"
    return f"{host}:{parts.port}" if parts.port else host


def _is_transient(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
    return isinstance(exc, (openai.APIConnectionError, MalformedResponse))  # timeouts are connection errors


def _cut(counter: TokenCounter, ids: list[int], limit: int) -> tuple[str, list[int]]:
    """The longest prefix of the text `ids` encode that re-encodes to at most `limit` tokens.

    Decoding a cut that falls inside a multi-byte character yields U+FFFD, which can re-encode to
    more tokens than were kept; cut further until the text really fits.
    """
    keep = limit
    while True:
        text = counter.decode(ids[:keep])
        again = counter.encode(text)
        if len(again) <= limit or keep <= 1:
            return text, again
        keep -= len(again) - limit


