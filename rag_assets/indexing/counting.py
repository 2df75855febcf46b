"""An ingest's summary: each run's materialization metadata added up, every document asked for counted
once (unchanged, processed, failed or not started), and what the folder's scope left out."""

from __future__ import annotations

from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.scope import left_out_counts, named_translations
from rag_assets.models import Catalog, IngestSummary

def record_scope(summary: IngestSummary, stages: StageStore, look_scope: Catalog, partial: bool) -> None:
    """What this look left out of scope, for the summary and `rag corpora` (a moved-only look left
    out nothing new: noop_check hands the whole look over when a moved page's facts moved)."""
    if not partial:
        summary.left_out, summary.default_language = dict(left_out_counts(look_scope.left_out)), look_scope.default_language
        summary.languages_from = look_scope.languages_from
        summary.translations_left_out = named_translations(look_scope.left_out)
        stages.write_scope(look_scope)
    else:
        recorded = stages.read_scope() or {}
        summary.left_out = dict(recorded.get("left_out") or {})
        summary.default_language = str(recorded.get("default_language") or "")
        summary.languages_from = str(recorded.get("languages_from") or "")
        summary.translations_left_out = named_translations(dict(recorded.get("pages") or {}))


def count_run(summary: IngestSummary, run_id: str, meta: dict[str, dict], success: bool, error) -> None:
    """Add one documents run's materialization metadata to the ingest's summary."""
    summary.run_ids.append(run_id)
    by_asset = {key.rsplit("/", 1)[-1]: value for key, value in meta.items()}  # a corpus's keys carry its name
    index_meta = by_asset.get("vector_index", {})
    embed_meta = by_asset.get("chunk_embeddings", {})
    chunk_meta = by_asset.get("document_chunks", {})
    summary.chunks_written += int(index_meta.get("vectors_written", 0))
    summary.vectors_deleted += int(index_meta.get("vectors_deleted", 0))
    summary.embeddings_computed += int(embed_meta.get("embeddings_computed", 0))
    summary.embeddings_reused += int(embed_meta.get("embeddings_reused", 0))
    summary.embedding_seconds = round(summary.embedding_seconds + float(embed_meta.get("embedding_seconds", 0.0)), 3)
    summary.chunks_truncated += int(embed_meta.get("chunks_truncated_by_model", 0))
    summary.blocks_split += int(chunk_meta.get("blocks_split", 0))
    summary.count_unrendered(by_asset.get("parsed_documents", {}).get("unrendered_by_name"))
    if not success:
        summary.errors.append({"doc_path": "*", "error": f"run {run_id} failed: {error()}"})


def count_documents(summary: IngestSummary, stages: StageStore, todo, failed, pending, vanished: int,
                     before: dict[str, str], refused: int, asked: int) -> None:
    """Every document asked for (`asked`) counted once in `summary`: unchanged (no work), processed
    (current now), failed (`refused` by discovery, its run failed, or changed meanwhile), or not
    started (a stopped ingest); the failures named."""
    failures = stages.failures([r.doc_path for r in failed]) if failed else {}
    summary.errors += [{"doc_path": r.doc_path, "error": failures[r.doc_path]["error"]} for r in failed]
    # stopped: what is not indexed and has no failure of its own was not started (or its run was
    # stopped), not failed; the next `rag ingest` does it
    not_started = pending if summary.interrupted else []
    pending = [] if summary.interrupted else pending
    summary.errors += [{"doc_path": r.doc_path, "error": (
        "file changed while being ingested; the next run indexes the new version"
        if r.content_hash != before[r.doc_path] else
        "not indexed: its run failed; the next `rag ingest` continues")} for r in pending]
    summary.documents_unchanged = asked - len(todo)
    summary.documents_processed = len(todo) - vanished - len(failed) - len(pending) - len(not_started)
    summary.documents_failed = refused + len(failed) + len(pending)
    summary.documents_not_started = len(not_started)

