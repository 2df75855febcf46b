"""nightly_reconcile: anything the sensor missed (edits while the daemon was down, a failed run),
then the whole index verified and the evaluation. Off by default; switch it on in the UI.

The schedule decides what is stale with the same rule as `rag ingest` and the sensor, over a fresh
look at the folder, and asks for: the catalog run (it also removes vanished documents and orphaned
vectors), runs over the stale documents in slices, `index_audit`, and `retrieval_evaluation` (with
`synthetic_eval_set`),
queued in that order (the run queue runs them one at a time)."""



import dagster as dg

from rag_assets.ingest.discovery import discover_for
from rag_assets.index.stage_store import StageStore

from rag_assets.corpus import Corpus

from .assets import IngestionAssets
from .fingerprints import stale_now
from .evaluation import EvaluationAssets
from .partition_ranges import plan_runs
from .resources import EmbedderResource, IndexResources, VectorStoreResource
from .sensors import evaluation_run_tags, index_run_tags



def build_nightly_reconcile(corpus: Corpus, assets: IngestionAssets, evaluation: EvaluationAssets
                            ) -> dg.ScheduleDefinition:
    document_catalog, per_document, index_audit = assets.document_catalog, assets.per_document, assets.index_audit
    evaluation_keys = [a.key for a in evaluation.all]

    @dg.schedule(
        name=assets.names.scoped("nightly_reconcile"),
        cron_schedule=corpus.settings().reconcile_cron,  # part of the definitions, fixed at load
        target=[document_catalog, *per_document, index_audit, *evaluation.all],
        default_status=dg.DefaultScheduleStatus.STOPPED,
    )
    def nightly_reconcile(context: dg.ScheduleEvaluationContext, embedder: EmbedderResource,
                          vector_store: VectorStoreResource):
        stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "manual"
        index_tags = index_run_tags(corpus)
        requests = [dg.RunRequest(run_key=f"reconcile-catalog-{stamp}", asset_selection=[document_catalog.key],
                                  tags=index_tags)]
        settings = corpus.settings()
        stages = StageStore.for_settings(settings.paths)
        try:
            catalog = discover_for(settings, known=stages.read_catalog())
        except FileNotFoundError as exc:
            context.log.warning(f"{exc}: only the catalog run (which refuses to empty the index) is requested")
            return requests
        # documents registered now are reconciled tonight; files new since the sensor's last look are
        # registered by the catalog run and picked up by the sensor or the next night
        order = context.instance.get_dynamic_partitions(assets.partitions.name)
        stale = stale_now(catalog.documents, stages, settings, IndexResources(embedder, vector_store))
        wanted = {d.partition_key for d in catalog.documents if d.doc_path in stale}
        for i, run in enumerate(plan_runs(order, wanted, settings.documents_per_run)):
            requests.append(dg.RunRequest(run_key=f"reconcile-documents-{stamp}-{i}",
                                          asset_selection=[a.key for a in per_document],
                                          tags={**run.tags, **index_tags}))
        requests.append(dg.RunRequest(run_key=f"reconcile-audit-{stamp}", asset_selection=[index_audit.key],
                                      tags=index_tags))
        requests.append(dg.RunRequest(run_key=f"reconcile-evaluation-{stamp}", asset_selection=evaluation_keys,
                                      tags=evaluation_run_tags(corpus)))
        return requests

    return nightly_reconcile
