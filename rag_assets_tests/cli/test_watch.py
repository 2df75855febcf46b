"""`rag watch` beside a real `dagster dev` (queue, daemon, warm launcher) with docs_sensor on: what
was stale when it started is indexed, a save and a deletion become runs the daemon starts (tagged as
the watcher's), the sensor stands back meanwhile, and Ctrl-C stops it and removes its heartbeat, even
when it was started with SIGINT ignored (a shell's background job, as CI may be). Every run it queued
carries its docs folder as run_settings config (the webserver's code location reads its own environment)."""

import json
import signal
import subprocess
import sys
import time

import pytest
import yaml

from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.dagster_dev import REPO, dagster_dev, dagster_dev_env

pytestmark = pytest.mark.system

STAGES = {"document_catalog", "parsed_documents", "markdown_blocks", "document_chunks", "chunk_embeddings",
          "vector_index"}
NEW_SENTENCE = "Quokkas file their expense reports every second Thursday."


def query(env, text: str) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "query", text, "--json", "--top-k", "10"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)["results"]


def wait_for(what: str, done, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s")


def start_watcher(args: list[str], env, log, ignore_sigint: bool = True) -> subprocess.Popen:
    # what `rag watch &` in a script does to the child: SIGINT ignored (the watcher must still stop on it)
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "rag_assets", "watch", *args], cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=ignore)


def test_rag_watch_queues_the_runs_each_change_needs(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    env = dagster_dev_env(tmp_path)
    with dagster_dev(tmp_path, env, STAGES) as server:
        log = tmp_path / "watch.log"
        watcher = start_watcher(["--url", server.url], env, log)
        try:
            # the sensor goes on once the watcher's heartbeat is there: a tick before it would rightly
            # queue runs of its own for what nobody was watching yet
            wait_for("the watcher's heartbeat", lambda: (tmp_path / "state" / "watch.json").exists(), timeout=120)
            location = server.gql("{ workspaceOrError { ... on Workspace { locationEntries { name } } } }")[
                "workspaceOrError"]["locationEntries"][0]["name"]
            server.gql("mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }",
                       {"s": {"repositoryLocationName": location, "repositoryName": "__repository__",
                              "sensorName": "docs_sensor"}})
            # nothing was indexed before: the watcher's first look queues every document
            wait_for("the first look's runs", lambda: any(r["doc_path"] == "rate-limits.md"
                                                           for r in query(env, "requests per minute rate limit")))
            page = docs / "guide" / "streaming.md"
            page.write_text(page.read_text() + f"\n\n{NEW_SENTENCE}\n", encoding="utf-8")
            wait_for("the saved sentence", lambda: any(NEW_SENTENCE in r["text"] for r in query(env, NEW_SENTENCE)))
            (docs / "rate-limits.md").unlink()
            wait_for("the deletion", lambda: not any(r["doc_path"] == "rate-limits.md"
                                                      for r in query(env, "requests per minute rate limit")))
            runs = server.wait_for_runs(1)
            index_runs = [r for r in runs if {"key": "rag/run", "value": "index"} in r["tags"]]
            assert index_runs and all({"key": "rag/requested_by", "value": "rag watch"} in r["tags"]
                                      for r in index_runs), index_runs  # none from the sensor: it stood back
            assert all(r["status"] == "SUCCESS" for r in index_runs), index_runs
            configs = {r["runId"]: yaml.safe_load(r["runConfigYaml"]) for r in server.gql(
                "{ runsOrError { ... on Runs { results { runId runConfigYaml } } } }")["runsOrError"]["results"]}
            assert all(configs[r["runId"]]["resources"]["run_settings"]["config"]["variables"]["RAG_DOCS_DIR"]
                       == str(docs) for r in index_runs), configs
        finally:
            watcher.send_signal(signal.SIGINT)
            code = watcher.wait(timeout=30)
        output = log.read_text()
        assert code == 0, output
        assert "following" in output and "stopped" in output, output
        assert not (tmp_path / "state" / "watch.json").exists()


def test_sigterm_stops_a_watcher_still_waiting_for_the_webserver(tmp_path):
    write_corpus(tmp_path / "docs")
    env = dagster_dev_env(tmp_path)
    log = tmp_path / "watch.log"
    watcher = start_watcher(["--url", "http://127.0.0.1:9"], env, log)  # nothing listens on port 9 (discard)
    try:
        wait_for("the wait for the webserver", lambda: "waiting for the Dagster webserver" in log.read_text(), timeout=60)
    finally:
        watcher.send_signal(signal.SIGTERM)
        code = watcher.wait(timeout=30)
    assert code == 0, log.read_text()
    assert "stopped before the webserver answered" in log.read_text()
