"""Documents from code, through the same Dagster runs as files (RAGPipeline.ingest/delete_documents).

The documents are written into the docs folder's managed subfolder (rag_assets.ingest.documents_from_code),
then `service.ingest(only_doc_paths=...)` runs the per-document assets over them in one run (their new
partitions registered first), exactly as `rag ingest-doc` does: they show up in the UI as partitions
and runs.

A document either ends indexed at its new version or leaves the folder as it was: one that cannot be
indexed (over RAG_MAX_FILE_BYTES, missing RAG_REQUIRED_METADATA: checked before anything is written;
anything its run failed on: its file put back afterwards) fails by name in the result, and a later
`rag ingest` finds nothing of it to fail on."""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.errors import (ConfigurationError, DeletionRefusedError, DocumentError, RagError, VectorDBUnavailableError,
                               VectorDBWriteError)
from rag_assets.ingest import documents_from_code
from rag_assets.ingest.document_metadata import GUARANTEED, MetadataPolicy, complete
from rag_assets.ingest.documents_from_code import Planned
from rag_assets.models import DocumentRef, IngestionResult
from rag_assets.orchestration.stopping import IngestInterrupted

log = logging.getLogger(__name__)


def _folder(settings: Settings) -> Path:
    name = settings.code_documents_folder.strip().strip("/")
    if not name or "/" in name or name.startswith("."):
        raise ConfigurationError(f"RAG_CODE_DOCUMENTS_FOLDER must be one visible folder name, got {name!r}")
    if not Path(settings.docs_dir).is_dir():
        raise FileNotFoundError(f"docs folder not found: {settings.docs_dir} (set RAG_DOCS_DIR)")
    return Path(settings.docs_dir) / name


def _runs_of(corpus: Corpus):
    """The corpus's Dagster objects for the settings the caller's pipeline was made with (the code
    location's own when it loaded the same corpus over the same settings; else built for them, as for
    `rag ingest --docs-dir`): a pipeline over Settings(...) ingests into its own index, whatever the
    environment says."""
    from rag_assets.orchestration.loaded_corpora import corpus_definitions

    return corpus_definitions(corpus)


def refusal(planned: Planned, settings: Settings, policy: MetadataPolicy) -> str | None:
    """Why this document cannot be indexed, known before its file is written: too large for a
    document, or metadata the configuration requires missing or not allowed (the parse stage's own
    check, run on the text the file would hold). None when it may go ahead."""
    size = len(planned.text.encode("utf-8"))
    if size > settings.max_file_bytes:
        return (f"{size:,} bytes with its frontmatter, over the {settings.max_file_bytes:,}-byte limit for a document "
                "(RAG_MAX_FILE_BYTES); nothing was written")
    if not (policy.required or policy.doc_types or "last_update_date" in planned.doc.metadata):
        return None
    try:
        _completed(planned, policy)
    except DocumentError as exc:
        return f"{exc.reason}; nothing was written"
    return None


def _completed(planned: Planned, policy: MetadataPolicy) -> dict:
    """The metadata the document will be indexed with (the parse stage's own completion, run on the
    text its file will hold); DocumentError when a requirement refuses it."""
    from rag_assets.ingest.frontmatter import parse_document

    ref = DocumentRef(doc_path=planned.doc_path, partition_key=planned.doc_path, absolute_path=str(planned.path),
                      module=None, chapter=None, size_bytes=len(planned.text.encode("utf-8")), mtime=0.0,
                      content_hash="")
    return complete(parse_document(planned.text, ref), None, policy, undated=dt.date.today().isoformat()).metadata


_FILLED_FROM = {"source": "its title", "doc_type": "its folder's, else the default", "last_update_date": "the day it was ingested"}


def invented(planned: Planned, policy: MetadataPolicy) -> str | None:
    """A warning naming the guaranteed metadata (source, doc_type, last_update_date) this document does
    not give and the values it will be indexed with instead; None when it gives them all."""
    missing = [key for key in GUARANTEED if planned.doc.metadata.get(key) in (None, "")]
    if not missing:
        return None
    filled = _completed(planned, policy)
    values = ", ".join(f"{key} {filled[key]!r} ({_FILLED_FROM[key]})" for key in missing)
    return (f"{planned.name}: no {', '.join(missing)} in its metadata: indexed with {values}; give them, or set "
            "RAG_REQUIRED_METADATA=source,doc_type,last_update_date to refuse such documents")


