"""Running `rag serve` (uvicorn on a socket bound first) and `rag mcp` (stdio): the bind rules (a
loopback address, or RAG_SERVE_TOKEN), the server file of each corpus served, graceful shutdown on
SIGTERM/SIGINT (uvicorn finishes the requests in flight, then the server file goes)."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import sys

from rag_assets.errors import ConfigurationError
from rag_assets.serving import server_file
from rag_assets.serving.service import IndexService

log = logging.getLogger("rag_assets.serving")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
GRACEFUL_SHUTDOWN_SECONDS = 15


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """A non-loopback bind needs a bearer token: refuse to start without one."""
    if not is_loopback(host) and not token:
        raise ConfigurationError(f"refusing to listen on {host} without a bearer token: set RAG_SERVE_TOKEN (every "
                                 "client then sends `Authorization: Bearer <token>`), or bind 127.0.0.1")


def bind(host: str, port: int) -> socket.socket:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigurationError(f"a port is a number from 0 to 65535 (0 picks a free one), got {port!r}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def configure_logging(log_queries: bool = False) -> None:
    """Logs on stderr: the request log (INFO) and the warnings of the rest of the package; the rest's
    INFO lines stay off, since some name the question (answering's "question received"), unless the
    queries are to be logged."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger = logging.getLogger("rag_assets")
    if not any(getattr(h, "_rag_serve", False) for h in logger.handlers):
        handler._rag_serve = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if log_queries else logging.WARNING)
    logger.propagate = False
    log.setLevel(logging.INFO)


def serve(service: IndexService, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, token: str | None = None,
          log_queries: bool = False, warm: bool = True) -> int:
    """Serve HTTP and MCP (/mcp) until SIGTERM or SIGINT: the requests in flight are answered, the
    server files removed, and the process ends by that signal (exit 143 / 130)."""
    import uvicorn

    from rag_assets.serving.http_app import create_app
    from rag_assets.serving.mcp_tools import build_mcp_server

    check_bind(host, token)
    sock = bind(host, port)  # before the models load: a port in use fails at once
    port = sock.getsockname()[1]
    if warm:
        service.warm()
    local = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host.strip("[]") == "::" else host
    url = f"http://{local if ':' not in local or local.startswith('[') else f'[{local}]'}:{port}"
    pid = os.getpid()
    info = {"url": url, "host": host, "port": port, "pid": pid, "token": bool(token), "corpora": service.names,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")}

    def on_start() -> None:
        for name in service.names:
            settings = service.settings(name)
            server_file.write(settings.state_dir, {**info, "corpus": name, "docs_dir": str(settings.docs_dir.resolve()),
                                                   "collection": settings.collection})
        print(f"rag serve: listening on {url} (corpora: {', '.join(service.names)}; MCP at {url}/mcp; "
              f"API at {url}/docs{'; bearer token required' if token else ''})", file=sys.stderr, flush=True)

    stopped = []

    def on_stop() -> None:
        if stopped:
            return
        stopped.append(True)
        for name in service.names:
            server_file.remove(service.settings(name).state_dir, pid)
        print("rag serve: stopped (requests in flight were answered)", file=sys.stderr, flush=True)

    app = create_app(service, token=token, mcp_server=build_mcp_server(service), log_queries=log_queries,
                     loopback=is_loopback(host), on_start=on_start, on_stop=on_stop)
    server = uvicorn.Server(server_config(app))
    try:
        server.run(sockets=[sock])  # after SIGTERM/SIGINT uvicorn re-raises the signal: exit 143/130
    finally:
        on_stop()
        sock.close()
    return 0


def server_config(app, *, header_seconds: float | None = None):
    """uvicorn's configuration for `rag serve`: h11 with each request's headers bounded in size and
    time (rag_assets.serving.http_protocol; not httptools, which uvicorn picks when it is installed
    and which bounds neither), graceful shutdown, no logs of uvicorn's own (the gate logs requests)."""
    import uvicorn

    from rag_assets.serving.http_protocol import HEADER_SECONDS, MAX_HEADER_BYTES, bounded_protocol

    return uvicorn.Config(app, log_config=None, access_log=False, log_level="warning", lifespan="on",
                          timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
                          http=bounded_protocol(HEADER_SECONDS if header_seconds is None else header_seconds),
                          h11_max_incomplete_event_size=MAX_HEADER_BYTES)


def serve_stdio(service: IndexService, *, warm: bool = True) -> int:
    """MCP over stdin/stdout until the client closes stdin (logs on stderr)."""
    import anyio

    from rag_assets.serving.mcp_tools import build_mcp_server

    if warm:
        service.warm()
    anyio.run(build_mcp_server(service).run_stdio_async)
    return 0
