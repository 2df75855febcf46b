"""`rag watch`: a saved file becomes a queued run within a second, not one sensor loop later.

Dagster evaluates sensors from a daemon loop that wakes every 5 seconds whatever a sensor's interval
(dagster._daemon.sensor.MIN_INTERVAL_LOOP_TIME), so docs_sensor alone leaves a change waiting 2.5 s
on average and up to 5 s before it is even looked at (benchmarks/freshness.md). The watcher follows
the docs folder with the operating system's file events (watchfiles: inotify on Linux), plans the
same runs the sensor would (change_runs.plan_change_runs: staleness rule, partition ranges, catalog
run, deletion guard) and submits them to the running Dagster webserver over its GraphQL API, as the
UI's "Materialize" does. The runs go through the instance's queue and run launcher like any other,
so they show in the UI, keep the queue's one-writer limit and start in the warm worker.

While it runs, its heartbeat (watch_heartbeat) makes docs_sensor stand back, so a change gets one
set of runs; the sensor catches up on anything left once the watcher stops. A look also happens
every FALLBACK_LOOK_SECONDS without an event (file systems that send none: network mounts).
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Callable
from urllib.parse import urlparse

import dagster as dg

from .change_runs import ChangePlan, plan_change_runs
from .fanout import LOCATION
from .resources import IndexResources, run_settings_config
from .sensors import index_run_tags
from .watch_heartbeat import Heartbeat

ASSET_JOB = "__ASSET_JOB"  # Dagster's implicit job over every asset: what the UI's "Materialize" runs
REPOSITORY = "__repository__"  # the repository a Definitions object is served as
WATCH_TAG = "rag/requested_by"
# the watcher sees a save as it happens, so it waits for a file to be this old (not the sensor's
# second) before reading it: editors write a file in one go, and a file still growing is looked at again
WATCH_SETTLE_SECONDS = 0.2
WATCH_STEP_MS = 50  # how long the folder must stay quiet before a batch of events is handled
FALLBACK_LOOK_SECONDS = 30
RETRY_SECONDS = 2.0

if TYPE_CHECKING:
    from .corpus_definitions import CorpusDefinitions

# submits a run of these assets with these tags and this run config; its run id
Submit = Callable[[list[dg.AssetKey], dict[str, str], dict], str]


class GraphQLSubmitter:
    """Submits runs of the implicit asset job to a Dagster webserver (dagster_graphql's client)."""

    def __init__(self, url: str, location: str = LOCATION, timeout: int = 60):
        from dagster_graphql import DagsterGraphQLClient

        parsed = urlparse(url if "://" in url else f"http://{url}")
        if not parsed.hostname:
            raise ValueError(f"not a webserver address: {url!r}")
        self.url = f"{parsed.scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
        self.location = location
        self.client = DagsterGraphQLClient(parsed.hostname, port_number=parsed.port, use_https=parsed.scheme == "https",
                                           path_prefix=parsed.path.rstrip("/"), timeout=timeout)

    def __call__(self, assets: list[dg.AssetKey], tags: dict[str, str], run_config: dict) -> str:
        return self.client.submit_job_execution(ASSET_JOB, repository_location_name=self.location,
                                                repository_name=REPOSITORY, asset_selection=assets, tags=tags,
                                                run_config=run_config)

    def reachable(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/server_info", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False


class DocsWatcher:
    """Plans and submits the runs a corpus's folder changes need; one `look` per batch of file events.

    Every run it submits carries the corpus's settings as the watcher resolved them (its --docs-dir and
    corpus flags) as run_settings config: the webserver's code location reads its own environment, and
    the runs must index the folder the watcher follows and planned for, into the collection it checked."""

    def __init__(self, corpus: "CorpusDefinitions", instance: dg.DagsterInstance, submit: Submit,
                 resources: IndexResources, say: Callable[[str], None] = print):
        self.corpus, self.instance, self.submit, self.say = corpus, instance, submit, say
        self.resources = resources  # the configured ones the runs it submits use (the staleness rule's)
        self.cursor: str | None = None  # the folder as last planned: None = look at every file once

    def look(self) -> list[str]:
        """Plan the runs for what changed since the last look and submit them; their run ids.

        The cursor moves only once every run is submitted: a look whose submission failed (the
        webserver restarting) is planned again by the next look."""
        settings = self.corpus.corpus.settings()
        ingestion = self.corpus.ingestion
        started = time.perf_counter()
        plan = plan_change_runs(settings, self.cursor, self.instance.get_dynamic_partitions(ingestion.partitions.name),
                                self.resources, settle_seconds=WATCH_SETTLE_SECONDS, owner="rag watch")
        for line in plan.warnings:
            self.say(f"warning: {line}")
        if not plan.any:
            self.cursor = plan.cursor
            return []
        if plan.new_keys:
            self.instance.add_dynamic_partitions(ingestion.partitions.name, plan.new_keys)
        run_ids = []
        tags = {**index_run_tags(self.corpus.corpus), WATCH_TAG: "rag watch"}
        config = run_settings_config(self.corpus.corpus)
        for run in plan.document_runs:
            run_ids.append(self.submit([a.key for a in ingestion.per_document],
                                       {**tags, **run.tags, "rag/changed_documents": str(len(run.keys))}, config))
        if plan.catalog:
            run_ids.append(self.submit([ingestion.document_catalog.key], tags, config))
        self.cursor = plan.cursor
        self.say(_describe(plan, run_ids, time.perf_counter() - started))
        return run_ids

    def follow(self, stop_event=None) -> None:
        """Look once (what changed while nobody watched), then after every batch of file events
        until `stop_event` is set (or Ctrl-C)."""
        import watchfiles

        settings = self.corpus.corpus.settings()
        with Heartbeat(settings):
            self._look_until_submitted(stop_event)
            for _changes in watchfiles.watch(settings.docs_dir, step=WATCH_STEP_MS, stop_event=stop_event,
                                             rust_timeout=int(FALLBACK_LOOK_SECONDS * 1000), yield_on_timeout=True,
                                             raise_interrupt=False):
                self._look_until_submitted(stop_event)

    def _look_until_submitted(self, stop_event) -> None:
        warned = False
        while True:
            try:
                self.look()
                return
            except FileNotFoundError as exc:
                self.say(f"warning: {exc}; nothing removed, looking again when it is back")
                return
            except Exception as exc:  # the webserver restarting, a run that could not be submitted
                if not warned:
                    self.say(f"could not submit runs ({type(exc).__name__}: {str(exc).splitlines()[0][:300]}); "
                             f"trying again every {RETRY_SECONDS:.0f} s")
                    warned = True
            if stop_event is not None and stop_event.wait(RETRY_SECONDS):
                return
            if stop_event is None:
                time.sleep(RETRY_SECONDS)


def _describe(plan: ChangePlan, run_ids: list[str], seconds: float) -> str:
    keys = sorted({k for run in plan.document_runs for k in run.keys})
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    what = [f"{len(keys)} changed ({shown})"] if keys else []
    if plan.catalog:
        what.append("catalog")
    return (f"{time.strftime('%H:%M:%S')} {'; '.join(what)}: {len(run_ids)} run(s) queued "
            f"({', '.join(r[:8] for r in run_ids)}) in {seconds:.2f} s")
