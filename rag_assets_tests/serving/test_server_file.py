"""The server files: one per server, written whole, read only while its process lives, removed only
by its own server, so two servers of one corpus never take each other's away."""

from __future__ import annotations

import os

from rag_assets.serving import server_file


def test_written_read_while_alive_and_removed_by_its_own_pid(tmp_path):
    info = {"url": "http://127.0.0.1:1", "pid": os.getpid(), "token": False, "started": "2026-01-01T00:00:00"}
    path = server_file.write(tmp_path / "state", info)
    assert path.name == f"serve-{os.getpid()}.json" and server_file.read_live(tmp_path / "state") == info
    server_file.remove(tmp_path / "state", pid=os.getpid() + 1)  # another server's: left alone
    assert server_file.read(tmp_path / "state") == info
    server_file.remove(tmp_path / "state", pid=os.getpid())
    assert server_file.read(tmp_path / "state") is None
    server_file.remove(tmp_path / "state", pid=os.getpid())  # already gone: fine


def test_a_dead_server_or_a_broken_file_is_no_server(tmp_path):
    server_file.write(tmp_path, {"url": "http://127.0.0.1:1", "pid": 2**22 + 12345})
    assert server_file.read(tmp_path) is not None and server_file.read_live(tmp_path) is None
    (tmp_path / f"serve-{os.getpid()}.json").write_text("{not json")
    assert server_file.read_live(tmp_path) is None
    server_file.write(tmp_path, {"pid": os.getpid(), "url": 5})  # no url
    assert server_file.read_live(tmp_path) is None
    server_file.write(tmp_path, {"url": "http://127.0.0.1:2", "pid": os.getpid()})
    assert not (tmp_path / "serve-4206649.json").exists()  # the dead server's file went with a new one's


def test_stopping_a_second_server_leaves_the_first_ones_file(tmp_path):
    """Two servers on one corpus: the second one's stop removed the first one's serve.json, and `rag
    query` silently stopped using the live server."""
    first = {"url": "http://127.0.0.1:1111", "pid": os.getppid(), "started": "2026-01-01T00:00:00.000+00:00"}
    second = {"url": "http://127.0.0.1:2222", "pid": os.getpid(), "started": "2026-01-01T00:01:00.000+00:00"}
    server_file.write(tmp_path, first)  # two live processes: this test's and its parent
    server_file.write(tmp_path, second)
    assert server_file.read_live(tmp_path) == second  # the last started answers
    server_file.remove(tmp_path, pid=os.getpid())  # the second one stops
    assert server_file.read_live(tmp_path) == first
