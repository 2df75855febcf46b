"""After a whole-folder ingest, the no-op token (rag_assets.orchestration.noop_check): recorded when
every document is current, so the next `rag ingest` can say "nothing to do" without Dagster."""

from __future__ import annotations

from dataclasses import replace

from rag_assets.index.stage_store import StageStore
from rag_assets.models import IngestSummary
from rag_assets.orchestration.corpus_definitions import CorpusDefinitions
from rag_assets.orchestration.noop_check import FolderLook, record_moved, record_noop_token, run_storage_state

from .document_runs import documents_to_run

def remember_if_current(instance, settings, stages: StageStore, corpus: CorpusDefinitions, catalog, todo, failed,
                        pending, vanished: int, judged: set[str], summary: IngestSummary, runs_at_start,
                        look: FolderLook | None, partial: bool) -> None:
    """After a whole-folder ingest: record the no-op token when every document is current now, so the
    next `rag ingest` can say so without Dagster (noop_check); with a moved-only look, the digests of
    the documents that moved. `failed`, `pending`, `vanished` and `judged`: the ingest's after-run
    judgement of the documents it ran (document_runs.not_current)."""
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
    # Alone, with nothing vanished, the after-run judgement of every document run is the answer: it was
    # made on the files as they are now, under both locks. Otherwise ask again: another run (the
    # sensor's, the UI's) may have left any document stale, and a document the judgement could not
    # read (or a store that went away during it) was not judged.
    rejudge = not (alone and not vanished and ran <= judged)
    recheck = [d for d in now.documents if d.doc_path in ran] if alone else now.documents
    # a refused removal is not "current": the next `rag ingest` must look (and say so) again
    current = not summary.removal_refused and not failed and not pending and (
        not todo or not rejudge or not documents_to_run(instance, recheck, stages, corpus))
    if partial:  # the recorded digests, with the moved documents' as they are now
        record_moved(settings, stages, look, now.documents, runs_state if current else None)
    else:
        record_noop_token(settings, stages, now if current else None, runs_state)

