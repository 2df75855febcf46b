"""Launching ingestion runs on the Dagster instance, for the CLI: runs land in the same event log
the UI reads, so every `rag ingest` shows up in the UI like a run launched there.

An ingest: a stat-level look at the folder; the catalog run only if something moved (it registers
new documents as partitions and removes vanished ones); then runs over the stale documents'
partition ranges, at most RAG_DOCUMENTS_PER_RUN documents each (never one run per document), one
after the other, so a killed ingest keeps every finished run and the next one continues from there.

Stopping (stopping.py): Ctrl-C or SIGTERM stops the run in progress (it ends CANCELED, its finished
stages kept), starts no further run, and `ingest` raises IngestInterrupted with a summary in which
the documents not indexed are "not started", not failed; a second signal ends `rag ingest` at once.

Concurrency: one ingest at a time per corpus. `ingest()` holds the corpus's `<state_dir>/ingest.lock`
from discovery to the last run, so a second `rag ingest` of the same corpus started meanwhile waits,
then finds everything current. Each corpus has an embedded Chroma store of its own
(rag_assets.corpus; one writing process per store, upstream chroma #7040), whose writer lock the
ingest holds too; each process opens Chroma only once it holds the lock, so it never works from a
stale view. So two corpora's ingests, and an ingest from code into a third, never wait for each
other. Runs launched from the UI/daemon are serialised per corpus by the run queue (dagster.yaml's
tag limits on `rag/index`), and their Chroma writes wait for a CLI ingest of the same corpus:
VectorStoreResource.writer takes the store's writer lock (re-entrant within the CLI's own in-process
runs). A corpus whose vectors are still in the default corpus's store (made before stores were per
corpus) is moved into its own first (corpus_stores.py). Creating the Dagster SQLite instance is
serialised too: two processes initialising a fresh DAGSTER_HOME at once stamp its runs.db with two
alembic heads, and every later command fails.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Sequence

import dagster as dg
from filelock import FileLock, Timeout

from rag_assets.corpus import Corpus
from rag_assets.errors import ConfigurationError, RagError, VectorDBUnavailableError

from rag_assets.ingest.catalog import catalog_run_needed, content_changed, only_added, touched_documents, vanished_documents
from rag_assets.ingest.discovery import DocumentTooLarge, discover_for, fingerprint_file
from rag_assets.ingest.scope import left_out_counts, named_translations
from rag_assets.index.chroma_store import open_in_background
from rag_assets.index.locks import ingest_lock_file
from rag_assets.models import Catalog, DocumentRef, IngestSummary
from rag_assets.index.stage_store import INDEXED, StageStore
from rag_assets.retrieval.snapshot_writer import ensure_snapshot

from rag_assets.orchestration.corpus_definitions import CorpusDefinitions, build_corpus_definitions
from rag_assets.orchestration.definitions import CORPORA, DEFAULT, RESOURCES, project_definitions
from . import stopping
from .corpus_stores import move_to_own_store
from .evaluation import SYNTHETIC_PREFIX
from .fanout import HOST_TAG, PID_TAG, launch_document_runs, process_tags
from .fingerprints import stale_now
from .internals.compute_logs import without_compute_log_capture
from .internals.interrupts import interrupts_held
from .interrupt_logging import cancel_if_stopped, interrupt_logging_config
from .noop_check import FolderLook, dagster_home, record_moved, record_noop_token, run_storage_state
from .partition_ranges import balanced_runs, plan_runs
from rag_assets.progress import OVERALL, ProgressEvent, publish
from .resources import IndexResources, run_settings_config, store_writer_lock
from .sensors import CORPUS_TAG

# every in-process run of an ingest carries a tag of its own: a run that a Ctrl-C caught while
# Dagster was still creating it (before its interrupt handling) is found by it and cancelled
LAUNCH_TAG = "rag/launch"
LAST_INGEST_KEY = "last_ingest"  # the state database's record of the corpus's last ingest (`rag corpora`)

# how long a `rag ingest` waits for another one to finish; unset or negative: as long as it takes
INGEST_LOCK_TIMEOUT_VAR = "RAG_INGEST_LOCK_TIMEOUT"


class IngestBusyError(RagError):
    """Another ingest held the state folder's lock for longer than RAG_INGEST_LOCK_TIMEOUT."""


