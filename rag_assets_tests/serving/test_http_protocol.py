"""The HTTP connection `rag serve` speaks, on a real socket with uvicorn in a thread and the server's
own configuration (runner.server_config): a request's headers are bounded in size (431, one JSON line)
and in time (408, the connection closed), so a 96 MB header or slow-loris sockets hold nothing; a
server that answers such requests still answers the next. The headers' time bound is shortened here
(0.5 s) so the test does not wait the real 10 s."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from rag_assets.serving.http_protocol import MAX_HEADER_BYTES
from rag_assets.serving.runner import bind, server_config

HEAD_SECONDS = 0.5


async def health(request):
    return JSONResponse({"status": "ok"})


@pytest.fixture
def port():
    sock = bind("127.0.0.1", 0)
    config = server_config(Starlette(routes=[Route("/health", health)]), header_seconds=HEAD_SECONDS)
    config.lifespan = "off"
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()


def exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send data, then read until the server closes the connection (or the timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        received = b""
        while chunk := s.recv(65536):
            received += chunk
        return received


def status_and_body(response: bytes) -> tuple[int, dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def health_answers(port: int) -> bool:
    response = exchange(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    return status_and_body(response) == (200, {"status": "ok"})


def test_headers_over_the_limit_are_a_431_and_hold_nothing(port):
    """One 96 MB header took 13.6 s to parse and held /health up to 6 s: now the head is refused at
    MAX_HEADER_BYTES, before the rest is read."""
    big = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (4 * MAX_HEADER_BYTES) + b"\r\n\r\n"
    status, body = status_and_body(exchange(port, big))
    assert status == 431 and "headers" in body["error"]
    assert health_answers(port)


def test_headers_that_never_finish_are_a_408_and_the_connection_closes(port):
    """A slow-loris socket (a request line, then nothing) stayed open for good."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
        received = b""
        while chunk := s.recv(65536):  # the server closes: recv ends (the timeout would raise)
            received += chunk
    status, body = status_and_body(received)
    assert status == 408 and "did not arrive" in body["error"]


def test_silent_and_slow_sockets_are_closed_and_the_server_answers_beside_them(port):
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(100)]
    try:
        for i, s in enumerate(sockets):
            if i % 2:
                s.sendall(b"GET /health HTTP/1.1\r\nHo")  # half a header; the others send nothing
        assert health_answers(port)
        for s in sockets:
            while s.recv(65536):  # every one of them is closed by the server
                pass
    finally:
        for s in sockets:
            s.close()
    assert health_answers(port)


def test_a_malformed_request_is_one_json_line(port):
    status, body = status_and_body(exchange(port, b"NOT HTTP AT ALL\r\n\r\n"))
    assert status == 400 and body["error"].startswith("invalid HTTP request")
