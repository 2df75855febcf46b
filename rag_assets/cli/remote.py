"""`rag query` through a running `rag serve`: find the server of the corpus (RAG_SERVER_URL, else the
server file `rag serve` writes in the corpus's state folder) and ask it over a plain socket (http://;
urllib for https://), importing nothing heavy (no numpy, chromadb, dagster or onnxruntime on this
path, nor http.client's email and ssl modules: a third of this path's import time on a loaded machine). None whenever no server
answers for this corpus: the caller then runs the query itself, with the same output."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rag_assets.serving import server_file

TIMEOUT_SECONDS = 30.0


class ServerRefused(Exception):
    """The server answered 400: the request itself is wrong (the message is the server's one line)."""


def find_server(names: list[str]) -> tuple[str, str | None] | None:
    """(base URL, token) of a server for these corpora (none named: the default corpus), or None."""
    from rag_assets.config import Settings, switch

    if switch("no_server"):
        return None
    token = switch("serve_token") or None
    explicit = switch("server_url")
    if explicit:
        return explicit.rstrip("/"), token
    try:
        base = Settings.from_env()
    except Exception:  # noqa: BLE001 - a bad setting: the local path reports it
        return None
    wanted = names or ["default"]
    by_url: dict[str, int] = {}  # the servers answering for each corpus, by URL
    for name in wanted:
        state_dir = base.state_dir if name == "default" else Path(base.corpora_dir) / name / "state"
        for info in server_file.live(state_dir):  # the last started first
            if info.get("token") and not token:
                continue
            if name == "default" and (info.get("docs_dir") != str(base.docs_dir.resolve())
                                      or info.get("collection") != base.collection):
                continue  # a server of this state folder for another docs folder or collection
            by_url[info["url"]] = by_url.get(info["url"], 0) + 1
    for url, corpora in by_url.items():
        if corpora == len(wanted):  # one server answers for every corpus asked
            return url, token
    return None


def search(url: str, token: str | None, body: dict[str, Any]) -> dict[str, Any] | None:
    """The server's /search answer; None when it cannot answer (unreachable, 401, 404, 5xx);
    ServerRefused for a 400 (the same request would fail locally too)."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    try:
        status, payload = _post(f"{url}/search", json.dumps(body).encode(), headers)
        data = json.loads(payload)
    except (OSError, ValueError):  # refused, reset, timeout, not HTTP, a body that is not JSON
        return None
    if status == 400:
        message = data.get("error", "") if isinstance(data, dict) else ""
        raise ServerRefused(message or "the server refused the query")
    return data if status == 200 and isinstance(data, dict) else None


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST body to url: (status, response body). http:// over a socket (one request, then close)."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        import urllib.error
        import urllib.request

        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    lines = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {len(body)}",
             "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((host, port), timeout=TIMEOUT_SECONDS) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        received = bytearray()
        while chunk := sock.recv(65536):
            received += chunk
    head, _, payload = bytes(received).partition(b"\r\n\r\n")
    status_line, *fields = head.split(b"\r\n")
    version, status = status_line.split(b" ", 2)[:2]
    if not version.startswith(b"HTTP/1."):
        raise ValueError("not an HTTP response")
    if any(f.lower().replace(b" ", b"") == b"transfer-encoding:chunked" for f in fields):
        payload = _unchunked(payload)
    return int(status), payload


def _unchunked(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return bytes(out)
