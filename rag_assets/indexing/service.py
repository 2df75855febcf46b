"""`ingest`: bring a corpus's index up to date with its folder, through the corpus's Dagster runs (they
land in the instance's event log, so every `rag ingest` shows up in the UI like a run launched there).

An ingest: a stat-level look at the folder; the catalog run only if something moved (it registers
new documents as partitions and removes vanished ones: catalog_runs); then runs over the stale
documents' partition ranges (document_runs), one after the other, so a killed ingest keeps every
finished run and the next one continues from there.

Stopping (orchestration/stopping.py): Ctrl-C or SIGTERM stops the run in progress (it ends CANCELED,
its finished stages kept), starts no further run, and `ingest` raises IngestInterrupted with a summary
in which the documents not indexed are "not started", not failed; a second signal ends `rag ingest` at
once.

Concurrency: one ingest at a time per corpus. `ingest()` holds the corpus's `<state_dir>/ingest.lock`
from discovery to the last run (locks), so a second `rag ingest` of the same corpus started meanwhile
waits, then finds everything current. Each corpus has an embedded Chroma store of its own
(rag_assets.corpus; one writing process per store, upstream chroma #7040), whose writer lock the
ingest holds too; each process opens Chroma only once it holds the lock, so it never works from a
stale view. So two corpora's ingests, and an ingest from code into a third, never wait for each
other. Runs launched from the UI/daemon are serialised per corpus by the run queue (dagster.yaml's
tag limits on `rag/index`), and their Chroma writes wait for a CLI ingest of the same corpus:
VectorStoreResource.writer takes the store's writer lock (re-entrant within the CLI's own in-process
runs). A corpus whose vectors are still in the default corpus's store (made before stores were per
corpus) is moved into its own first (orchestration/corpus_stores.py).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from contextlib import nullcontext
from typing import Sequence

from rag_assets.errors import ConfigurationError
from rag_assets.index.chroma_store import open_in_background
from rag_assets.index.stage_store import INDEXED, StageStore
from rag_assets.ingest.catalog import catalog_run_needed, content_changed, touched_documents, vanished_documents
from rag_assets.ingest.discovery import discover_for
from rag_assets.models import IngestSummary
from rag_assets.orchestration import stopping
from rag_assets.orchestration.corpus_definitions import CorpusDefinitions
from rag_assets.orchestration.corpus_stores import move_to_own_store
from rag_assets.orchestration.definitions import DEFAULT
from rag_assets.orchestration.execution import signal_name
from rag_assets.orchestration.instance import get_instance
from rag_assets.orchestration.noop_check import FolderLook, run_storage_state
from rag_assets.orchestration.resources import store_writer_lock
from rag_assets.orchestration.run_records import fail_orphaned_runs, record_ingest
from rag_assets.progress import OVERALL, ProgressEvent, publish
from rag_assets.retrieval.snapshot_writer import ensure_snapshot

from .catalog_runs import register_added, run_catalog
from .counting import count_documents, record_scope
from .document_runs import documents_to_run, not_current, run_documents
from .locks import holding, ingest_lock
from .noop_token import remember_if_current

def ingest(
    only_doc_paths: Sequence[str] | None = None, *, allow_mass_delete: bool = False, workers: int = 1,
    corpus: CorpusDefinitions = DEFAULT, look: FolderLook | None = None, removing: Sequence[str] = (),
) -> IngestSummary:
    """Discover, register partitions, process the documents that changed; the summary the CLI prints.

    `only_doc_paths`: process only these documents; those of them that are new, when new files are all
    the folder changed, are registered here rather than by a catalog run (one run, not two).
    `removing`: documents deleted on purpose (RAGPipeline.delete_documents): when they are all that
    vanished, the deletion guard lets the catalog run remove them, however many they are.

    One ingest at a time per corpus (see the module docstring): a concurrent call for the same
    corpus waits; other corpora's never do. With an embedded store the ingest also holds the
    corpus's store's writer lock throughout (its process keeps the store open), so runs launched
    from the UI or the daemon for that corpus wait for it; `workers` > 1 needs a Chroma server,
    which takes several writers. `look` (noop_check.check_noop's) saves a second look at the
    folder, unless this ingest had to wait for another one.

    Ctrl-C or SIGTERM (received by the main thread: stopping.py) stops it: no further run starts,
    and IngestInterrupted (a KeyboardInterrupt) carries the summary of what was kept."""
    settings = corpus.corpus.settings()
    if workers < 1:
        raise ConfigurationError(f"--workers must be at least 1, got {workers}")
    if workers > 1 and not settings.chroma_host:
        raise ConfigurationError(
            f"--workers {workers} needs a Chroma server (set CHROMA_HOST): the embedded store at "
            f"{settings.chroma_path} admits one writing process"
        )
    started = time.perf_counter()
    summary = IngestSummary()
    with stopping.stop_on_signals() as watch:
        try:
            with ingest_lock(settings.state_dir, settings.ingest_lock_timeout) as waited:
                summary.lock_wait_seconds = round(waited, 3)
                _ingest_corpus(summary, only_doc_paths, allow_mass_delete, workers, corpus, None if waited else look,
                               watch, removing)
        except KeyboardInterrupt:  # also while waiting for the lock, or before any run
            summary.interrupted = summary.interrupted or signal_name(watch)
        finally:
            summary.duration_seconds = round(time.perf_counter() - started, 3)
    if summary.interrupted:
        raise stopping.IngestInterrupted(summary, getattr(signal, summary.interrupted, signal.SIGINT))
    return summary


def _ingest_corpus(summary: IngestSummary, only_doc_paths, allow_mass_delete: bool, workers: int,
                   corpus: CorpusDefinitions, look: FolderLook | None, watch: stopping.StopWatch | None,
                   removing: Sequence[str] = ()) -> None:
    """The ingest under the corpus's ingest lock: its store moved into its own folder if need be,
    then held (embedded: its writer lock), and the record of how the ingest ended."""
    settings = corpus.corpus.settings()
    stages = StageStore.for_settings(settings.paths)
    record_ingest(stages, {"outcome": "running", "pid": os.getpid(), "host": socket.gethostname()})
    outcome = "failed"
    try:
        moved = move_to_own_store(corpus.corpus) if workers == 1 else None
        if moved is not None:
            look = None
            _say_moved(moved)
            settings = corpus.corpus.settings()  # its own store from now on
        writer = store_writer_lock(settings) if workers == 1 else None
        with (holding(writer, "another process is writing the vector store", settings.ingest_lock_timeout)
              if writer else nullcontext()):
            # the store is this process's alone from here: its collection loads while the runs start
            opening = open_in_background(settings) if writer is not None else None
            try:
                _ingest_locked(summary, only_doc_paths, allow_mass_delete, workers, corpus, look, watch, removing)
                if not summary.interrupted:
                    # runs commit the search snapshot; an index an earlier version wrote gets it here, not from a query
                    ensure_snapshot(settings)
            finally:
                if opening is not None:
                    opening.join()
        outcome = "interrupted" if summary.interrupted else "finished"
    except KeyboardInterrupt:
        outcome = "interrupted"
        raise
    finally:
        record_ingest(stages, {"outcome": outcome, "documents_processed": summary.documents_processed,
                                "documents_failed": summary.documents_failed,
                                "documents_not_started": summary.documents_not_started,
                                "signal": summary.interrupted, "run_ids": summary.run_ids[-20:]})


def _say_moved(moved) -> None:
    if moved.shared_with_default:
        print(f"rag: corpus {moved.corpus} shared the default corpus's collection; it has a store of its own now "
              f"({moved.target}) and is indexed there from its embedding cache; {moved.vectors_removed_from_default} of "
              f"its vectors were removed from the default corpus's", file=sys.stderr, flush=True)
    else:
        print(f"rag: corpus {moved.corpus} moved into a store of its own ({moved.target}): {moved.vectors_copied} vectors "
              "copied, nothing embedded again", file=sys.stderr, flush=True)


def _ingest_locked(summary: IngestSummary, only_doc_paths: Sequence[str] | None, allow_mass_delete: bool, workers: int,
                   corpus: CorpusDefinitions, look: FolderLook | None = None,
                   watch: stopping.StopWatch | None = None, removing: Sequence[str] = ()) -> IngestSummary:
    """The ingest, its locks held; fills `summary` as it goes (what a stop leaves of it is true)."""
    settings = corpus.corpus.settings()
    instance = get_instance()
    if watch is not None:
        watch.instance = instance  # an interrupted run is marked canceling there (interrupt_logging)
    fail_orphaned_runs(instance)
    runs_at_start = run_storage_state()
    stages = StageStore.for_settings(settings.paths)
    if look is not None and look.moved_only and (only_doc_paths is not None or look.runs != runs_at_start):
        look = None  # a run came after the moved-only look: it may have moved more, the whole catalog decides
    # moved-only: the catalogs below hold only the files whose stats moved (noop_check.FolderLook)
    partial = look is not None and look.moved_only
    # A look at the folder first (a file whose size, mtime and inode did not change is not re-read):
    # the catalog run only when files appeared or vanished.
    if look is not None:
        stored, seen = look.stored, look.seen
    else:
        stored = stages.read_catalog()
        seen = discover_for(settings, known=stored)
    look_scope = seen  # the look's scope (the stored catalog read after a catalog run does not hold it)
    # no run, no new settings, store or generation since every document was current (noop_check):
    # Dagster's partitions are still the stored catalog's, and only what the folder changed can be stale
    trusted = look is not None and look.base_current and look.runs == runs_at_start
    if only_doc_paths is not None:
        stored = register_added(instance, corpus, stages, stored, seen, only_doc_paths)
    if removing and not allow_mass_delete:
        # documents deleted on purpose are not a folder emptied by accident: when they are all the
        # indexed documents that vanished, the guard lets them go (anything else indexed that vanished
        # keeps the guard as it is; one never indexed it does not count either way)
        vanished = set(vanished_documents(seen, stages).doc_paths)
        allow_mass_delete = bool(vanished) and not (vanished - set(removing)) & stages.doc_paths(INDEXED)
    # ... or when Dagster's partitions are not the catalog's (a wiped or another Dagster storage)
    ran_catalog = catalog_run_needed(stored, seen) or not trusted and set(
        instance.get_dynamic_partitions(corpus.ingestion.partitions.name)) != {d.partition_key for d in seen.documents}
    if ran_catalog:
        seen = run_catalog(instance, corpus, summary, stages, seen, allow_mass_delete, watch)
        if seen is None:  # stopped
            return summary
    record_scope(summary, stages, look_scope, partial)
    catalog = seen
    refs = catalog.documents
    if only_doc_paths is not None:
        refs = [r for r in refs if r.doc_path in set(only_doc_paths)]
    documents = look.documents if partial else len(catalog.documents)
    summary.documents_discovered = documents + len(catalog.errors)
    # the files asked for (all, or only_doc_paths) that discovery refused (too large, unreadable) fail by name
    refused = catalog.errors if only_doc_paths is None else [e for e in catalog.errors if e.path in set(only_doc_paths)]
    summary.errors = [{"doc_path": e.path, "error": e.reason} for e in refused]

    if trusted:
        todo = content_changed(look.stored, refs)
    else:
        todo = documents_to_run(instance, refs, stages, corpus)
    if stored is not None and not ran_catalog:
        # touched files (new mtime, same content): remember how they look now, so the next look
        # does not read them again (the runs record their own documents)
        stages.refresh_catalog(touched_documents(stored, seen, skip={r.doc_path for r in todo}))
    if todo:
        publish(ProgressEvent(OVERALL, 0, len(todo)))
    before = {t.doc_path: t.content_hash for t in todo}
    try:
        all_ran = run_documents(instance, todo, workers, settings, summary, corpus)
    except KeyboardInterrupt:  # between runs, in this code: as good as a stop noticed after a run
        summary.interrupted, all_ran = signal_name(watch), False
    # Staleness is judged once per ingest: above, to choose what to run. After the runs the documents
    # run are read and judged again, for safety: a run may have failed or been stopped, and a file
    # saved while its run read it is indexed at the old version (each stage acts on the file as it is
    # then). That judgement is the ingest's last: the no-op token below trusts it. (Each stage's own
    # "is this document's record current?" check, in ingest/stages.py, serves every run, the UI's
    # and the sensor's too: it is what lets a run skip a stage, not a judgement of this ingest's.)
    failed, pending, vanished, judged = not_current(instance, settings, stages, todo, corpus)
    changed = [r for r in pending if r.content_hash != before[r.doc_path]]
    if changed and all_ran and not summary.interrupted:
        # saved while the run read them: each stage acts on the file as it is, so a stage after
        # the edit skipped the new version. Once more for those, so the ingest ends current.
        all_ran = run_documents(instance, changed, 1, settings, summary, corpus, report_progress=False)
        failed, pending, vanished, judged = not_current(instance, settings, stages, todo, corpus)
    if only_doc_paths is None:
        remember_if_current(instance, settings, stages, corpus, catalog, todo, failed, pending, vanished, judged,
                            summary, runs_at_start, look, partial)
    count_documents(summary, stages, todo, failed, pending, vanished, before, len(refused),
                     documents if only_doc_paths is None else len(refs))
    return summary

