"""Run bookkeeping: the corpus's last ingest as `rag corpora` shows it, and the runs a killed CLI
process left in progress on the instance (marked failed or canceled, so the UI does not show them
running forever)."""

from __future__ import annotations

import datetime
import json
import os
import socket

import dagster as dg

from rag_assets.index.stage_store import StageStore

from .fanout import HOST_TAG, PID_TAG

LAST_INGEST_KEY = "last_ingest"  # the state database's record of the corpus's last ingest (`rag corpora`)


def record_ingest(stages: StageStore, record: dict) -> None:
    """The corpus's last ingest as `rag corpora` shows it: running (pid, host), or how it ended and when."""
    record = {**record, "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        stages.db.set_meta(LAST_INGEST_KEY, json.dumps(record))
    except Exception:  # noqa: BLE001 - a listing's record never fails an ingest (a read-only state folder says so elsewhere)
        pass


def last_ingest(stages: StageStore) -> dict | None:
    """The corpus's last ingest (`record_ingest`); one recorded as running by a process that is gone
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

