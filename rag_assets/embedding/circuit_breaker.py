"""The circuit breaker of a remote embedding service, shared by the workers of one embedder.

`threshold` requests in a row that failed after all their retries open it; then every call fails at
once with EmbeddingServiceUnavailable (naming the host, the count and the last error) instead of
spending a retry budget per document. After `cooldown_seconds` attempts go through again: the first
answer closes it, a failure re-opens it at once.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from rag_assets.errors import EmbeddingServiceUnavailable


class CircuitBreaker:
    """Consecutive failed requests (each after its retries) of one endpoint, across all workers.

    closed --(`threshold` failures in a row)--> open: every attempt fails at once
    --(`cooldown_seconds`)--> half-open: attempts go through; the first failure re-opens it without
    retrying, and any answer (a success, or a refusal such as a 400) closes it.
    """

    def __init__(self, endpoint: str, threshold: int, cooldown_seconds: float,
                 clock: Callable[[], float] = time.monotonic):
        self.endpoint = endpoint
        self.threshold = threshold
        self.cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._last_error = ""
        self._opened_at: float | None = None

    @property
    def is_open(self) -> bool:
        """True while calls fail at once (open, cool-down not over)."""
        with self._lock:
            return self._opened_at is not None and self._clock() - self._opened_at < self.cooldown_seconds

    def before_attempt(self) -> bool:
        """Raise EmbeddingServiceUnavailable while open; True if this attempt is a half-open probe."""
        with self._lock:
            if self._opened_at is None:
                return False
            if self._clock() - self._opened_at < self.cooldown_seconds:
                raise self._unavailable()
            return True

    def record_answer(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None

    def record_failure(self, message: str, *, probe: bool) -> EmbeddingServiceUnavailable | None:
        """Count a failed request; the error to raise instead of `message` when this opened the breaker."""
        with self._lock:
            self._failures += 1
            self._last_error = message
            if probe or self._failures >= self.threshold:
                self._opened_at = self._clock()
                return self._unavailable()
            return None

    def _unavailable(self) -> EmbeddingServiceUnavailable:
        assert self._opened_at is not None
        remaining = max(0.0, self.cooldown_seconds - (self._clock() - self._opened_at))
        return EmbeddingServiceUnavailable(
            f"embedding service {self.endpoint} is unavailable: {self._failures} request(s) in a row failed after "
            f"their retries, the last with: {self._last_error} -- every embedding call fails at once for the next "
            f"{remaining:.0f} s instead of retrying per document (RAG_OPENAI_BREAKER_FAILURES={self.threshold}, "
            f"RAG_OPENAI_BREAKER_COOLDOWN_SECONDS={self.cooldown_seconds:g})",
            endpoint=self.endpoint, failures=self._failures, last_error=self._last_error,
        )
