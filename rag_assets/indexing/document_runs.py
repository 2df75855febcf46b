"""The document side of an ingest: which documents need a run, their runs (in this process, or fanned
out to `workers` runs at a time through the instance's run launcher), and after the runs which of them
are still not current (failed, or changed while they ran)."""

from __future__ import annotations

from typing import Sequence

import dagster as dg

from rag_assets.errors import VectorDBUnavailableError
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.discovery import DocumentTooLarge, fingerprint_file
from rag_assets.models import DocumentRef, IngestSummary
from rag_assets.orchestration import stopping
from rag_assets.orchestration.corpus_definitions import CorpusDefinitions
from rag_assets.orchestration.definitions import DEFAULT
from rag_assets.orchestration.execution import (first_error, first_error_of, instance_metadata, launch_config,
                                                materialization_metadata, materialize_documents, signal_name,
                                                stop_requested, was_stopped)
from rag_assets.orchestration.fanout import launch_document_runs, process_tags
from rag_assets.orchestration.fingerprints import stale_now
from rag_assets.orchestration.loaded_corpora import index_resources
from rag_assets.orchestration.partition_ranges import balanced_runs
from rag_assets.progress import OVERALL, ProgressEvent, publish

from .counting import count_run

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


def run_documents(instance, todo: Sequence[DocumentRef], workers: int, settings, summary: IngestSummary,
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
            stopped = was_stopped(instance, run)
            if not stopped:
                done += covered
                if report_progress:
                    publish(ProgressEvent(OVERALL, done, len(todo)))
            count_run(summary, run.run_id, materialization_metadata(run), run.success or stopped, lambda: first_error(run))
            if stopped:
                break
    if stop_requested():
        summary.interrupted = signal_name(stopping.active())
        return False
    return len(summary.run_ids) > runs_before and len(summary.errors) == errors_before


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
        error = lambda: first_error_of(instance, launched.run_id)  # noqa: E731
        count_run(summary, launched.run_id, instance_metadata(instance, launched.run_id),
                   launched.status == dg.DagsterRunStatus.SUCCESS, error)

    launch_document_runs(instance, plans, workers, process_tags(), run_config=launch_config(corpus), on_done=finished,
                         job_name=corpus.ingest_job.name)


def not_current(instance, settings, stages: StageStore, todo: Sequence[DocumentRef], corpus: CorpusDefinitions
                 ) -> tuple[list[DocumentRef], list[DocumentRef], int, set[str]]:
    """After the runs, the documents that are not indexed at their version as the folder holds it
    now: (failed: a recorded failure of this version, pending: no failure, e.g. saved during the
    run or left by a failed or interrupted run, how many vanished meanwhile: neither, the next
    catalog run removes them, and the documents judged by the staleness rule: those read again and
    asked about; the no-op token trusts this judgement rather than asking once more)."""
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
        return [], [], vanished, set()
    try:
        stale = {r.doc_path for r in documents_to_run(instance, now, stages, corpus)}
    except VectorDBUnavailableError:
        # the store went away (a Chroma server killed mid-run): judge by the recorded failures alone
        failures = stages.failures([r.doc_path for r in now])
        return [r for r in now if failures.get(r.doc_path, {}).get("source_hash") == r.content_hash], [], vanished, set()
    failures = stages.failures(sorted(stale)) if stale else {}
    failed, pending = [], []
    for ref in now:
        if ref.doc_path in stale:
            failure = failures.get(ref.doc_path)
            (failed if failure and failure["source_hash"] == ref.content_hash else pending).append(ref)
    return failed, pending, vanished, {r.doc_path for r in now}

