"""Chroma as a server (CHROMA_HOST/CHROMA_PORT -> HttpClient): ingest and query through it; the
server down before a run, and killed in the middle of one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest

from rag_assets.config import Settings
from rag_assets.ingest.discovery import discover
from rag_assets.index.stage_store import INDEXED, StageStore
from rag_assets_tests.support.chroma_server import ChromaServer, free_port, requires_chroma
from rag_assets_tests.system.test_crash_recovery import edit_doc, expected_index

pytestmark = [pytest.mark.system, requires_chroma]


@pytest.fixture
def server(rag_env, dagster_home, monkeypatch):
    port = free_port()
    srv = ChromaServer(rag_env / "chroma-server", port, rag_env / "chroma-server.log").start()
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(port))
    yield srv
    srv.stop()


def rag(*args, codes=(0,), env=None):
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc


def read_server_index(port: int, collection: str = "rag_chunks") -> dict[str, dict[str, str]]:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=ChromaSettings(anonymized_telemetry=False))
    got = client.get_collection(collection).get(include=["documents", "metadatas"])
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"]):
        out[meta["doc_path"]][cid] = text
    return dict(out)


def assert_consistent(settings: Settings, port: int, where: str) -> None:
    index = read_server_index(port)
    assert index == expected_index(settings), f"{where}: the server's index differs from a clean ingest"
    stages = StageStore(settings.state_dir)
    for ref in discover(settings.docs_dir).documents:
        record = stages.read(INDEXED, ref.doc_path)
        assert record and record["source_hash"] == ref.content_hash, f"{where}: {ref.doc_path} not indexed at its version"
        assert set(record["payload"]["chunk_ids"]) == set(index.get(ref.doc_path, {})), f"{where}: {ref.doc_path} mixed"


def test_ingest_and_query_through_the_server(server, rag_env):
    report = json.loads(rag("ingest", "--json").stdout)
    assert report["documents_processed"] == 3 and report["errors"] == []
    settings = Settings.from_env()
    assert not settings.chroma_path.exists()  # the embedded store was never touched
    assert_consistent(settings, server.port, "first ingest")
    answer = json.loads(rag("query", "how many requests per minute on the free tier", "--json", "--mode", "vector").stdout)
    assert answer["results"][0]["doc_path"] == "rate-limits.md"


def test_server_down_before_a_run_then_documents_are_retried(server, rag_env):
    settings = Settings.from_env()
    rag("ingest", "--json")
    doc = rag_env / "docs" / "guide" / "evaluation.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n## Exporting\n\nExport graded results as CSV.\n", encoding="utf-8")
    server.stop()

    down = rag("ingest", "--json", codes=(1,))
    assert f"cannot open Chroma collection 'rag_chunks' at 127.0.0.1:{server.port}" in down.stderr, down.stderr
    assert "Traceback" not in down.stderr

    server.start()
    again = json.loads(rag("ingest", "--json").stdout)
    assert again["documents_processed"] == 1 and again["errors"] == []
    assert_consistent(settings, server.port, "after the server came back")


_KILL_SERVER_MID_REPLACE = textwrap.dedent(
    """
    import os, signal, sys
    from rag_assets.index.chroma_store import ChromaStore
    _call = ChromaStore._call
    state = {"upserts": 0}
    def _patched(self, fn, **kw):
        result = _call(self, fn, **kw)
        if getattr(fn, "__name__", "") == "upsert":
            state["upserts"] += 1
            if state["upserts"] == 1:  # new chunks of the first document written, its stale ones not yet deleted
                os.killpg(int(os.environ["CHROMA_SERVER_PGID"]), signal.SIGKILL)
        return result
    ChromaStore._call = _patched
    from rag_assets.cli.main import main
    sys.exit(main(["ingest", "--json"]))
    """
)


def test_server_killed_during_a_run_leaves_no_partial_document(server, rag_env):
    settings = Settings.from_env()
    rag("ingest", "--json")
    import random

    rng = random.Random(7)
    for rel in ("guide/evaluation.md", "guide/streaming.md", "rate-limits.md"):
        path = rag_env / "docs" / rel
        path.write_text(edit_doc(path.read_text(encoding="utf-8"), rng, "edited"), encoding="utf-8")

    proc = subprocess.run([sys.executable, "-c", _KILL_SERVER_MID_REPLACE], capture_output=True, text=True,
                          env={**os.environ, "CHROMA_SERVER_PGID": str(server.proc.pid)}, timeout=300)
    assert server.proc.poll() is not None, "the server was never killed"
    assert proc.returncode == 1, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout)
    per_doc = {e["doc_path"]: e["error"] for e in report["errors"] if e["doc_path"] != "*"}
    assert per_doc, report  # each document that could not be written is named, with the reason
    assert all("Chroma server unavailable" in err for err in per_doc.values()), per_doc

    server.proc = None
    server.start()
    again = json.loads(rag("ingest", "--json").stdout)
    assert again["errors"] == [] and again["documents_processed"] >= len(per_doc)
    assert_consistent(settings, server.port, "after the server was killed mid-run and restarted")
