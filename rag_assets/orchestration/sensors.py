"""docs_sensor: follow every save, delete, rename, revert and restore in the docs folder.

Each tick plans what the folder's changes since its cursor need (change_runs.plan_change_runs: only
documents still stale, new ones registered as partitions, documents runs queued before the catalog
run, the deletion guard applied) and requests those runs. Run keys come from the cursor's change
counter: unique per change event, the same when one tick is evaluated twice.

While `rag watch` follows the same folder (its heartbeat is fresh: watch_heartbeat), the sensor
stands back and keeps its cursor: the watcher asks for the same runs without waiting for the
daemon's sensor loop, and the sensor catches up on anything left once the watcher stops.

evaluation_sensor: re-scores the index after it changed, batched. Each evaluation records the index
generation it scored; when the generation now differs and no ingestion or evaluation run is queued
or running, one evaluation run is asked for (run key = the generation, so one per index version).
While ingestion keeps running it waits, at most EVALUATION_MAX_DEFER_SECONDS, then evaluates
anyway, so a folder that never stops changing is still scored. An ingest in progress (`rag ingest`,
RAGPipeline.ingest: the corpus's ingest lock is held, also between its runs) is always waited for:
scoring half an ingest scores documents that are not indexed yet.
"""

import json
import time
from pathlib import Path

import dagster as dg
from filelock import FileLock, Timeout

from rag_assets.config import Settings
from rag_assets.index.generation import EMPTY as EMPTY_INDEX, current_generation
from rag_assets.index.locks import INGEST_LOCK_NAME

from rag_assets.corpus import Corpus

from .assets import IngestionAssets
from .change_runs import plan_change_runs
from .evaluation import GENERATION_KEY, EvaluationAssets
from .resources import EmbedderResource, IndexResources, VectorStoreResource
from .watch_heartbeat import live_watcher

# The run queue's tag limits (dagster.yaml) keep each corpus's index writers one at a time and let
# one evaluation of it run beside them; corpora never wait for each other (each has a store of its own)
CORPUS_TAG = "rag/corpus"
INDEX_TAG, EVALUATION_TAG = "rag/index", "rag/evaluation"  # limited per corpus (their value)


def index_run_tags(corpus: Corpus) -> dict[str, str]:
    return {"rag/run": "index", CORPUS_TAG: corpus.name, INDEX_TAG: corpus.name}


def evaluation_run_tags(corpus: Corpus) -> dict[str, str]:
    return {"rag/run": "evaluation", CORPUS_TAG: corpus.name, EVALUATION_TAG: corpus.name}
EVALUATION_MAX_DEFER_SECONDS = 300


def build_docs_sensor(corpus: Corpus, assets: IngestionAssets) -> dg.SensorDefinition:
    names, partitions = assets.names, assets.partitions
    document_catalog, per_document = assets.document_catalog, assets.per_document

    @dg.sensor(
        name=names.scoped("docs_sensor"),
        # the interval is part of the definitions, fixed at load
        minimum_interval_seconds=corpus.settings().sensor_interval_seconds,
        default_status=dg.DefaultSensorStatus.STOPPED,
        target=[document_catalog, *per_document],
        description="Re-ingests new, changed, reverted and restored markdown files and removes deleted ones.",
    )
    def docs_sensor(context: dg.SensorEvaluationContext, embedder: EmbedderResource,
                    vector_store: VectorStoreResource) -> dg.SensorResult:
        settings = corpus.settings()
        return _docs_tick(context, settings, IndexResources(embedder, vector_store), partitions, document_catalog,
                          per_document, index_run_tags(corpus))

    return docs_sensor


