"""One stage over a run's documents, a window at a time: which documents are ready for the stage,
which are unchanged, which are skipped (their upstream record is not current), and failure isolation
(one bad document never stops the others), all recorded in a StageReport.

`readiness` is the one rule for "is this document ready for this stage?", used by every stage
(rag_assets.ingest.stages, embed_stage, index_stage). No Dagster import here.
"""

from __future__ import annotations

import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from rag_assets.errors import DocumentError
from rag_assets.index.locks import DocumentLocks
from rag_assets.index.stage_store import StageStore
from rag_assets.models import DocumentRef
from rag_assets.progress import ProgressEvent, Reporter, no_progress

# Documents per window: one read query and one write transaction each.
WINDOW_DOCS = 100
UNCHANGED = "unchanged"  # readiness: the stage's own record is current

@dataclass
class StageReport:
    stage: str
    processed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # doc_path -> reason
    skipped: dict[str, str] = field(default_factory=dict)  # doc_path -> why (upstream not current)
    stats: dict[str, float | int | str] = field(default_factory=dict)
    per_document: dict[str, dict] = field(default_factory=dict)  # doc_path -> metadata of that document
    seconds: float = 0.0

    @property
    def errors(self) -> list[dict[str, str]]:
        return [{"doc_path": p, "error": e} for p, e in sorted(self.failed.items())]




def readiness(ref: DocumentRef, head: dict[str, tuple[str, str]], failure: dict | None, stage: str,
              fingerprint: str, upstream: str | None = None, upstream_fingerprint: str = "") -> str | None:
    """THE rule for "is this document ready for this stage?": None when the stage has work to do,
    UNCHANGED when its own record is current, otherwise why it is skipped.

    The upstream record is judged first: a stage's fingerprint does not carry its upstream's (the
    embedded record names only the model), so its own record is current only while what it was
    made from is. `upstream_fingerprint` "" checks the upstream's source hash only; `failure` is the
    document's recorded failure, named in the reason when it is of this version of the file."""
    if upstream is not None:
        up = head.get(upstream)
        if up is None or up[0] != ref.content_hash or (upstream_fingerprint and up[1] != upstream_fingerprint):
            if failure and failure["source_hash"] == ref.content_hash:
                return f"{upstream} failed: {failure['error']}"
            return f"{upstream} not materialized for this version"
    if head.get(stage) == (ref.content_hash, fingerprint):
        return UNCHANGED
    return None


def ready_documents(window: Sequence[DocumentRef], stages: StageStore, report: "StageReport", stage: str,
                    fingerprint: str, upstream: str | None = None, upstream_fingerprint: str = "") -> list[DocumentRef]:
    """The documents of a window the stage has to (re)do; the others go to the report as unchanged
    or skipped (with why). Headers and failures only: no payload is read."""
    paths = [r.doc_path for r in window]
    heads = stages.headers(paths)
    failed = stages.failures(paths) if upstream is not None else {}
    todo = []
    for ref in window:
        verdict = readiness(ref, heads.get(ref.doc_path, {}), failed.get(ref.doc_path), stage, fingerprint,
                            upstream, upstream_fingerprint)
        if verdict is None:
            todo.append(ref)
        elif verdict == UNCHANGED:
            report.unchanged.append(ref.doc_path)
        else:
            report.skipped[ref.doc_path] = verdict
    return todo


def windows(items: Sequence) -> Iterable[Sequence]:
    """Consecutive windows of WINDOW_DOCS items."""
    size = WINDOW_DOCS
    for start in range(0, len(items), size):
        yield items[start : start + size]


def run_each(
    stage: str,
    refs: Sequence[DocumentRef],
    stages: StageStore,
    fingerprint: str,
    upstream: Sequence[tuple[str, str]],
    work: Callable[[DocumentRef, list[dict]], tuple[object, dict]],
    progress: Reporter = no_progress,
) -> StageReport:
    """Run `work(ref, upstream_payloads) -> (payload, per_doc_stats)` for each stale document.

    `upstream` lists the (stage, fingerprint) records the work reads, the first being the one this
    stage follows: a document whose upstream record is missing or stale is skipped, not failed."""
    report = StageReport(stage)
    start = time.perf_counter()
    done = 0
    for window in windows(refs):
        first, first_fp = upstream[0] if upstream else (None, "")
        todo = ready_documents(window, stages, report, stage, fingerprint, first, first_fp)
        payloads = {s: stages.read_many(s, [r.doc_path for r in todo]) for s, _ in upstream} if todo else {}
        results, errors = [], []
        for ref in todo:
            try:
                inputs = [payloads[s][ref.doc_path]["payload"] for s, _ in upstream]
                payload, doc_stats = work(ref, inputs)
            except DocumentError as exc:
                errors.append((ref, str(exc)))
                continue
            except Exception as exc:  # one bad document never stops the others
                errors.append((ref, f"{ref.doc_path}: {type(exc).__name__}: {exc}"))
                traceback.print_exc()
                continue
            results.append((ref.doc_path, ref.content_hash, payload, fingerprint))
            report.processed.append(ref.doc_path)
            report.per_document[ref.doc_path] = doc_stats
        commit_window(stages, stage, report, results, errors)
        done += len(window)
        progress(ProgressEvent(stage, done, len(refs)))
    report.seconds = time.perf_counter() - start
    return report


def commit_window(stages: StageStore, stage: str, report: StageReport, results: list, errors: list) -> None:
    """A window's records and failures, written together; successes clear their old failures."""
    if results:
        stages.write_many(stage, results)
        stages.clear_failures(stage, [r[0] for r in results])
    if errors:
        stages.record_failures(stage, [(ref.doc_path, ref.content_hash, message) for ref, message in errors])
        for ref, message in errors:
            report.failed[ref.doc_path] = message


def fail_all(report: StageReport, stages: StageStore, group, stage: str, message: str) -> None:
    """Record one message as the failure of every document of a group of (ref, ...) items."""
    stages.record_failures(stage, [(ref.doc_path, ref.content_hash, message) for ref, _ in group])
    for ref, _ in group:
        report.failed[ref.doc_path] = message if message.startswith(ref.doc_path) else f"{ref.doc_path}: {message}"


def groups_of(items, limit):
    """Consecutive groups of items (ref, chunks, ...) holding about `limit` chunks each."""
    group, size = [], 0
    for item in items:
        group.append(item)
        size += len(item[1])
        if size >= limit:
            yield group
            group, size = [], 0
    if group:
        yield group


def held(locks: DocumentLocks | None, doc_paths: Sequence[str]):
    """The documents' locks held (another worker writing them waits), or nothing without locks."""
    return locks.hold(doc_paths) if locks is not None else nullcontext()

