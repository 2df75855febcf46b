"""The CLI's way to a running server (rag_assets.cli.remote): finding it from the server file or
RAG_SERVER_URL, and the small HTTP client, against a real `rag serve` app on a free port."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_assets.cli import remote
from rag_assets.serving import server_file


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    reply: tuple[int, bytes, bool] = (200, b"{}", False)
    seen: list = []

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802
        length = int(self.headers["Content-Length"])
        type(self).seen.append((self.path, dict(self.headers), self.rfile.read(length)))
        status, body, chunked = type(self).reply
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (body[:5], body[5:]):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Handler.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("chunked", [False, True])
def test_search_posts_json_with_the_token_and_reads_the_answer(http_server, chunked):
    _Handler.reply = (200, json.dumps({"results": [{"doc_path": "a.md"}]}).encode(), chunked)
    assert remote.search(http_server, "tok", {"query": "q"}) == {"results": [{"doc_path": "a.md"}]}
    path, headers, body = _Handler.seen[-1]
    assert path == "/search" and headers["Authorization"] == "Bearer tok" and json.loads(body) == {"query": "q"}


def test_a_400_is_the_servers_one_line_and_other_failures_mean_no_server(http_server):
    _Handler.reply = (400, b'{"error": "query is empty"}', False)
    with pytest.raises(remote.ServerRefused, match="query is empty"):
        remote.search(http_server, None, {"query": ""})
    for status in (401, 404, 500, 503):
        _Handler.reply = (status, b'{"error": "x"}', False)
        assert remote.search(http_server, None, {"query": "q"}) is None
    assert remote.search("http://127.0.0.1:9", None, {"query": "q"}) is None  # nothing listens


def test_find_server_reads_the_live_server_file(tmp_path, monkeypatch):
    for var in ("RAG_SERVER_URL", "RAG_SERVE_TOKEN", "RAG_NO_SERVER", "RAG_COLLECTION"):
        monkeypatch.delenv(var, raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    monkeypatch.setenv("RAG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RAG_DOCS_DIR", str(docs))
    monkeypatch.setenv("RAG_CORPORA_DIR", str(tmp_path / "corpora"))
    assert remote.find_server([]) is None
    info = {"url": "http://127.0.0.1:1234", "pid": os.getpid(), "token": False, "docs_dir": str(docs),
            "collection": "rag_chunks"}
    server_file.write(tmp_path / "state", info)
    assert remote.find_server([]) == ("http://127.0.0.1:1234", None)
    assert remote.find_server(["other"]) is None  # no server file in that corpus's state folder
    server_file.write(tmp_path / "corpora" / "other" / "state", {**info, "docs_dir": "/elsewhere"})
    assert remote.find_server(["default", "other"]) == ("http://127.0.0.1:1234", None)
    monkeypatch.setenv("RAG_DOCS_DIR", str(tmp_path))  # the default corpus is another folder now
    assert remote.find_server([]) is None
    monkeypatch.setenv("RAG_DOCS_DIR", str(docs))
    server_file.write(tmp_path / "state", {**info, "token": True})
    assert remote.find_server([]) is None  # a token is needed and none is set
    monkeypatch.setenv("RAG_SERVE_TOKEN", "t")
    assert remote.find_server([]) == ("http://127.0.0.1:1234", "t")
    server_file.remove(tmp_path / "state", os.getpid())
    server_file.write(tmp_path / "state", {**info, "pid": 2**22 + 12345})  # a dead server
    assert remote.find_server([]) is None
    monkeypatch.setenv("RAG_SERVER_URL", "http://example.invalid:1/")
    assert remote.find_server([]) == ("http://example.invalid:1", "t")
    monkeypatch.setenv("RAG_NO_SERVER", "1")
    assert remote.find_server([]) is None
