"""The server file: written whole, read only while its process lives, removed only by its own server."""

from __future__ import annotations

import os

from rag_assets.serving import server_file


def test_written_read_while_alive_and_removed_by_its_own_pid(tmp_path):
    info = {"url": "http://127.0.0.1:1", "pid": os.getpid(), "token": False}
    path = server_file.write(tmp_path / "state", info)
    assert path.name == "serve.json" and server_file.read_live(tmp_path / "state") == info
    server_file.remove(tmp_path / "state", pid=os.getpid() + 1)  # another server's: left alone
    assert server_file.read(tmp_path / "state") == info
    server_file.remove(tmp_path / "state", pid=os.getpid())
    assert server_file.read(tmp_path / "state") is None
    server_file.remove(tmp_path / "state", pid=os.getpid())  # already gone: fine


def test_a_dead_server_or_a_broken_file_is_no_server(tmp_path):
    server_file.write(tmp_path, {"url": "http://127.0.0.1:1", "pid": 2**22 + 12345})
    assert server_file.read(tmp_path) is not None and server_file.read_live(tmp_path) is None
    (tmp_path / "serve.json").write_text("{not json")
    assert server_file.read_live(tmp_path) is None
    server_file.write(tmp_path, {"pid": os.getpid()})  # no url
    assert server_file.read_live(tmp_path) is None
