"""OpenAI embeddings (or any OpenAI-compatible server via OPENAI_BASE_URL).

The client's own retries are off: ours (tenacity) retry 429/5xx/timeouts/connection errors and
malformed responses with jittered exponential backoff, never 400/401/403/404, and end in an
EmbeddingError that names the status and the attempts. The API key never appears in a message,
a log line or a repr.
"""

from __future__ import annotations

import base64
import binascii
import logging
import random
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from rag_assets.config import DEFAULT_OPENAI_MODEL, Settings
from rag_assets.embedding.base import l2_normalise
from rag_assets.errors import ConfigurationError, EmbeddingError
from rag_assets.openai_errors import describe, error_message, retry_after

if TYPE_CHECKING:
    from openai import OpenAI

    from rag_assets.tokens import TokenCounter

log = logging.getLogger(__name__)

KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
MAX_INPUT_TOKENS = 8191  # per input, all three models
MAX_TOKENS_PER_REQUEST = 300_000  # OpenAI rejects a request whose inputs sum to more
_RETRYABLE_STATUS = frozenset({408, 409, 429})  # plus every 5xx
_KEY_LIKE = re.compile(r"sk-[A-Za-z0-9_\-*]{6,}")


class _MalformedResponse(Exception):
    """A 200 answer we cannot use: retried like a transient failure."""


class _PermanentFailure(Exception):
    """Retrying cannot help (e.g. the service changed the vector size)."""


