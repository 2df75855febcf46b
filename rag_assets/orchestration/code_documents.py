"""Documents from code, through the same Dagster runs as files (RAGPipeline.ingest/delete_documents).

The documents are written into the docs folder's managed subfolder (rag_assets.ingest.documents_from_code),
then `runs.ingest(only_doc_paths=...)` registers their partitions and runs the per-document assets over
them, exactly as `rag ingest-doc` does: they show up in the UI as partitions and runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterable

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError
from rag_assets.ingest import documents_from_code
from rag_assets.models import IngestionResult


def _folder(settings: Settings) -> Path:
    name = settings.code_documents_folder.strip().strip("/")
    if not name or "/" in name or name.startswith("."):
        raise ConfigurationError(f"RAG_CODE_DOCUMENTS_FOLDER must be one visible folder name, got {name!r}")
    if not Path(settings.docs_dir).is_dir():
        raise FileNotFoundError(f"docs folder not found: {settings.docs_dir} (set RAG_DOCS_DIR)")
    return Path(settings.docs_dir) / name


def _same_target(settings: Settings) -> None:
    """The runs read the environment's configuration (as `rag ingest` does): a pipeline built for
    another index must not write this one."""
    env = Settings.from_env()
    for name in ("docs_dir", "chroma_path", "state_dir", "collection", "chroma_host"):
        if str(getattr(settings, name)) != str(getattr(env, name)):
            raise ConfigurationError(
                f"this pipeline's {name} ({getattr(settings, name)}) is not the environment's "
                f"({getattr(env, name)}): documents from code are ingested with the RAG_* environment, "
                "like `rag ingest`; set it for this process")


def ingest_documents(settings: Settings, documents: Iterable[Any]) -> IngestionResult:
    from rag_assets.orchestration.noop_check import dagster_home
    from rag_assets.orchestration.runs import ingest

    started = time.perf_counter()
    docs = documents_from_code.validate(documents)  # ValueError before anything is written
    _same_target(settings)
    dagster_home()
    doc_paths = documents_from_code.write(_folder(settings), docs)
    summary = ingest(only_doc_paths=doc_paths)
    warnings = []
    if summary.documents_processed + summary.documents_failed < len(doc_paths):
        warnings.append(f"{len(doc_paths) - summary.documents_processed - summary.documents_failed} document(s) "
                        "were already indexed with this content")
    return IngestionResult(
        job_id=summary.run_ids[0] if summary.run_ids else "",
        documents_processed=summary.documents_processed,
        documents_failed=summary.documents_failed,
        embedding_count=summary.embeddings_computed,
        errors=list(summary.errors),
        warnings=warnings,
        duration_seconds=round(time.perf_counter() - started, 3),
        doc_paths=doc_paths,
        run_ids=list(summary.run_ids),
    )


def delete_documents(settings: Settings, ids: Iterable[str]) -> dict:
    from rag_assets.orchestration.noop_check import dagster_home
    from rag_assets.orchestration.runs import ingest

    if ids is None or isinstance(ids, (str, bytes)):
        raise ValueError("ids are required: a list of document ids")
    ids = list(ids)
    if not ids or not all(isinstance(i, str) and i.strip() for i in ids):
        raise ValueError("ids are required: a non-empty list of non-empty strings")
    _same_target(settings)
    dagster_home()
    removed, unknown = documents_from_code.remove(_folder(settings), ids)
    summary = ingest(only_doc_paths=[]) if removed else None  # the catalog run removes their chunks
    return {"documents_deleted": summary.documents_deleted if summary else 0, "doc_paths": removed,
            "not_found": unknown, "vectors_deleted": summary.vectors_deleted if summary else 0}
