"""In-process execution of a corpus's assets and stop detection: the runs the CLI and the Python API
start in their own process, what they left in their materialization metadata and their first error.

A run carries the process's tags (fanout.process_tags) and a launch tag of its own; stopped by Ctrl-C
or SIGTERM (stopping.py) it ends CANCELED with its finished steps kept (interrupt_logging). The
per-document assets run over contiguous stretches of the partition order, at most
RAG_DOCUMENTS_PER_RUN documents each (never one run per document), one after the other, so a killed
ingest keeps every finished run.
"""

from __future__ import annotations

import time
import uuid
from contextlib import nullcontext
from typing import Iterator, Sequence

import dagster as dg

from rag_assets.errors import RagError

from . import stopping
from .corpus_definitions import CorpusDefinitions
from .definitions import DEFAULT
from .fanout import process_tags
from .internals.interrupts import interrupts_held
from .interrupt_logging import cancel_if_stopped, interrupt_logging_config
from .loaded_corpora import asset_job
from .partition_ranges import plan_runs
from .resources import run_settings_config
from .sensors import CORPUS_TAG

# every in-process run of an ingest carries a tag of its own: a run that a Ctrl-C caught while
# Dagster was still creating it (before its interrupt handling) is found by it and cancelled
LAUNCH_TAG = "rag/launch"


def metadata_by_asset(materializations) -> dict[str, dict]:
    """asset name -> metadata values of its materializations among these (a range run's summary
    is on one partition's event, the same on each of a small run's)."""
    out: dict[str, dict] = {}
    for mat in materializations:
        out.setdefault(mat.asset_key.to_user_string(), {}).update({k: v.value for k, v in mat.metadata.items()})
    return out


def materialization_metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    return metadata_by_asset(e.step_materialization_data.materialization for e in result.get_asset_materialization_events())


def instance_metadata(instance: dg.DagsterInstance, run_id: str) -> dict[str, dict]:
    """The same for a run launched elsewhere, read from the instance's event log."""
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    return metadata_by_asset(r.dagster_event.step_materialization_data.materialization for r in records)


def execute(
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
    config = {**(run_config or {}), **console_logging(corpus)}
    config["loggers"] = {**config["loggers"], **interrupt_logging_config()}
    # under a stop watch (stopping.py), which records every signal, Dagster's interrupt capture is
    # held around the whole run: a signal during its creation is raised by its first step
    held = interrupts_held() if stopping.active() is not None else nullcontext()
    try:
        with held:
            result = asset_job(corpus).execute_in_process(
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


def stop_requested() -> bool:
    watch = stopping.active()
    return watch is not None and watch.requested


def was_stopped(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> bool:
    """The run ended because a stop was asked for: canceled, or any run after a signal."""
    if stop_requested():
        return True
    run = instance.get_run_by_id(result.run_id)
    return run is not None and run.status == dg.DagsterRunStatus.CANCELED


def signal_name(watch: stopping.StopWatch | None) -> str:
    """The stopping signal's name; a KeyboardInterrupt the watcher has not read yet is a SIGINT's."""
    if watch is not None and watch.signum is None:
        time.sleep(0.05)  # the watcher reads the signal number as the main thread handles it
    return stopping.NAMES.get(watch.signum if watch is not None else None, "SIGINT")


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
        if not stop_requested():
            yield 1, execute(instance, corpus, per_document, partition_key=partition_keys[0])
        return
    order = instance.get_dynamic_partitions(corpus.ingestion.partitions.name)
    for run in plan_runs(order, partition_keys, max_per_run):
        if stop_requested():
            return
        if run.first == run.last:  # one document: its own partition key (its metadata is its own)
            yield 1, execute(instance, corpus, per_document, partition_key=run.first)
        else:
            yield len(run.keys), execute(instance, corpus, per_document, tags=run.tags)


def launch_config(corpus: CorpusDefinitions) -> dict:
    """The run config of the runs launched in other processes: the console log level of the CLI's own
    runs, and the corpus's settings as this process resolved them (resources.run_settings_config), so
    they index what this ingest was told to."""
    return {**console_logging(corpus), **run_settings_config(corpus.corpus)}


def first_error(result: dg.ExecuteInProcessResult) -> str:
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


def first_error_of(instance: dg.DagsterInstance, run_id: str) -> str:
    for record in instance.all_logs(run_id, of_type={dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}):
        event = record.dagster_event
        if event.is_step_failure and event.step_failure_data.user_failure_data is not None:
            return event.step_failure_data.user_failure_data.description or event.message
        if event.message:
            return event.message
    return "see the run's logs in the Dagster UI"


def _subclasses(cls: type) -> set[str]:
    return {cls.__name__} | {name for sub in cls.__subclasses__() for name in _subclasses(sub)}


_OWN_ERRORS = _subclasses(RagError)


def console_logging(corpus: CorpusDefinitions) -> dict:
    """Run config for Dagster's console log level in the CLI's own runs: the CLI reports failures
    itself (one line each), so by default Dagster prints nothing; RAG_LOG_LEVEL=INFO (the corpus's
    settings' log_level) shows the run logs as they go."""
    level = corpus.corpus.base_settings().log_level.strip().upper() or "CRITICAL"
    return {"loggers": {"console": {"config": {"log_level": level}}}}

