"""What `rag ingest` says about documents whose run did not finish them: a file saved while its run
read it, and a run that failed. Every discovered document is counted once, and the counts are true.

The embedder is the OpenAI-compatible stub server on 127.0.0.1, made slow so the test can save a file
at a known moment: after the run parsed and chunked it, while its chunks are being embedded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets_tests.support.openai_server import Fault, OpenAIStubServer

pytestmark = pytest.mark.system

TARGET = "guide/evaluation.md"
LATE = "The zebra crossing protocol was added while the ingest was running."


@pytest.fixture
def stub(rag_env, dagster_home, monkeypatch):
    with OpenAIStubServer(api_key="sk-test-changed") as server:
        monkeypatch.setenv("RAG_EMBEDDER", "openai")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-changed")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_OPENAI_MAX_RETRIES", "1")
        monkeypatch.setenv("RAG_OPENAI_BREAKER_FAILURES", "100")
        yield server


def start_ingest() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rag_assets", "ingest", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


def wait_for_embedding_of(server: OpenAIStubServer, text: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in str(i) for r in server.embedding_requests for i in r.inputs):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no embedding request for the document"
        time.sleep(0.05)


def stored_texts() -> list[str]:
    settings = Settings.from_env()
    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    return [text for _, text, meta in store.iter_all() if meta["doc_path"] == TARGET]


def test_a_file_saved_during_its_run_is_indexed_at_its_new_version(stub, rag_env):
    stub.always(Fault.slow(1.5))
    proc = start_ingest()
    wait_for_embedding_of(stub, "Add Test Case", proc)  # parsed and chunked, now being embedded
    path = rag_env / "docs" / TARGET
    path.write_text(path.read_text(encoding="utf-8") + f"\n## Late addition\n\n{LATE}\n", encoding="utf-8")
    out, err = proc.communicate(timeout=600)
    stub.always(None)
    assert proc.returncode == 0, out + err
    summary = json.loads(out)
    assert summary["documents_processed"] == summary["documents_discovered"] == 3, summary
    assert summary["documents_unchanged"] == 0 and summary["errors"] == []
    assert any(LATE in text for text in stored_texts())  # the version on disk when the ingest returned


def test_an_interrupted_run_counts_its_documents_as_not_indexed_not_unchanged(stub, rag_env):
    first = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True, text=True,
                           env=os.environ.copy(), timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    edited = {"guide/streaming.md", "rate-limits.md"}
    for name in edited:
        path = rag_env / "docs" / name
        path.write_text(path.read_text(encoding="utf-8") + "\nOne more sentence for the next run.\n", encoding="utf-8")
    stub.always(Fault.slow(30))
    proc = start_ingest()
    wait_for_embedding_of(stub, "One more sentence", proc)
    proc.send_signal(signal.SIGTERM)  # the ingest stops (its run CANCELED) and still reports
    out, err = proc.communicate(timeout=120)
    stub.always(None)
    assert proc.returncode == 143, out + err  # stopped by SIGTERM (docs/cli.md's exit codes)
    summary = json.loads(out)
    counts = (summary["documents_processed"], summary["documents_unchanged"], summary["documents_failed"],
              summary["documents_not_started"])
    # it said (0, 3, 0) once: "unchanged" for work never done; then (0, 1, 2): "failed" for work a stop cut short
    assert counts == (0, 1, 0, 2), summary
    assert summary["interrupted"] == "SIGTERM" and "2 not started" in err, err

    again = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True, text=True,
                           env=os.environ.copy(), timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    summary = json.loads(again.stdout)
    assert (summary["documents_processed"], summary["documents_unchanged"], summary["documents_failed"]) == (2, 1, 0)
