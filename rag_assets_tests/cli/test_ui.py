"""`rag ui`: `dagster dev` on the project's instance, no temporary DAGSTER_HOME, and it stops, with
nothing it started left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from rag_assets.cli.ui import STOP_SECONDS, WORKER_GRACE_SECONDS
from rag_assets_tests.support.chroma_server import free_port
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.dagster_dev import TERMINAL, Webserver, wait_until_loaded
from rag_assets_tests.support.dagster_instance import instance_yaml
from rag_assets_tests.support.environment import subprocess_env
from rag_assets_tests.support.openai_server import OpenAIStubServer

KEY = "sk-test-ui-000000"
PER_DOCUMENT = ["parsed_documents", "markdown_blocks", "document_chunks", "chunk_embeddings", "vector_index"]


def _launch(server: Webserver, assets: list[str], tags: dict[str, str] | None = None) -> str:
    launched = server.gql(
        """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
             ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
        {"p": {"selector": {"repositoryLocationName": "rag_assets", "repositoryName": "__repository__",
                            "jobName": "__ASSET_JOB", "assetSelection": [{"path": [a]} for a in assets]},
               "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in (tags or {}).items()]}}},
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _run(server: Webserver, run_id: str) -> dict:
    return next(r for r in server.runs() if r["runId"] == run_id)


def _until(what: str, check, timeout: float, server: Webserver):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    try:
        runs = server.runs()
    except OSError:  # the UI is gone
        runs = "(no UI)"
    pytest.fail(f"{what} not within {timeout} s: {runs}\n{server.tail()}")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _kill_everything_of(root) -> None:
    """Whatever a failed run of this test left behind: every process whose docs folder is under root."""
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("RAG_DOCS_DIR", "").startswith(str(root)):
                proc.kill()
        except (psutil.Error, OSError):
            continue


@pytest.mark.system
def test_rag_ui_serves_the_project_instance_and_nothing_it_started_outlives_it(tmp_path):
    """Issue 36, item 1: after `rag ui` stopped, its run worker went on (at 50 % CPU) as an orphan. Here
    a run is held inside its embedding step (the embedding server answers after 600 s) when the UI is
    stopped with SIGTERM: the UI exits, and the worker running that run is gone with it."""
    write_corpus(tmp_path / "docs")
    home = tmp_path / "home"
    home.mkdir()
    # the project's instance: each run in a warm worker of its own session (not in dagster dev's group)
    (home / "dagster.yaml").write_text(instance_yaml(tmp_path / "dagster"))
    with OpenAIStubServer(api_key=KEY, latency=600) as openai:
        # as a user runs it: from the folder holding dagster.yaml (the repo root), DAGSTER_HOME unset
        env = subprocess_env(tmp_path, RAG_EMBEDDER="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=openai.base_url,
                             RAG_OPENAI_TIMEOUT_SECONDS="900",
                             RAG_EVALUATION_INTERVAL_SECONDS="3600", DAGSTER_DISABLE_TELEMETRY="1",
                             NO_PROXY="127.0.0.1,localhost")
        env.pop("DAGSTER_HOME", None)
        port = free_port()
        log = tmp_path / "ui.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "rag_assets", "ui", "--port", str(port)], cwd=home, env=env,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        server = Webserver(port, log)
        worker = None
        try:
            wait_until_loaded(server, proc, set(PER_DOCUMENT), timeout=180)
            text = log.read_text()
            assert str(home) in text  # it says which instance it serves
            assert "temporary" not in text.lower() and not list(home.glob(".tmp_dagster_home_*"))

            catalog = _launch(server, ["document_catalog"])
            _until("the catalog run", lambda: _run(server, catalog)["status"] in TERMINAL, 120, server)
            assert _run(server, catalog)["status"] == "SUCCESS", server.tail()
            keys = server.gql('{ assetNodeOrError(assetKey: {path: ["parsed_documents"]}) '
                              "{ ... on AssetNode { partitionKeys } } }")["assetNodeOrError"]["partitionKeys"]
            held = _launch(server, PER_DOCUMENT, {"dagster/asset_partition_range_start": keys[0],
                                                  "dagster/asset_partition_range_end": keys[-1]})
            _until("the run's first embedding request", lambda: openai.embedding_requests, 120, server)
            tags = {t["key"]: t["value"] for t in _run(server, held)["tags"]}
            worker = int(tags["rag/worker_pid"])
            assert os.getpgid(worker) != os.getpgid(proc.pid)  # a session of its own: a signal to the UI's misses it

            started = time.monotonic()
            os.killpg(proc.pid, signal.SIGTERM)  # what a service manager or a terminal's close sends
            code = proc.wait(timeout=STOP_SECONDS + WORKER_GRACE_SECONDS + 30)
            assert _until("the worker's exit", lambda: _gone(worker), 10, server)
            assert time.monotonic() - started < STOP_SECONDS + WORKER_GRACE_SECONDS + 30
            assert code == 143, log.read_text()[-3000:]
            assert f"{worker} (-m rag_assets.orchestration.warm_worker)" in log.read_text(), log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            _kill_everything_of(tmp_path)
