"""The disk under the embedded vector store fills up: the ingest ends in bounded time with one clear
line, readers keep answering from what is committed, and once there is room the next run converges.

A real tmpfs of 16 MB under the Chroma folder (root only: mounting needs it), filled but for 4 MB,
then a page of about a thousand chunks. Before the store checked its disk, the write half-landed in
Chroma's log and every later query failed ("Failed to apply logs to the metadata segment").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

QUESTION = "What HTTP status comes back when I exceed the requests per minute?"
BIG = "# Big page\n\n" + "\n\n".join(
    f"## Part {i}\n\n" + " ".join(f"word{i}x{j} lorem ipsum dolor" for j in range(40)) for i in range(300))


def rag(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=timeout)


@pytest.fixture
def small_disk(rag_env):
    chroma = rag_env / "chroma"
    chroma.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(chroma)], capture_output=True).returncode:
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        yield chroma
    finally:
        subprocess.run(["umount", "-l", str(chroma)], check=True)


def test_a_full_disk_fails_the_write_at_once_and_readers_keep_answering(small_disk, dagster_home, rag_env):
    first = rag("ingest")
    assert first.returncode == 0, first.stdout + first.stderr
    stat = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - 4 * 2**20))
    (rag_env / "docs" / "big.md").write_text(BIG, encoding="utf-8")

    full = rag("ingest", "--json", timeout=300)  # it hung (or half-wrote) here
    assert full.returncode == 1, full.stdout + full.stderr
    summary = json.loads(full.stdout)
    errors = {e["doc_path"]: e["error"] for e in summary["errors"]}
    assert set(errors) == {"big.md"}, errors
    assert "not enough free disk" in errors["big.md"] and str(small_disk) in errors["big.md"], errors
    for mode in ("hybrid", "vector"):
        query = rag("query", QUESTION, "--top-k", "2", "--mode", mode, timeout=120)
        assert query.returncode == 0 and "rate-limits.md" in query.stdout, query.stdout + query.stderr

    filler.unlink()  # room again (and more of it: the store keeps twice a write's size free)
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    again = rag("ingest", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["documents_processed"] == 1
    assert "big.md" in rag("query", "word7x3 lorem ipsum", "--top-k", "3", "--mode", "keyword").stdout
