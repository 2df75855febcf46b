"""Small thread-safe caches for retrieval: an LRU, an LRU with a time-to-live, and a result cache
that is dropped whole when the index generation changes.

(cachetools is not a dependency of this project; these few lines do what is needed.)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Hashable

_MISSING = object()


class LRUCache:
    """At most ``maxsize`` entries; the least recently used one is evicted first."""

    def __init__(self, maxsize: int):
        if maxsize <= 0:
            raise ValueError(f"cache size must be positive, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            value = self._lookup(key)
            if value is _MISSING:
                self.misses += 1
                return default
            self.hits += 1
            return value

    def _lookup(self, key: Hashable) -> Any:
        if key not in self._data:
            return _MISSING
        self._data.move_to_end(key)
        return self._data[key]

    def set(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return self._lookup(key) is not _MISSING


class TTLCache(LRUCache):
    """An LRU whose entries expire ``ttl`` seconds after they were set (``clock`` is injectable for tests)."""

    def __init__(self, maxsize: int, ttl: float, clock: Callable[[], float] = time.monotonic):
        super().__init__(maxsize)
        self.ttl = ttl
        self.clock = clock

    def _lookup(self, key: Hashable) -> Any:
        entry = self._data.get(key, _MISSING)
        if entry is _MISSING:
            return _MISSING
        expires, value = entry
        if self.clock() >= expires:
            del self._data[key]
            return _MISSING
        self._data.move_to_end(key)
        return value

    def set(self, key: Hashable, value: Any) -> None:
        if self.ttl <= 0:
            return  # caching disabled
        super().set(key, (self.clock() + self.ttl, value))


class GenerationCache:
    """A TTL/LRU cache of query results valid for one index generation only.

    ``get``/``set`` take the current generation; a different generation than the one the entries
    were stored under drops every entry first (an ingest changed the index, so every cached result
    may be stale).
    """

    def __init__(self, maxsize: int, ttl: float, clock: Callable[[], float] = time.monotonic):
        self._cache = TTLCache(maxsize, ttl, clock)
        self._generation: str | None = None
        self._lock = threading.Lock()
        self.invalidations = 0

    def _check(self, generation: str) -> None:
        with self._lock:
            if generation != self._generation:
                if self._generation is not None and len(self._cache):
                    self.invalidations += 1
                self._cache.clear()
                self._generation = generation

    def get(self, key: Hashable, generation: str, default: Any = None) -> Any:
        self._check(generation)
        return self._cache.get(key, default)

    def set(self, key: Hashable, generation: str, value: Any) -> None:
        self._check(generation)
        self._cache.set(key, value)

    def clear(self) -> None:
        self._cache.clear()

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    def __len__(self) -> int:
        return len(self._cache)