def ingest_documents(corpus: Corpus, documents: Iterable[Any]) -> IngestionResult:
    """Index documents from code into the corpus's index (RAGPipeline.ingest)."""
    from rag_assets.orchestration.noop_check import dagster_home
    from rag_assets.indexing.service import ingest

    started = time.perf_counter()
    settings = corpus.settings()
    docs = documents_from_code.validate(documents)  # ValueError before anything is written
    planned = documents_from_code.plan(_folder(settings), docs)  # ValueError: a path too long, an id on another's file
    policy = MetadataPolicy.from_settings(settings.ingest)
    errors: list[str] = []
    failed: list[Planned] = []
    going: list[Planned] = []
    made_up: dict[str, str] = {}  # doc_path -> the warning naming the metadata filled in for it
    for p in planned:
        reason = refusal(p, settings, policy)
        if reason is None:
            going.append(p)
            note = invented(p, policy)
            if note is not None:
                made_up[p.doc_path] = note
        else:
            log.error("%s: %s", p.name, reason)
            errors.append(f"{p.name}: {reason}")
            failed.append(p)
    summary = None
    if going:
        dagster_home()
        try:
            documents_from_code.write_planned(going)
            summary = ingest(only_doc_paths=[p.doc_path for p in going], corpus=_runs_of(corpus))
        except IngestInterrupted:
            # Ctrl-C / SIGTERM: what its finished runs indexed stays (stopping.py); only the others
            # are put back
            kept = _indexed_now(settings, going)
            for p in going:
                if p.doc_path not in kept:
                    _put_back(p)
            raise
        except VectorDBUnavailableError as exc:
            for p in going:  # not indexed: the folder as it was
                _put_back(p)
            if isinstance(exc, VectorDBWriteError):
                raise
            # the rules-bot contract's error for a write that cannot happen: `except VectorDBWriteError` catches it
            line = f"the vector store cannot be reached, nothing was indexed (the documents' files are put back): {exc}"
            log.error("%s", line)
            raise VectorDBWriteError(line) from exc
        except BaseException:
            for p in going:  # not indexed: the folder as it was
                _put_back(p)
            raise
        reasons = {e["doc_path"]: e["error"] for e in summary.errors}
        for p in going:
            if p.doc_path in reasons:
                _put_back(p)
                reason = reasons[p.doc_path].removeprefix(f"{p.doc_path}: ")
                errors.append(f"{p.name}: {reason}")
                failed.append(p)
        errors += [e["error"] for e in summary.errors if e["doc_path"] == "*"]  # a run that failed as a whole
    warnings = []
    unchanged = summary.documents_unchanged if summary else 0
    if unchanged:
        warnings.append(f"{unchanged} document(s) were already indexed with this content: nothing to do")
    if summary is not None:
        indexed = [p for p in going if p not in failed]
        for p in indexed:
            if p.doc_path in made_up:
                log.warning("%s", made_up[p.doc_path])
                warnings.append(made_up[p.doc_path])
        warnings += _structure_warnings(settings, indexed)
    run_ids = list(summary.run_ids) if summary else []
    return IngestionResult(
        job_id=run_ids[0] if run_ids else str(uuid.uuid4()),
        documents_processed=summary.documents_processed if summary else 0,
        documents_failed=len(failed),
        embedding_count=summary.embeddings_computed if summary else 0,
        errors=errors,
        warnings=warnings,
        duration_seconds=round(time.perf_counter() - started, 3),
        doc_paths=[p.doc_path for p in planned],
        run_ids=run_ids,
        document_ids=[p.doc.id for p in planned],
        failed_ids=[p.doc.id for p in failed],
    )