def _docs_tick(context, settings: Settings, resources: IndexResources, partitions, document_catalog, per_document,
               tags: dict[str, str]) -> dg.SensorResult:
    watcher = live_watcher(settings)
    if watcher is not None:
        # `rag watch` asks for these runs within a second of a save; the cursor stays, so once the
        # watcher stops, the next tick catches up on whatever it left stale
        who = f"rag watch (pid {watcher['pid']} on {watcher['host']})"
        if watcher.get("docs_dir") == str(settings.docs_dir):
            reason = f"{who} follows {settings.docs_dir}"
        else:
            # its runs index its folder into this state and collection: a second folder indexed
            # beside it would have each catalog run remove the other's pages
            reason = (f"{who} indexes {watcher.get('docs_dir')} into this corpus's state, not {settings.docs_dir}: "
                      "nothing done; stop the watcher or start it on this folder")
        return dg.SensorResult(skip_reason=dg.SkipReason(reason), cursor=context.cursor)
    try:
        plan = plan_change_runs(settings, context.cursor, context.instance.get_dynamic_partitions(partitions.name),
                                resources)
    except FileNotFoundError as exc:
        # the cursor is kept: a folder that comes back (remounted) is not a change
        return dg.SensorResult(skip_reason=dg.SkipReason(f"{exc}; nothing removed"), cursor=context.cursor)
    for warning in plan.warnings:
        context.log.warning(warning)
    for note in plan.notes:
        context.log.info(note)
    if not plan.any:
        return dg.SensorResult(skip_reason=dg.SkipReason(plan.skip_reason), cursor=plan.cursor)
    prefix = f"docs-{plan.tick}"
    run_requests = [
        dg.RunRequest(run_key=f"{prefix}-documents-{i}", asset_selection=[a.key for a in per_document],
                      tags={**run.tags, **tags, "rag/changed_documents": str(len(run.keys))})
        for i, run in enumerate(plan.document_runs)
    ]
    if plan.catalog:
        run_requests.append(dg.RunRequest(run_key=f"{prefix}-catalog", asset_selection=[document_catalog.key],
                                          tags=tags))
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[partitions.build_add_request(plan.new_keys)] if plan.new_keys else [],
        cursor=plan.cursor,
    )


_IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
              dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def build_evaluation_sensor(corpus: Corpus, assets: IngestionAssets, evaluation: EvaluationAssets
                            ) -> dg.SensorDefinition:
    names = assets.names
    evaluation_key = evaluation.retrieval_evaluation.key

    @dg.sensor(
        name=names.scoped("evaluation_sensor"),
        minimum_interval_seconds=corpus.settings().evaluation_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        target=evaluation.all,
        description="Re-scores retrieval after the index changed (batched: once ingestion runs are done); the "
                    "synthetic eval set is brought up to date first (a no-op where a labelled set exists).",
    )
    def evaluation_sensor(context: dg.SensorEvaluationContext):
        return _evaluation_tick(context, corpus, evaluation_key)

    return evaluation_sensor


def ingest_in_progress(state_dir: Path) -> bool:
    """Whether an ingest holds the corpus's ingest lock now (asked with a lock object of its own, so
    the answer is the same in the process that holds it)."""
    path = Path(state_dir) / INGEST_LOCK_NAME
    if not path.exists():
        return False
    lock = FileLock(str(path), is_singleton=False, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def _evaluation_tick(context, corpus: Corpus, evaluation_key: dg.AssetKey):
    settings = corpus.settings()
    generation = current_generation(settings)
    if generation == EMPTY_INDEX:
        return dg.SkipReason("nothing is indexed yet")
    event = context.instance.get_latest_materialization_event(evaluation_key)
    scored = None
    if event and event.asset_materialization:
        value = event.asset_materialization.metadata.get(GENERATION_KEY)
        scored = getattr(value, "value", value)
    if scored == generation:
        return dg.SkipReason(f"the index ({generation[:8]}) is evaluated")
    if ingest_in_progress(settings.state_dir):
        return dg.SkipReason("an ingest of this corpus is in progress (its lock is held); evaluating once it ends")
    # this corpus's runs: another corpus's ingest or evaluation holds nothing of this one back
    in_flight = context.instance.get_runs(filters=dg.RunsFilter(statuses=_IN_FLIGHT, tags={CORPUS_TAG: corpus.name}))
    if any(r.tags.get("rag/run") == "evaluation" for r in in_flight):
        return dg.SkipReason("an evaluation run is queued or running")
    cursor = json.loads(context.cursor) if context.cursor else {}
    waiting_since = cursor.get("since", time.time()) if cursor.get("generation") == scored else time.time()
    context.update_cursor(json.dumps({"generation": scored, "since": waiting_since}))
    ingesting = [r for r in in_flight if r.tags.get("rag/run") == "index"]
    if ingesting and time.time() - waiting_since < EVALUATION_MAX_DEFER_SECONDS:
        return dg.SkipReason(f"{len(ingesting)} ingestion run(s) in flight; evaluating once they finish")
    return dg.RunRequest(run_key=f"evaluate-{generation}", tags=evaluation_run_tags(corpus))