class CatalogRunFailed(RagError):
    """The document_catalog run failed (e.g. the deletion guard refused): nothing else ran."""


def get_instance() -> dg.DagsterInstance:
    """The instance at DAGSTER_HOME; by default the repo's own dagster.yaml (SQLite under data/). Its
    in-process runs (this process's) capture no compute logs: what they print is the CLI's own, and
    the capture's child processes took the terminal's Ctrl-C too (internals.compute_logs)."""
    home = dagster_home()
    # Opening a fresh SQLite instance creates and alembic-stamps its databases: two processes doing
    # it at once leave runs.db with two version heads ("more than one head present") for good.
    home_key = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    with FileLock(str(Path(tempfile.gettempdir()) / f"rag-dagster-instance-{home_key}.lock")):
        return without_compute_log_capture(dg.DagsterInstance.get())


def index_resources() -> IndexResources:
    """The configured embedder and vector store the CLI's runs execute with (the code location's)."""
    return IndexResources.of(RESOURCES)


def corpus_definitions(corpus: Corpus | None = None) -> CorpusDefinitions:
    """A corpus's Dagster objects for the settings it carries (the CLI's: its flags over the
    environment; None: the default corpus as the code location has it). The code location's own
    objects when it loaded this corpus over the same settings; else built for them (a corpus
    registered after this process loaded the code location, or `--docs-dir` / `--collection` for
    the default corpus): the runs the CLI starts in this process then work on what it was told."""
    if corpus is None:
        return DEFAULT
    loaded = CORPORA.get(corpus.name)
    if loaded is not None and loaded.corpus == corpus and loaded.corpus.base_settings() == corpus.base_settings():
        return loaded
    return build_corpus_definitions(corpus)


@functools.lru_cache(maxsize=None)
def _asset_job(corpus: CorpusDefinitions) -> dg.JobDefinition:
    """The job the CLI's in-process runs of one corpus's assets execute."""
    return project_definitions([corpus]).resolve_implicit_global_asset_job_def()


@contextmanager
def ingest_lock(state_dir: Path, timeout: float = -1):
    """Hold the state folder's ingest lock (waiting at most `timeout` seconds, negative: as long as
    it takes; Settings.ingest_lock_timeout); yields the seconds spent waiting for it.

    A second ingest waits (saying so on stderr) rather than failing: when it gets the lock, the
    documents the first one indexed are current and it has nothing left to do."""
    with _holding(ingest_lock_file(state_dir), "another ingest is running", timeout) as waited:
        yield waited


@contextmanager
def _holding(lock: FileLock, who: str, timeout: float):
    """Hold `lock`; when another process has it, say so on stderr (`who` holds it) and wait, for at
    most `timeout` seconds (RAG_INGEST_LOCK_TIMEOUT; negative: as long as it takes). Yields the
    seconds spent waiting."""
    waited = 0.0  # taken at once: no wait (an ingest given a FolderLook relies on it)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"rag: {who} ({lock.lock_file}); waiting for it to finish", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise IngestBusyError(
                f"{who}: {lock.lock_file} still held after {timeout:g} s ({INGEST_LOCK_TIMEOUT_VAR}); try again later"
            ) from None
        waited = max(time.perf_counter() - started, 1e-6)
    try:
        yield waited
    finally:
        lock.release()


def _metadata_by_asset(materializations) -> dict[str, dict]:
    """asset name -> metadata values of its materializations among these (a range run's summary
    is on one partition's event, the same on each of a small run's)."""
    out: dict[str, dict] = {}
    for mat in materializations:
        out.setdefault(mat.asset_key.to_user_string(), {}).update({k: v.value for k, v in mat.metadata.items()})
    return out


