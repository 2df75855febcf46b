"""What a change in the docs folder asks Dagster to run: one home for docs_sensor and `rag watch`.

Given a cursor (the folder as last seen) and the partitions Dagster knows, `plan_change_runs` looks
at the folder (rag_assets.ingest.change_detection), keeps only the documents the one staleness rule
(fingerprints.stale_now) says still need work, and plans the runs: documents runs over partition ranges in
slices of RAG_DOCUMENTS_PER_RUN (queued first: a new file is searchable after one run, not two), and
the catalog run only when files appeared or vanished (it removes vanished documents). The deletion
guard is applied before the catalog run is asked for: a look that would remove most of the index
asks for nothing of the kind, and keeps the cursor so the same look comes again.

The cursor is small — `{"snapshot": <id>, "tick": n}` — and names the folder's last look, stored in
the state database (rag_assets.index.folder_snapshots): Dagster writes a sensor's cursor with every
tick. A quiet tick keeps the cursor it was given and stores nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rag_assets.config import Settings
from rag_assets.index import folder_snapshots
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.catalog import deletion_refusal, vanished_documents
from rag_assets.ingest.change_detection import DEFAULT_SETTLE_SECONDS, detect_changes
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.models import Catalog

from .fingerprints import stale_now
from .partition_ranges import QUEUED_MAX_GAP, RangeRun, plan_runs
from .resources import IndexResources


@dataclass
class ChangePlan:
    cursor: str | None  # the cursor to keep after this look
    tick: int = 0  # the cursor's change counter: unique per change event (run keys are built from it)
    document_runs: list[RangeRun] = field(default_factory=list)
    catalog: bool = False  # the catalog run is needed (files appeared or vanished)
    new_keys: list[str] = field(default_factory=list)  # partitions to register before the runs
    skip_reason: str = ""  # set when nothing is to run
    warnings: list[str] = field(default_factory=list)  # unreadable files, a refused removal
    notes: list[str] = field(default_factory=list)  # files still being written

    @property
    def any(self) -> bool:
        return bool(self.document_runs or self.catalog)


def plan_change_runs(settings: Settings, cursor: str | None, existing: list[str], resources: IndexResources, *,
                     settle_seconds: float = DEFAULT_SETTLE_SECONDS, owner: str = "docs_sensor") -> ChangePlan:
    """The runs the folder's changes since `cursor` need; `existing`: the partition keys Dagster
    has, in order; `resources`: the configured ones the runs use (staleness); `owner`: whose looks
    the cursor names (the sensor's and `rag watch`'s are kept apart). Raises FileNotFoundError when
    the docs folder is gone (nothing is removed)."""
    stages = StageStore.for_settings(settings.paths)
    previous, stored, lost = _previous_look(stages, owner, cursor)
    recorded = stages.read_scope() or {}
    changes = detect_changes(settings.docs_dir, previous, max_file_bytes=settings.max_file_bytes, wait=True,
                             settle_seconds=settle_seconds, index_snippets=settings.index_snippets,
                             scope=ScopeSettings.from_settings(settings.ingest),
                             default_language=str(recorded.get("default_language") or ""))
    if changes.same_state and stored:
        new_cursor = cursor
    else:
        snapshot = folder_snapshots.save(stages.db, owner, changes.state)
        new_cursor = json.dumps({"snapshot": snapshot, "tick": changes.tick})
    plan = ChangePlan(cursor=new_cursor, tick=changes.tick)
    if lost:
        plan.notes.append(lost)
    plan.warnings += [f"{error.path}: {error.reason}" for error in changes.errors]
    if changes.unstable:
        plan.notes.append(f"{len(changes.unstable)} file(s) still being written, next look: {changes.unstable[:5]}")
    if not changes.any:
        plan.skip_reason = "no document changed"
        return plan

    refusal = _mass_deletion(settings, stages, changes) if changes.deleted else None
    if refusal:
        plan.warnings.append(refusal)
        if not changes.to_process:
            # the cursor stays: the same look next time, nothing removed until the files return or
            # someone removes them on purpose (`rag ingest --allow-mass-delete`)
            plan.cursor, plan.skip_reason = cursor, refusal
            return plan
        # new and changed files are still indexed; the vanished ones stay (no catalog run), and
        # `rag ingest` or nightly_reconcile reports the refusal again

    known = set(existing)
    stale = stale_now(changes.to_process, stages, settings, resources)
    to_process = [r for r in changes.to_process if r.doc_path in stale or r.partition_key not in known]
    plan.new_keys = [r.partition_key for r in to_process if r.partition_key not in known]
    order = list(existing) + plan.new_keys  # the order the partitions will have once added
    plan.document_runs = list(plan_runs(order, {r.partition_key for r in to_process}, settings.documents_per_run,
                                        max_gap=QUEUED_MAX_GAP))
    plan.catalog = bool(plan.new_keys or changes.deleted) and not refusal
    if not plan.any:
        plan.skip_reason = "changed files are already indexed"
    return plan


def _previous_look(stages: StageStore, owner: str, cursor: str | None) -> tuple[dict | None, bool, str]:
    """(the look `cursor` names, whether it names a stored snapshot, a note when that is gone). A
    cursor of an earlier version holds the look itself. A look that is gone (the state folder was
    wiped) means every file is looked at again, as on a first tick; the change counter goes on, so
    run keys stay unique."""
    if not cursor:
        return None, False, ""
    named = json.loads(cursor)
    if "files" in named:
        return named, False, ""
    look = folder_snapshots.load(stages.db, owner, named["snapshot"])
    if look is not None:
        return look, True, ""
    return {"tick": named.get("tick", 0)}, False, (f"the folder's last look ({named['snapshot'][:12]}) is not in the "
                                                  "state database (wiped?): every file is looked at again")


def _mass_deletion(settings: Settings, stages: StageStore, changes) -> str | None:
    """The catalog run's deletion guard, applied before asking for that run."""
    previous = stages.read_catalog()
    if previous is None:
        return None
    gone = set(changes.deleted)
    remaining = Catalog(
        docs_dir=str(settings.docs_dir),
        documents=[d for d in previous.documents if d.doc_path not in gone] + list(changes.added),
        errors=list(changes.errors),
    )
    vanished = vanished_documents(remaining, stages)
    return deletion_refusal(remaining, vanished, settings.max_delete_share, settings.mass_delete_min_documents,
                            settings.allow_mass_delete)
