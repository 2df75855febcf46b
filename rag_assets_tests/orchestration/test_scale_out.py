"""Beyond one machine, on this one: the state in a real PostgreSQL (RAG_STATE_URL), vectors in a real
Chroma server, embeddings from an OpenAI-compatible server with latency, and `rag ingest
--workers 4` launching its runs through the instance's run launcher (local subprocesses).

Four workers index exactly what one does; a worker SIGKILLed mid-run fails alone (the others
finish) and the next ingest converges to the same index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dagster as dg
import pytest

from rag_assets_tests.support.chroma_server import ChromaServer, free_port, requires_chroma
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.dagster_instance import instance_yaml
from rag_assets_tests.support.environment import subprocess_env
from rag_assets_tests.support.openai_server import OpenAIStubServer
from rag_assets_tests.support.postgres_server import createdb, postgres_server, requires_postgres

pytestmark = [pytest.mark.system, *requires_postgres, requires_chroma]
KEY = "sk-scale-out-test-0000"


@pytest.fixture
def services(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    docs = write_corpus(tmp_path / "docs")
    for i in range(5):
        (docs / "pages" / f"page-{i}.md").parent.mkdir(exist_ok=True)
        (docs / "pages" / f"page-{i}.md").write_text(
            f"# Page {i}\n\n## Setup {i}\n\nStep {i} installs the tool and checks its version.\n\n"
            f"## Usage {i}\n\nRun the tool with option {i} to index folder number {i}.\n")
    port = free_port()
    chroma = ChromaServer(tmp_path / "chroma-server", port, tmp_path / "chroma.log").start()
    # 0.4 s a request, one text a request, one request at a time per worker: the latency dominates,
    # so runs overlap even on a loaded machine
    with postgres_server(databases=()) as pg, OpenAIStubServer(api_key=KEY, latency=0.4) as openai:
        yield tmp_path, pg, port, openai
    chroma.stop()


def env_for(tmp_path, pg, port, openai, name: str) -> dict[str, str]:
    home = tmp_path / f"home-{name}"
    home.mkdir(exist_ok=True)
    # Dagster's default launcher (a subprocess per run), not the repo's warm one (test_warm_launcher.py)
    (home / "dagster.yaml").write_text(instance_yaml(home, run_launcher=None))
    return subprocess_env(
        tmp_path, DAGSTER_HOME=str(home), RAG_STATE_URL=createdb(pg, f"rag_{name}"), RAG_STATE_DIR=str(tmp_path / f"state-{name}"),
        CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(port), RAG_COLLECTION=f"chunks_{name}",
        RAG_EMBEDDER="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=openai.base_url,
        RAG_OPENAI_BATCH_SIZE="1", RAG_OPENAI_CONCURRENCY="1", RAG_DOCUMENTS_PER_RUN="2",
    )


def ingest(env: dict[str, str], *args: str, codes=(0,)) -> dict:
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json", *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def indexed(port: int, collection: str) -> set[tuple[str, str]]:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=ChromaSettings(anonymized_telemetry=False))
    got = client.get_collection(collection).get(include=["documents", "metadatas"])
    return {(meta["doc_path"], text) for text, meta in zip(got["documents"], got["metadatas"])}


def test_four_workers_index_what_one_does_and_a_killed_worker_converges(services):
    tmp_path, pg, port, openai = services
    one = env_for(tmp_path, pg, port, openai, "w1")
    four = env_for(tmp_path, pg, port, openai, "w4")
    reference = ingest(one)
    assert reference["documents_processed"] == 8 and reference["documents_failed"] == 0
    expected = indexed(port, "chunks_w1")

    # four workers; one of them is killed as soon as two runs are under way. The test opens the fresh
    # instance before the ingest starts: two processes creating its SQLite databases at once stamp
    # them twice ("more than one head present"), and the test does not take the CLI's instance lock.
    with dg.DagsterInstance.from_config(four["DAGSTER_HOME"]) as instance:
        proc = subprocess.Popen([sys.executable, "-m", "rag_assets", "ingest", "--json", "--workers", "4"], env=four,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = _kill_one_worker(instance, proc)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, f"one run must fail, the others finish\n{out}\n{err[-3000:]}"
    report = json.loads(out)
    assert any(killed in e["error"] for e in report["errors"] if e["doc_path"] == "*"), report["errors"]
    assert report["documents_processed"] >= 3  # the other runs finished their documents

    again = ingest(four, "--workers", "4")
    assert again["documents_failed"] == 0 and again["documents_processed"] >= 1
    assert indexed(port, "chunks_w4") == expected
    assert ingest(four, "--workers", "4")["documents_processed"] == 0  # converged: nothing left to do


def _kill_one_worker(instance: dg.DagsterInstance, coordinator: subprocess.Popen) -> str:
    """SIGKILL the process of one started run; the run id."""
    from rag_assets.orchestration.fanout import _worker_pid

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if coordinator.poll() is not None:
            out, err = coordinator.communicate()
            raise AssertionError(f"the ingest finished (exit {coordinator.returncode}) before a worker could be "
                                 f"killed\n{out[-3000:]}\n{err[-3000:]}")
        started = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        pids = [(run.run_id, _worker_pid(instance, run.run_id)) for run in started]
        pids = [(run_id, pid) for run_id, pid in pids if pid]
        if len(pids) >= 2:
            run_id, pid = pids[0]
            os.kill(pid, signal.SIGKILL)
            return run_id
        time.sleep(0.2)
    raise TimeoutError("no two runs were started in time")