def _materialization_metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    return _metadata_by_asset(e.step_materialization_data.materialization for e in result.get_asset_materialization_events())


def _execute(
    instance: dg.DagsterInstance,
    corpus: CorpusDefinitions,
    selection,
    tags: dict[str, str] | None = None,
    partition_key: str | None = None,
    run_config: dict | None = None,
):
    """One in-process run of these assets. Stopped by Ctrl-C or SIGTERM, the run ends CANCELED
    (interrupt_logging). Without a stop watch, a Ctrl-C that lands while Dagster creates or winds up
    the run (outside its interrupt handling) raises KeyboardInterrupt here: a run it left unfinished
    is marked canceled."""
    launch = uuid.uuid4().hex
    config = {**(run_config or {}), **_console_logging(corpus)}
    config["loggers"] = {**config["loggers"], **interrupt_logging_config()}
    # under a stop watch (stopping.py), which records every signal, Dagster's interrupt capture is
    # held around the whole run: a signal during its creation is raised by its first step
    held = interrupts_held() if stopping.active() is not None else nullcontext()
    try:
        with held:
            result = _asset_job(corpus).execute_in_process(
                instance=instance,
                asset_selection=[a.key for a in selection],
                partition_key=partition_key,
                tags={**(tags or {}), **process_tags(), CORPUS_TAG: corpus.corpus.name, LAUNCH_TAG: launch},
                # Dagster logs every event at DEBUG; the CLI shows warnings and errors, the UI has the rest
                run_config=config,
                raise_on_error=False,
            )
        cancel_if_stopped(instance, result.run_id)
        return result
    except KeyboardInterrupt:
        for run in instance.get_runs(filters=dg.RunsFilter(tags={LAUNCH_TAG: launch})):
            if not run.is_finished:
                instance.report_run_canceled(run, message="stopped by Ctrl-C or SIGTERM as it started or ended")
        raise


def _stop_requested() -> bool:
    watch = stopping.active()
    return watch is not None and watch.requested


