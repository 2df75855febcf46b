"""OPENAI_API_KEY never leaks: not in `rag ingest` output (human or --json), not in error messages,
not in the Dagster runs' config, tags, metadata or event logs, not in any file the runs write.

The embedder talks to the stub OpenAI server (rag_assets_tests.support.openai_server) over real HTTP; the
stub's 401 answer quotes the key it was sent, in full, so the 401 run is a real leak test.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets_tests.support.openai_server import Fault, OpenAIStubServer

pytestmark = pytest.mark.system

SECRET = f"sk-test-SECRET-{secrets.token_hex(16)}"
TAIL = SECRET[len("sk-test-"):]  # a partial leak (prefix cut off) still counts


@pytest.fixture
def openai_env(rag_env, dagster_home, monkeypatch):
    with OpenAIStubServer(api_key=SECRET) as server:
        monkeypatch.setenv("RAG_EMBEDDER", "openai")
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_OPENAI_MAX_RETRIES", "2")
        monkeypatch.setenv("RAG_OPENAI_TIMEOUT_SECONDS", "5")
        monkeypatch.setenv("RAG_LOG_LEVEL", "DEBUG")  # every Dagster event on the console too: the worst case
        yield server


def rag(*args, codes=(0,)) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def assert_no_secret(text: str, where: str) -> None:
    assert SECRET not in text and TAIL not in text, f"the API key leaked into {where}"


def dagster_records(dagster_home: Path, run_ids: list[str]) -> str:
    """Everything the instance keeps about these runs, serialized: run config, tags, event log
    records (materialization metadata, step failures with their error chains, log messages)."""
    import dagster as dg
    from dagster._serdes import serialize_value

    parts = []
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        for run_id in run_ids:
            run = instance.get_run_by_id(run_id)
            assert run is not None, run_id
            parts.append(serialize_value(run))
            records = instance.all_logs(run_id)
            assert records, f"no event log for run {run_id}"
            parts.extend(serialize_value(r) for r in records)
    return "\n".join(parts)


def files_containing_secret(root: Path) -> list[str]:
    hits = []
    needles = (SECRET.encode(), TAIL.encode())
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                hits.append(str(path.relative_to(root)))
    return hits


def test_api_key_never_leaks_from_a_good_a_failing_and_a_rejected_ingest(openai_env, rag_env, dagster_home, monkeypatch):
    server = openai_env
    run_ids: list[str] = []

    # 1. a full, successful ingest (JSON and human output)
    ok = rag("ingest", "--json")
    report = json.loads(ok.stdout)
    assert report["documents_processed"] == 3 and report["errors"] == []
    assert server.embedding_requests and all(
        r.headers.get("authorization") == f"Bearer {SECRET}" for r in server.embedding_requests
    )  # the key really was in use
    assert_no_secret(ok.stdout + ok.stderr, "the output of a good ingest")
    run_ids += report["run_ids"]

    # 2. the server answers 500 to everything: embedding fails after its retries
    doc = rag_env / "docs" / "rate-limits.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n## Bursts\n\nShort bursts above the limit are queued.\n", encoding="utf-8")
    server.always(Fault.status(500))
    failing = rag("ingest", "--json", codes=(1,))
    report = json.loads(failing.stdout)
    errors = {e["doc_path"]: e["error"] for e in report["errors"]}
    assert "rate-limits.md" in errors and "500" in errors["rate-limits.md"], errors
    assert_no_secret(failing.stdout + failing.stderr, "the output of a failing ingest")
    run_ids += report["run_ids"]
    human = rag("ingest", codes=(1,))
    assert "FAILED rate-limits.md" in human.stderr
    assert_no_secret(human.stdout + human.stderr, "the human output of a failing ingest")
    server.always(None)

    # 3. a wrong key: the stub's 401 message quotes the key that was sent, in full
    wrong = f"sk-test-WRONG-{secrets.token_hex(16)}"
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    rejected = rag("ingest", "--json", codes=(1,))
    report = json.loads(rejected.stdout)
    assert any("401" in e["error"] for e in report["errors"]), report["errors"]
    for text in (rejected.stdout, rejected.stderr):
        assert wrong not in text and wrong[len("sk-test-"):] not in text, "the rejected key leaked"
    run_ids += report["run_ids"]
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    # Dagster's records of all those runs, and every file written anywhere under the test folder
    assert_no_secret(dagster_records(dagster_home, run_ids), "the Dagster run records / event logs")
    assert "500" in dagster_records(dagster_home, run_ids)  # (the failure itself is recorded)
    assert files_containing_secret(rag_env) == []
    wrong_hits = [p for p in rag_env.rglob("*") if p.is_file() and wrong.encode() in p.read_bytes()]
    assert wrong_hits == []
