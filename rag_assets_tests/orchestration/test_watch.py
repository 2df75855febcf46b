"""rag_assets.orchestration.watch: the runs DocsWatcher submits carry the settings it planned with.

The webserver runs them with its code location's definitions, which read the webserver's environment:
here those are the module-level definitions over the test's environment (its RAG_DOCS_DIR is the
sample corpus), and the watcher follows another folder (as `rag watch --docs-dir` does). Each submission
is executed in process on a real instance by that implicit asset job, as the webserver's run worker
would: real Chroma, real model."""

import os
import time

import dagster as dg

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.orchestration.definitions import DEFAULT, defs, documents_partitions
from rag_assets.orchestration.resources import LAUNCHED_SETTINGS
from rag_assets.orchestration.loaded_corpora import corpus_definitions, index_resources
from rag_assets.orchestration.watch import ASSET_JOB, WATCH_SETTLE_SECONDS, DocsWatcher
from rag_assets_tests.support.corpus import write_corpus

PAGE = "---\ntitle: Quokkas\n---\n# Quokkas\n\n## Expenses\n\nQuokkas file their expense reports every second Thursday.\n"


class CodeLocationRuns:
    """A Submit: runs the code location's own implicit asset job in this process, on the instance."""

    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance
        self.job = defs.resolve_implicit_global_asset_job_def()
        assert self.job.name == ASSET_JOB  # the job the watcher names to the webserver
        self.submitted: list[tuple[list[dg.AssetKey], dict, dict]] = []

    def __call__(self, assets: list[dg.AssetKey], tags: dict[str, str], run_config: dict) -> str:
        self.submitted.append((assets, tags, run_config))
        result = self.job.execute_in_process(instance=self.instance, asset_selection=assets, tags=tags,
                                             run_config=run_config, raise_on_error=False)
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        return result.run_id


def test_the_watchers_runs_index_the_folder_it_follows_not_the_code_locations(rag_env, dagster_home):
    watched = write_corpus(rag_env / "watched", {"quokkas.md": PAGE})
    time.sleep(WATCH_SETTLE_SECONDS + 0.1)  # the watcher reads files once they are this old
    assert Settings.from_env().docs_dir == rag_env / "docs"  # the code location's folder: three pages
    # what `rag watch --docs-dir watched` resolves: the environment with its flag over it
    corpus = DEFAULT.corpus.over(Settings.from_env({**os.environ, "RAG_DOCS_DIR": str(watched)}))
    with dg.DagsterInstance.get() as instance:
        submit = CodeLocationRuns(instance)
        run_ids = DocsWatcher(corpus_definitions(corpus), instance, submit, index_resources(), say=lambda _: None).look()

        assert len(run_ids) == len(submit.submitted) >= 2  # the document run(s) and the catalog run
        assert instance.get_dynamic_partitions(documents_partitions.name) == ["quokkas.md"]
    settings = Settings.from_env()
    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    assert store.doc_paths() == {"quokkas.md"}  # the watched folder's page, nothing of the environment's
    for _assets, _tags, run_config in submit.submitted:  # the same run config `rag ingest --workers` gives
        assert run_config == {"resources": {"run_settings": {"config": {"variables": corpus.base_settings().variables(
            LAUNCHED_SETTINGS)}}}}
        assert run_config["resources"]["run_settings"]["config"]["variables"]["RAG_DOCS_DIR"] == str(watched)
