"""nightly_reconcile: a full discovery and a pass over every document, for anything the sensor
missed (edits while the daemon was down, stale partitions), then the evaluation. Off by default;
switch it on in the UI."""


import os

import dagster as dg

from .assets import PER_DOCUMENT_ASSETS, document_catalog, documents_partitions
from .evaluation import retrieval_evaluation
from .sensors import range_tags

RECONCILE_CRON = os.environ.get("RAG_RECONCILE_CRON", "0 2 * * *")


@dg.schedule(
    name="nightly_reconcile",
    cron_schedule=RECONCILE_CRON,
    target=[document_catalog, *PER_DOCUMENT_ASSETS, retrieval_evaluation],
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def nightly_reconcile(context: dg.ScheduleEvaluationContext):
    stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "manual"
    requests = [dg.RunRequest(run_key=f"reconcile-catalog-{stamp}", asset_selection=[document_catalog.key])]
    # the catalog run adds new partitions; documents registered by then are reconciled now, any
    # newer ones by the sensor or the next night (unchanged documents cost a hash comparison)
    keys = context.instance.get_dynamic_partitions(documents_partitions.name)
    if keys:
        requests.append(
            dg.RunRequest(
                run_key=f"reconcile-documents-{stamp}",
                asset_selection=[a.key for a in PER_DOCUMENT_ASSETS],
                tags=range_tags(list(keys), set(keys)),
            )
        )
    # queued after the ingestion runs (the run queue runs one at a time): tonight's quality score
    requests.append(dg.RunRequest(run_key=f"reconcile-evaluation-{stamp}", asset_selection=[retrieval_evaluation.key]))
    return requests
