"""The disk under the embedded vector store fills up: the ingest ends in bounded time with one clear
line, readers keep answering from what is committed, and once there is room the next run converges.
The disk under the state folder fills up: one line naming the state database and what to do.

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


def small_tmpfs(folder):
    """A 16 MB tmpfs mounted on folder for the test (skipped where mounting is not permitted)."""
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@pytest.fixture
def small_disk(rag_env):
    yield from small_tmpfs(rag_env / "chroma")


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


@pytest.fixture
def small_state_disk(rag_env):
    yield from small_tmpfs(rag_env / "state")


def test_a_full_state_disk_is_one_line_naming_the_state_database(small_state_disk, dagster_home, rag_env):
    """It was "rag: unexpected error: OperationalError: (sqlite3.OperationalError) database or disk is
    full", naming no file."""
    first = rag("ingest")
    assert first.returncode == 0, first.stdout + first.stderr
    stat = os.statvfs(small_state_disk)
    (small_state_disk / "filler").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize))
    with open(rag_env / "docs" / "rate-limits.md", "a", encoding="utf-8") as page:
        page.write("\nOne more sentence about rate limits.\n")
    full = rag("ingest")
    assert full.returncode == 1, full.stdout + full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "unexpected" not in lines[0] and "Traceback" not in full.stderr, full.stderr
    assert str(small_state_disk) in lines[0] and "full" in lines[0], lines[0]