def _indexed_now(settings: Settings, going: list[Planned]) -> set[str]:
    """Those of these documents indexed at the content this ingest wrote (a stopped ingest's finished
    runs): current in every stage, no failure recorded."""
    from rag_assets.index.stage_store import StageStore
    from rag_assets.orchestration.fingerprints import stale_now
    from rag_assets.orchestration.loaded_corpora import index_resources

    try:
        stages = StageStore.for_settings(settings.paths)
        paths = [p.doc_path for p in going]
        refs = list(stages.catalog_by_doc_path(paths).values())
        stale, failed = stale_now(refs, stages, settings, index_resources()), stages.failures(paths)
    except Exception:  # noqa: BLE001 - unknown: every document is put back, as for any other failure
        return set()
    ours = {r.doc_path for r in refs if r.doc_path not in stale and r.doc_path not in failed}
    return {p.doc_path for p in going if p.doc_path in ours and _reads(p.path) == p.text}


def _reads(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _put_back(planned: Planned) -> None:
    """The document's file as it was before this ingest, unless someone wrote it since."""
    try:
        if planned.path.read_text(encoding="utf-8") != planned.text:
            return
    except FileNotFoundError:
        if planned.previous is None:
            return
    except OSError:
        return
    documents_from_code.restore(planned)


def _structure_warnings(settings: Settings, indexed: list[Planned]) -> list[str]:
    """Ambiguous markdown in these documents (blocks that never close), from their stage records,
    with lines counted in the content the caller gave."""
    from rag_assets.index.stage_store import BLOCKS, PARSED, StageStore, blocks_from_list
    from rag_assets.ingest.stages import unclosed_warnings

    if not indexed:
        return []
    stages = StageStore.for_settings(settings.paths)
    paths = [p.doc_path for p in indexed]
    blocks = stages.read_many(BLOCKS, paths)
    parsed = stages.read_many(PARSED, [p for p in paths if p in blocks])
    out = []
    for p in indexed:
        if p.doc_path not in blocks or p.doc_path not in parsed:
            continue
        # the body's first line in the caller's content: the lines the frontmatter took are not theirs
        frontmatter_lines = p.text.count("\n", 0, len(p.text) - len(_body(p)))
        start = parsed[p.doc_path]["payload"].get("body_start_line", 1) - frontmatter_lines
        out += unclosed_warnings(p.name, blocks_from_list(blocks[p.doc_path]["payload"]), start)
    return out


def _body(planned: Planned) -> str:
    content = planned.doc.content
    return content if content.endswith("\n") else content + "\n"


def delete_documents(corpus: Corpus, ids: Iterable[Any]) -> dict:
    """Delete these documents (their ids, strings or UUIDs): their files, then, in the catalog run,
    their chunks. A deletion by id is meant, however many documents it removes; when other documents
    vanished from the folder too and the deletion guard keeps them, nothing is deleted and
    DeletionRefusedError says why."""
    from rag_assets.orchestration.noop_check import dagster_home
    from rag_assets.indexing.service import ingest

    if ids is None or isinstance(ids, (str, bytes, uuid.UUID)):
        raise ValueError("ids are required: a list of document ids")
    ids = list(ids)
    if not ids:
        raise ValueError("ids are required: a non-empty list of document ids (strings or UUIDs)")
    settings = corpus.settings()
    removals, unknown = documents_from_code.plan_removal(_folder(settings), ids)  # ValueError for a bad id
    if not removals:
        return {"documents_deleted": 0, "doc_paths": [], "not_found": unknown, "vectors_deleted": 0}
    dagster_home()
    doc_paths = [r.doc_path for r in removals]
    for r in removals:
        r.path.unlink(missing_ok=True)
    try:
        summary = ingest(only_doc_paths=[], removing=doc_paths, corpus=_runs_of(corpus))  # the catalog run removes their chunks
    except BaseException:
        _restore_removed(removals)
        raise
    if summary.removal_refused:
        _restore_removed(removals)
        raise DeletionRefusedError(f"nothing was deleted: {summary.removal_refused}")
    from rag_assets.index.stage_store import StageStore

    left = set(StageStore.for_settings(settings.paths).headers(doc_paths))
    if left:
        raise RagError(f"{len(left)} document(s) still indexed after their deletion: {sorted(left)[:5]}; "
                       "run `rag ingest` to finish removing them")
    return {"documents_deleted": summary.documents_deleted, "doc_paths": doc_paths, "not_found": unknown,
            "vectors_deleted": summary.vectors_deleted}


def _restore_removed(removals) -> None:
    for r in removals:
        if not r.path.exists():
            documents_from_code.write_text(r.path, r.text)