class OpenAIEmbedder:
    """Batched, retried calls to POST /embeddings; unit float32 vectors in input order."""

    max_input_tokens: int = MAX_INPUT_TOKENS

    def __init__(
        self,
        api_key: str | None,
        model_name: str = DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        batch_size: int = 100,
        max_retries: int = 5,
        timeout_seconds: float = 30.0,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        tiktoken_cache_dir: Path | None = None,
    ):
        if not api_key or not api_key.strip():
            raise ConfigurationError(
                "OPENAI_API_KEY is not set, and the OpenAI embedder (RAG_EMBEDDER=openai) needs it: "
                "export OPENAI_API_KEY=sk-... (or put it in .env), or set RAG_EMBEDDER=local for the offline model"
            )
        if batch_size <= 0 or max_retries <= 0:
            raise ValueError(f"batch_size and max_retries must be positive, got {batch_size} and {max_retries}")
        self.model_name = model_name
        self.base_url = base_url or None
        self.batch_size = batch_size
        self.max_retries = max_retries  # total attempts per batch, the first one included
        self.timeout_seconds = timeout_seconds
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._api_key = api_key.strip()
        self._tiktoken_cache_dir = tiktoken_cache_dir
        self._dimension: int | None = KNOWN_DIMENSIONS.get(model_name)
        self._client: OpenAI | None = None
        self._counter: TokenCounter | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> "OpenAIEmbedder":
        kwargs: dict[str, Any] = dict(
            api_key=settings.openai_api_key,
            model_name=settings.model_name,
            base_url=settings.openai_base_url,
            max_retries=settings.openai_max_retries,
            timeout_seconds=settings.openai_timeout_seconds,
            tiktoken_cache_dir=settings.cache_dir / "tiktoken",
        )
        kwargs.update(overrides)
        return cls(**kwargs)

    def __repr__(self) -> str:  # deliberately without the key
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIEmbedder(model_name={self.model_name!r}{where}, batch_size={self.batch_size})"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed_query("dimension probe")  # a model we do not know: ask the service once
        assert self._dimension is not None
        return self._dimension

    # -- lazy parts ----------------------------------------------------------------------------
    def _openai(self) -> OpenAI:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from openai import OpenAI

                    self._client = OpenAI(
                        api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_seconds
                    )
        return self._client

    def _tokens(self) -> TokenCounter:
        if self._counter is None:
            from rag_assets.tokens import TokenCounter

            self._counter = TokenCounter.for_name("cl100k_base", self._tiktoken_cache_dir)
        return self._counter

    # -- Embedder ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return self._tokens().count(text)  # the embedding models add no special tokens

    def fits(self, text: str) -> bool:
        return self.count_tokens(text) <= self.max_input_tokens

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string (use embed_query)")
        if len(texts) == 0:  # not `not texts`: a numpy array of strings has no truth value
            return np.empty((0, self.dimension), dtype=np.float32)
        parts = [self._embed_batch(batch) for batch in self._batches(texts)]
        return np.concatenate(parts, axis=0)

    # -- internals -----------------------------------------------------------------------------
    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        """At most batch_size inputs and MAX_TOKENS_PER_REQUEST tokens per request."""
        counter = self._tokens()
        batches: list[list[str]] = []
        batch: list[str] = []
        batch_tokens = 0
        for text in texts:
            ids = counter.encode(text)
            if len(ids) > self.max_input_tokens:  # the API rejects, not truncates; match the local model instead
                text, ids = _cut(counter, ids, self.max_input_tokens)
            text = text or " "  # the API rejects empty strings
            if batch and (len(batch) >= self.batch_size or batch_tokens + len(ids) > MAX_TOKENS_PER_REQUEST):
                batches.append(batch)
                batch, batch_tokens = [], 0
            batch.append(text)
            batch_tokens += len(ids)
        if batch:
            batches.append(batch)
        return batches

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        import openai

        attempts = 0
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries),
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    return self._request(batch)
        except openai.APIStatusError as exc:
            status = exc.status_code
            if _is_transient(exc):
                raise EmbeddingError(self._failed(f"HTTP {status}", attempts, exc)) from None
            hint = {
                401: "check OPENAI_API_KEY",
                403: "check the key's project and permissions",
                404: "check RAG_EMBEDDING_MODEL and OPENAI_BASE_URL",
            }.get(status, "the request was rejected")
            raise EmbeddingError(
                f"OpenAI embeddings request rejected with HTTP {status} (not retried; {hint}), "
                f"model {self.model_name!r}: {self._scrub(error_message(exc))}"
            ) from None
        except openai.APITimeoutError as exc:
            reason = f"timeout after {self.timeout_seconds:g} s"
            raise EmbeddingError(self._failed(reason, attempts, exc)) from None
        except openai.APIConnectionError as exc:
            raise EmbeddingError(self._failed("connection error", attempts, exc)) from None
        except _MalformedResponse as exc:
            raise EmbeddingError(self._failed("malformed response", attempts, exc)) from None
        except _PermanentFailure as exc:
            raise EmbeddingError(f"OpenAI embeddings for model {self.model_name!r}: {self._scrub(str(exc))}") from None
        raise AssertionError("unreachable: tenacity either returned or raised")  # pragma: no cover

    def _request(self, batch: list[str]) -> np.ndarray:
        import openai

        try:
            # base64: a quarter of the JSON size; decoded and checked by us, not by the client
            response = self._openai().embeddings.create(model=self.model_name, input=batch, encoding_format="base64")
        except (openai.APIResponseValidationError, ValueError) as exc:  # unparseable body (ValueError: bad JSON)
            raise _MalformedResponse(f"unparseable response: {type(exc).__name__}") from exc
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise _MalformedResponse("no 'data' list in the response")
        if len(data) != len(batch):
            raise _MalformedResponse(f"{len(data)} embeddings for {len(batch)} inputs")
        rows: list[np.ndarray | None] = [None] * len(batch)
        for position, item in enumerate(data):
            index = getattr(item, "index", position)
            if not isinstance(index, int) or not 0 <= index < len(batch) or rows[index] is not None:
                raise _MalformedResponse(f"bad or repeated index {index!r}")
            rows[index] = _decode(getattr(item, "embedding", None))
        sizes = {row.shape[0] for row in rows if row is not None}
        if len(sizes) != 1:
            raise _MalformedResponse(f"embeddings of different sizes {sorted(sizes)}")
        size = sizes.pop()
        if self._dimension is None:
            self._dimension = size
        elif size != self._dimension:
            raise _PermanentFailure(f"the service returned {size}-d vectors, expected {self._dimension}")
        return l2_normalise(np.stack(rows))  # type: ignore[arg-type]

    def _wait(self, state: RetryCallState) -> float:
        # exponential with "equal jitter": spreads concurrent clients, never collapses to zero
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (state.attempt_number - 1))
        delay = random.uniform(ceiling / 2, ceiling)
        asked = retry_after(state.outcome.exception() if state.outcome else None)
        if asked is not None:
            delay = max(delay, min(asked, self.backoff_max))
        return delay

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "OpenAI embeddings attempt %d/%d failed (%s); retrying in %.2f s",
            state.attempt_number, self.max_retries, self._scrub(describe(exc)), wait,
        )

    def _failed(self, reason: str, attempts: int, exc: BaseException) -> str:
        return (
            f"OpenAI embeddings request failed after {attempts} attempt(s) ({reason}), "
            f"model {self.model_name!r}: {self._scrub(error_message(exc))}"
        )

    def _scrub(self, text: str) -> str:
        return _KEY_LIKE.sub("sk-***", text.replace(self._api_key, "***"))


def _is_transient(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
    return isinstance(exc, (openai.APIConnectionError, _MalformedResponse))  # timeouts are connection errors


def _decode(embedding: object) -> np.ndarray:
    try:
        if isinstance(embedding, str):
            vector = np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
        elif isinstance(embedding, list):  # servers that ignore encoding_format=base64
            vector = np.asarray(embedding, dtype=np.float32)
        else:
            raise _MalformedResponse(f"embedding is {type(embedding).__name__}")
    except (binascii.Error, ValueError, TypeError) as exc:
        raise _MalformedResponse(f"undecodable embedding: {type(exc).__name__}") from exc
    if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
        raise _MalformedResponse("embedding is not a finite, non-empty vector")
    return vector


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


