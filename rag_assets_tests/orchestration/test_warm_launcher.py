"""WarmRunLauncher: runs launched through the instance execute in pre-warmed worker processes,
one run per worker, and leave no process behind.

`rag ingest --workers 2` launches its runs through the instance's run launcher (fanout.py), so an
instance configured with WarmRunLauncher exercises the real launch path: a real code location, a
real SQLite instance, the local model, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import dagster as dg
import pytest

from rag_assets_tests.support.chroma_server import ChromaServer, free_port, requires_chroma
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.dagster_instance import instance_yaml
from rag_assets_tests.support.environment import subprocess_env

pytestmark = pytest.mark.system


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@requires_chroma
def test_runs_execute_in_warm_workers_one_run_each_and_none_is_left_behind(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    for i in range(4):
        (docs / "pages").mkdir(exist_ok=True)
        (docs / "pages" / f"page-{i}.md").write_text(f"# Page {i}\n\n## Usage {i}\n\nRun the tool with option {i}.\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home))  # the repo's: WarmRunLauncher
    port = free_port()
    chroma = ChromaServer(tmp_path / "chroma-server", port, tmp_path / "chroma.log").start()
    env = subprocess_env(tmp_path, DAGSTER_HOME=str(home), RAG_DOCUMENTS_PER_RUN="2",
                         CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(port), NO_PROXY="127.0.0.1,localhost")
    try:
        proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json", "--workers", "2"], env=env,
                              capture_output=True, text=True, timeout=600)
    finally:
        chroma.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["documents_failed"] == 0 and summary["documents_processed"] >= 4

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = [r for r in instance.get_runs() if r.job_name == "ingest_documents"]
    assert len(runs) >= 2
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [(r.run_id, r.status) for r in runs]
    pids = [int(r.tags["rag/worker_pid"]) for r in runs]
    assert len(set(pids)) == len(pids), "one run per worker"
    assert os.getpid() not in pids
    # the workers (and the spare warmed for a next run) end with the launching process
    deadline = time.monotonic() + 120  # only a guard against a hang: they end within seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids)