def _was_stopped(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> bool:
    """The run ended because a stop was asked for: canceled, or any run after a signal."""
    if _stop_requested():
        return True
    run = instance.get_run_by_id(result.run_id)
    return run is not None and run.status == dg.DagsterRunStatus.CANCELED


def materialize_documents(
    instance: dg.DagsterInstance, partition_keys: Sequence[str], max_per_run: int, corpus: CorpusDefinitions = DEFAULT
) -> Iterator[tuple[int, dg.ExecuteInProcessResult]]:
    """Run the per-document assets for these documents, run after run: contiguous stretches of the
    partition order (small gaps bridged), at most max_per_run documents each, so every finished
    run's documents stay indexed if the process is killed during a later one. No run starts once a
    stop is asked for (Ctrl-C, SIGTERM: stopping.py).
    Yields (wanted documents the run covered, its result)."""
    per_document = corpus.ingestion.per_document
    if len(partition_keys) == 1:  # one edit: no plan, and no list of every partition (0.4 s at 100,000)
        if not _stop_requested():
            yield 1, _execute(instance, corpus, per_document, partition_key=partition_keys[0])
        return
    order = instance.get_dynamic_partitions(corpus.ingestion.partitions.name)
    for run in plan_runs(order, partition_keys, max_per_run):
        if _stop_requested():
            return
        if run.first == run.last:  # one document: its own partition key (its metadata is its own)
            yield 1, _execute(instance, corpus, per_document, partition_key=run.first)
        else:
            yield len(run.keys), _execute(instance, corpus, per_document, tags=run.tags)


def documents_to_run(instance: dg.DagsterInstance, refs: Sequence[DocumentRef], stages: StageStore,
                     corpus: CorpusDefinitions = DEFAULT) -> list[DocumentRef]:
    """The stale documents (ingestion.stale_documents, the one rule), plus any whose partition
    Dagster has not seen materialized (e.g. a wiped Dagster storage): everything else is done."""
    stale = stale_now(refs, stages, corpus.corpus.settings(), index_resources())
    materialized = _materialized(instance, corpus.ingestion.vector_index.key, [r.partition_key for r in refs])
    return [r for r in refs if r.doc_path in stale or r.partition_key not in materialized]


# Asked about fewer partitions than this, Dagster is asked one partition at a time (~1 ms each)
# rather than for every materialized partition of the asset (0.7 s at 100,000 partitions).
_ONE_BY_ONE_BELOW = 50


def _materialized(instance: dg.DagsterInstance, key: dg.AssetKey, partition_keys: Sequence[str]) -> set[str]:
    """Those of `partition_keys` Dagster has seen materialized."""
    if len(partition_keys) >= _ONE_BY_ONE_BELOW:
        return set(instance.get_materialized_partitions(key)) & set(partition_keys)
    return {k for k in partition_keys
            if instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, asset_partitions=[k]), limit=1).records}


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
            summary.interrupted = summary.interrupted or _signal_name(watch)
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
    _record_ingest(stages, {"outcome": "running", "pid": os.getpid(), "host": socket.gethostname()})
    outcome = "failed"
    try:
        moved = move_to_own_store(corpus.corpus) if workers == 1 else None
        if moved is not None:
            look = None
            _say_moved(moved)
            settings = corpus.corpus.settings()  # its own store from now on
        writer = store_writer_lock(settings) if workers == 1 else None
        with (_holding(writer, "another process is writing the vector store", settings.ingest_lock_timeout)
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
        _record_ingest(stages, {"outcome": outcome, "documents_processed": summary.documents_processed,
                                "documents_failed": summary.documents_failed,
                                "documents_not_started": summary.documents_not_started,
                                "signal": summary.interrupted, "run_ids": summary.run_ids[-20:]})


def _signal_name(watch: stopping.StopWatch | None) -> str:
    """The stopping signal's name; a KeyboardInterrupt the watcher has not read yet is a SIGINT's."""
    if watch is not None and watch.signum is None:
        time.sleep(0.05)  # the watcher reads the signal number as the main thread handles it
    return stopping.NAMES.get(watch.signum if watch is not None else None, "SIGINT")


def _say_moved(moved) -> None:
    if moved.shared_with_default:
        print(f"rag: corpus {moved.corpus} shared the default corpus's collection; it has a store of its own now "
              f"({moved.target}) and is indexed there from its embedding cache; {moved.vectors_removed_from_default} of "
              f"its vectors were removed from the default corpus's", file=sys.stderr, flush=True)
    else:
        print(f"rag: corpus {moved.corpus} moved into a store of its own ({moved.target}): {moved.vectors_copied} vectors "
              "copied, nothing embedded again", file=sys.stderr, flush=True)


def _record_ingest(stages: StageStore, record: dict) -> None:
    """The corpus's last ingest as `rag corpora` shows it: running (pid, host), or how it ended and when."""
    record = {**record, "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        stages.db.set_meta(LAST_INGEST_KEY, json.dumps(record))
    except Exception:  # noqa: BLE001 - a listing's record never fails an ingest (a read-only state folder says so elsewhere)
        pass


def last_ingest(stages: StageStore) -> dict | None:
    """The corpus's last ingest (`_record_ingest`); one recorded as running by a process that is gone
    (killed) reads as interrupted."""
    try:
        record = json.loads(stages.db.get_meta(LAST_INGEST_KEY) or "null")
    except ValueError:
        return None
    if isinstance(record, dict) and record.get("outcome") == "running" and record.get("host") == socket.gethostname():
        try:
            os.kill(int(record.get("pid", 0)), 0)
        except ProcessLookupError:
            record = {**record, "outcome": "interrupted", "signal": "killed"}
        except (PermissionError, ValueError, OverflowError):
            pass
    return record if isinstance(record, dict) else None


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Runs of this host's CLI left STARTED by a killed process: marked failed, so the UI does not
    show them in progress forever (their work is redone by this ingest: stage records are atomic).
    One left CANCELING (a second Ctrl-C ended its process at once) is marked canceled."""
    host, orphaned = socket.gethostname(), []
    started = instance.get_runs(filters=dg.RunsFilter(
        statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING], tags={HOST_TAG: host}))
    for run in started:
        try:
            os.kill(int(run.tags.get(PID_TAG, "0")), 0)
            continue  # its process is alive: a concurrent run, not an orphan
        except ProcessLookupError:
            pass
        except (PermissionError, ValueError):
            continue
        if run.status == dg.DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, f"process {run.tags.get(PID_TAG)} was stopped at once (a second Ctrl-C); "
                                              "marked canceled by rag")
        else:
            instance.report_run_failed(run, f"process {run.tags.get(PID_TAG)} died during the run (killed?); marked failed by rag")
        orphaned.append(run.run_id)
    return orphaned


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
        stored = _register_added(instance, corpus, stages, stored, seen, only_doc_paths)
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
        seen = _run_catalog(instance, corpus, summary, stages, seen, allow_mass_delete, watch)
        if seen is None:  # stopped
            return summary
    _record_scope(summary, stages, look_scope, partial)
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
        all_ran = _run_documents(instance, todo, workers, settings, summary, corpus)
    except KeyboardInterrupt:  # between runs, in this code: as good as a stop noticed after a run
        summary.interrupted, all_ran = _signal_name(watch), False
    failed, pending, vanished = _not_current(instance, settings, stages, todo, corpus)
    changed = [r for r in pending if r.content_hash != before[r.doc_path]]
    if changed and all_ran and not summary.interrupted:
        # saved while the run read them: each stage acts on the file as it is, so a stage after
        # the edit skipped the new version. Once more for those, so the ingest ends current.
        all_ran = _run_documents(instance, changed, 1, settings, summary, corpus, report_progress=False)
        failed, pending, vanished = _not_current(instance, settings, stages, todo, corpus)
    if only_doc_paths is None:
        _remember_if_current(instance, settings, stages, corpus, catalog, todo, failed, pending, vanished, summary,
                             runs_at_start, look, partial)
    _count_documents(summary, stages, todo, failed, pending, vanished, before, len(refused),
                     documents if only_doc_paths is None else len(refs))
    return summary


def _register_added(instance, corpus: CorpusDefinitions, stages: StageStore, stored: Catalog | None, seen: Catalog,
                    only_doc_paths: Sequence[str]) -> Catalog | None:
    """New files of these paths, when they are all that changed: registered here (partitions and
    catalog), no catalog run. The stored catalog with them."""
    # no stored catalog yet: a folder never catalogued is empty to begin with
    base = stored if stored is not None else Catalog(docs_dir=seen.docs_dir, documents=[])
    added = only_added(base, seen, set(only_doc_paths))
    if not added:
        return stored
    instance.add_dynamic_partitions(corpus.ingestion.partitions.name, [d.partition_key for d in added])
    if stored is None:
        stages.write_catalog(replace(base, documents=added))
    else:
        stages.add_to_catalog(added)
    return replace(base, documents=[*base.documents, *added])


def _run_catalog(instance, corpus: CorpusDefinitions, summary: IngestSummary, stages: StageStore, seen: Catalog,
                 allow_mass_delete: bool, watch: stopping.StopWatch | None) -> Catalog | None:
    """The document_catalog run; the catalog the document runs then index (None: it was stopped,
    `summary` says so). Raises CatalogRunFailed when it failed."""
    document_catalog = corpus.ingestion.document_catalog
    config = {"ops": {document_catalog.op.name: {"config": {"allow_mass_delete": allow_mass_delete}}}}
    catalog_run = _execute(instance, corpus, [document_catalog], run_config=config)
    summary.run_ids.append(catalog_run.run_id)
    if _was_stopped(instance, catalog_run):
        summary.documents_discovered = len(seen.documents) + len(seen.errors)
        summary.interrupted = _signal_name(watch)
        return None
    if not catalog_run.success:
        raise CatalogRunFailed(f"{_first_error(catalog_run)} (document_catalog run {catalog_run.run_id})")
    catalog_meta = _materialization_metadata(catalog_run).get(document_catalog.key.to_user_string(), {})
    summary.documents_deleted = int(catalog_meta.get("documents_removed", 0))
    summary.vectors_deleted = int(catalog_meta.get("vectors_deleted", 0))
    summary.removal_refused = str(catalog_meta.get("removal_refused") or "")
    # refused: the stored catalog still lists the vanished documents; the folder as just seen is
    # what the runs index
    return seen if summary.removal_refused else stages.read_catalog()


def _record_scope(summary: IngestSummary, stages: StageStore, look_scope: Catalog, partial: bool) -> None:
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


def _count_documents(summary: IngestSummary, stages: StageStore, todo, failed, pending, vanished: int,
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


def _remember_if_current(instance, settings, stages: StageStore, corpus: CorpusDefinitions, catalog, todo, failed,
                         pending, vanished: int, summary: IngestSummary, runs_at_start, look: FolderLook | None,
                         partial: bool) -> None:
    """After a whole-folder ingest: record the no-op token when every document is current now, so the
    next `rag ingest` can say so without Dagster (noop_check); with a moved-only look, the digests of
    the documents that moved."""
    runs_state = run_storage_state()
    # The documents not run were current when this ingest began, and it holds the ingest lock
    # and the store's writer lock: only those it ran are read and checked again (at 100,000
    # documents a check of all is ~2.5 s, the whole catalog ~0.6 s) unless another run was made
    # meanwhile (the sensor, the UI).
    alone = runs_at_start is not None and runs_state is not None and (
        runs_state.last_run_id - runs_at_start.last_run_id == len(summary.run_ids))
    ran = {r.doc_path for r in todo}
    if not todo:
        now = catalog
    elif alone and not vanished:
        fresh = stages.catalog_by_partition_key([r.partition_key for r in todo])
        now = replace(catalog, documents=[fresh.get(d.partition_key, d) for d in catalog.documents])
    else:
        now, partial = stages.read_catalog(), False
    recheck = [d for d in now.documents if d.doc_path in ran] if alone else now.documents
    # a refused removal is not "current": the next `rag ingest` must look (and say so) again
    current = not summary.removal_refused and not failed and not pending and (
        not todo or not documents_to_run(instance, recheck, stages, corpus))
    if partial:  # the recorded digests, with the moved documents' as they are now
        record_moved(settings, stages, look, now.documents, runs_state if current else None)
    else:
        record_noop_token(settings, stages, now if current else None, runs_state)


def _run_documents(instance, todo: Sequence[DocumentRef], workers: int, settings, summary: IngestSummary,
                   corpus: CorpusDefinitions, report_progress: bool = True) -> bool:
    """Materialize the per-document assets for these documents; False when a run failed or the
    ingest was stopped (summary.interrupted: no further run started)."""
    if not todo:
        return True
    runs_before = len(summary.run_ids)
    errors_before = len(summary.errors)
    if workers > 1 and len(todo) > 1:
        _run_workers(instance, todo, workers, settings.documents_per_run, summary, corpus)
    else:
        done = 0
        keys = [r.partition_key for r in todo]
        for covered, run in materialize_documents(instance, keys, settings.documents_per_run, corpus):
            stopped = _was_stopped(instance, run)
            if not stopped:
                done += covered
                if report_progress:
                    publish(ProgressEvent(OVERALL, done, len(todo)))
            _count_run(summary, run.run_id, _materialization_metadata(run), run.success or stopped, lambda: _first_error(run))
            if stopped:
                break
    if _stop_requested():
        summary.interrupted = _signal_name(stopping.active())
        return False
    return len(summary.run_ids) > runs_before and len(summary.errors) == errors_before


def _not_current(instance, settings, stages: StageStore, todo: Sequence[DocumentRef], corpus: CorpusDefinitions
                 ) -> tuple[list[DocumentRef], list[DocumentRef], int]:
    """After the runs, the documents that are not indexed at their version as the folder holds it
    now: (failed: a recorded failure of this version, pending: no failure, e.g. saved during the
    run or left by a failed or interrupted run, and how many vanished meanwhile: neither, the next
    catalog run removes them)."""
    now, vanished = [], 0
    for ref in todo:
        try:
            now.append(fingerprint_file(settings.docs_dir, ref.doc_path, max_file_bytes=settings.max_file_bytes,
                                        known=ref))
        except FileNotFoundError:
            vanished += 1
        except (OSError, DocumentTooLarge):
            continue
    if not now:
        return [], [], vanished
    try:
        stale = {r.doc_path for r in documents_to_run(instance, now, stages, corpus)}
    except VectorDBUnavailableError:
        # the store went away (a Chroma server killed mid-run): judge by the recorded failures alone
        failures = stages.failures([r.doc_path for r in now])
        return [r for r in now if failures.get(r.doc_path, {}).get("source_hash") == r.content_hash], [], vanished
    failures = stages.failures(sorted(stale)) if stale else {}
    failed, pending = [], []
    for ref in now:
        if ref.doc_path in stale:
            failure = failures.get(ref.doc_path)
            (failed if failure and failure["source_hash"] == ref.content_hash else pending).append(ref)
    return failed, pending, vanished


def _count_run(summary: IngestSummary, run_id: str, meta: dict[str, dict], success: bool, error) -> None:
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


def _run_workers(
    instance, todo: Sequence[DocumentRef], workers: int, per_run: int, summary: IngestSummary, corpus: CorpusDefinitions
) -> None:
    """The documents as contiguous ranges of about 1/workers of the work each (by bytes, at most
    per_run documents), `workers` runs at a time through the instance's run launcher (fanout)."""
    order = instance.get_dynamic_partitions(corpus.ingestion.partitions.name)
    sizes = {r.partition_key: float(r.size_bytes) for r in todo}
    # about twice as many ranges as workers, the heaviest launched first: the workers finish together
    plans = sorted(balanced_runs(order, sizes, 2 * workers, per_run), key=lambda p: -sum(sizes[k] for k in p.keys))
    total = len(todo)
    done = 0

    def finished(launched) -> None:
        nonlocal done
        done += len(launched.plan.keys)
        publish(ProgressEvent(OVERALL, done, total))
        error = lambda: _first_error_of(instance, launched.run_id)  # noqa: E731
        _count_run(summary, launched.run_id, _instance_metadata(instance, launched.run_id),
                   launched.status == dg.DagsterRunStatus.SUCCESS, error)

    launch_document_runs(instance, plans, workers, process_tags(), run_config=_launch_config(corpus), on_done=finished,
                         job_name=corpus.ingest_job.name)


def _launch_config(corpus: CorpusDefinitions) -> dict:
    """The run config of the runs launched in other processes: the console log level of the CLI's own
    runs, and the corpus's settings as this process resolved them (resources.run_settings_config), so
    they index what this ingest was told to."""
    return {**_console_logging(corpus), **run_settings_config(corpus.corpus)}


def _instance_metadata(instance: dg.DagsterInstance, run_id: str) -> dict[str, dict]:
    """The same for a run launched elsewhere, read from the instance's event log."""
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    return _metadata_by_asset(r.dagster_event.step_materialization_data.materialization for r in records)


def _first_error_of(instance: dg.DagsterInstance, run_id: str) -> str:
    for record in instance.all_logs(run_id, of_type={dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}):
        event = record.dagster_event
        if event.is_step_failure and event.step_failure_data.user_failure_data is not None:
            return event.step_failure_data.user_failure_data.description or event.message
        if event.message:
            return event.message
    return "see the run's logs in the Dagster UI"


@dataclass
class EvaluateOutcome:
    run_id: str
    success: bool
    # the main figures (the saved JSON: modes -> metric -> value, skipped, top_k, questions, eval_set):
    # the labelled set's, or the synthetic set's when the index has no labelled one
    summary: dict
    rows_path: str | None  # per-question parquet
    checks: dict[str, dict]  # check name -> {"passed", "severity", "metadata"}
    error: str = ""
    synthetic_summary: dict = field(default_factory=dict)  # the synthetic set's figures, when it was scored
    synthetic_rows_path: str | None = None
    skipped: str = ""  # why nothing was scored (the asset's "skipped" metadata)


def evaluate(eval_sets: Sequence[str] | None = None, top_k: int | None = None,
             corpus: CorpusDefinitions = DEFAULT) -> EvaluateOutcome:
    """Materialize retrieval_evaluation (a run on the instance, like one launched from the UI), after
    synthetic_eval_set unless eval sets are given."""
    import json

    instance = get_instance()
    config: dict = {}
    if eval_sets:
        config["eval_sets"] = [str(Path(p).resolve()) for p in eval_sets]
    if top_k:
        config["top_k"] = top_k
    evaluation = corpus.evaluation
    selection = [evaluation.retrieval_evaluation.key]
    if not eval_sets:
        selection.insert(0, evaluation.synthetic_eval_set.key)
    run = _asset_job(corpus).execute_in_process(
        instance=instance,
        asset_selection=selection,
        run_config={"ops": {evaluation.retrieval_evaluation.op.name: {"config": config}}, **_console_logging(corpus)},
        raise_on_error=False,
    )
    meta = _materialization_metadata(run).get(evaluation.retrieval_evaluation.key.to_user_string(), {})

    def saved(path):
        return json.loads(Path(path).with_suffix(".json").read_text()) if path else {}

    synthetic_rows = meta.get(f"{SYNTHETIC_PREFIX}results_parquet")
    rows_path = meta.get("results_parquet") or synthetic_rows
    summary = saved(rows_path)
    checks = {
        e.check_name: {
            "passed": e.passed,
            "severity": e.severity.value,
            "metadata": {k: v.value for k, v in e.metadata.items()},
        }
        for e in run.get_asset_check_evaluations()
    }
    return EvaluateOutcome(run.run_id, run.success, summary, rows_path, checks, "" if run.success else _first_error(run),
                           saved(synthetic_rows), synthetic_rows, str(meta.get("skipped") or ""))


def _first_error(result: dg.ExecuteInProcessResult) -> str:
    """The first failed step's own message: a dg.Failure's description, or the exception's text
    without Dagster's wrapping (the class path stays only for unexpected exceptions)."""
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data = event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            return data.user_failure_data.description.strip()
        if data.error:
            error = data.error.cause if data.error.cls_name == "DagsterExecutionStepExecutionError" and data.error.cause else data.error
            message = error.message.strip()
            if error.cls_name in _OWN_ERRORS:  # our errors say what to do: no "rag_assets.errors.X: " prefix
                message = message.split(": ", 1)[-1]
            return message
    return "see the run's logs in the Dagster UI"


def _subclasses(cls: type) -> set[str]:
    return {cls.__name__} | {name for sub in cls.__subclasses__() for name in _subclasses(sub)}


_OWN_ERRORS = _subclasses(RagError)


def _console_logging(corpus: CorpusDefinitions) -> dict:
    """Run config for Dagster's console log level in the CLI's own runs: the CLI reports failures
    itself (one line each), so by default Dagster prints nothing; RAG_LOG_LEVEL=INFO (the corpus's
    settings' log_level) shows the run logs as they go."""
    level = corpus.corpus.base_settings().log_level.strip().upper() or "CRITICAL"
    return {"loggers": {"console": {"config": {"log_level": level}}}}
