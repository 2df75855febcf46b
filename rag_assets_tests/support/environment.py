"""The environment of a test's own state: every RAG_* path under one folder, and what a child process
(`rag`, `dagster`) gets."""

import os
from pathlib import Path

# Choices a developer may have exported that must not leak into a test's own setup.
USER_CHOICES = ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                "RAG_LANGUAGES", "RAG_DEFAULT_LANGUAGE", "RAG_VERSIONS", "RAG_INCLUDE", "RAG_EXCLUDE", "RAG_IGNORE_FILES")


def state_env(root: Path) -> dict[str, str]:
    """Every RAG_* path under root (docs in root/docs)."""
    return {
        "RAG_DOCS_DIR": str(root / "docs"),
        "RAG_CHROMA_PATH": str(root / "chroma"),
        "RAG_STATE_DIR": str(root / "state"),
        "RAG_CACHE_DIR": str(root / "cache"),
        "RAG_EVAL_DIR": str(root / "eval"),
        "RAG_EVAL_RESULTS_DIR": str(root / "eval_results"),
        "RAG_CORPORA_DIR": str(root / "corpora"),
    }


def subprocess_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment for a `rag`/`dagster` child process whose state all lives under root."""
    env = {k: v for k, v in os.environ.items() if k not in USER_CHOICES}
    env.update(state_env(root), **extra)
    return env
