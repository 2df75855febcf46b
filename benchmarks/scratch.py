"""A scratch rag setup under one folder (state, stores, caches, corpora, Dagster home), for the
benchmarks run by hand: nothing of the repository's data/ is read or written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scratch_env(work: Path, docs: Path | None = None, **extra: str) -> dict[str, str]:
    """`work` emptied, a Dagster home in it (the project's dagster.yaml, storage under `work`), and the
    environment that points every RAG_* path into it; `docs` is the default corpus's folder
    (`work/default_docs`, made empty, when None)."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "home").mkdir(parents=True)
    (work / "home" / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text().replace("data/dagster", str(work / "dagster")))
    if docs is None:
        docs = work / "default_docs"
        docs.mkdir()
    return {**os.environ, "RAG_DOCS_DIR": str(docs), "RAG_CHROMA_PATH": str(work / "chroma"),
            "RAG_STATE_DIR": str(work / "state"), "RAG_CACHE_DIR": str(work / "cache"),
            "RAG_CORPORA_DIR": str(work / "corpora"), "RAG_EVAL_DIR": str(work / "eval"),
            "RAG_EVAL_RESULTS_DIR": str(work / "eval_results"), "DAGSTER_HOME": str(work / "home"),
            "RAG_LOG_LEVEL": "ERROR", **extra}
