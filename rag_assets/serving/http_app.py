"""The HTTP/JSON side of `rag serve` (Starlette): GET /health, GET /corpora, POST /search, POST /answer,
the OpenAPI document (/openapi.json, a page at /docs), and MCP over streamable HTTP at /mcp.

Every error is a JSON object ``{"error": "<one line>"}`` with an honest status: 400 a malformed
request (unknown field, bad top_k, bad filter, empty or too long query, JSON nested too deep, a lone
surrogate), 401 a missing or wrong bearer token, 403 a foreign Origin and 421 a foreign Host on a
loopback bind (DNS rebinding), 404 an unknown corpus or path, 405 a method a path does not take, 408
a body not sent in time, 413 a body over the limit, 415 a body that is not JSON, 503 busy / store
unavailable / answers not configured, 504 the retrieval timeout (RAG_RETRIEVE_TIMEOUT_SECONDS), 502
the chat model failed (the body is the answer with its sources and ``error``). One log line a
request: method, path, status, milliseconds, never the query text (unless log_queries).

The gate (_Gate) checks every request, /mcp included, before any route sees it: the Host and Origin
of a loopback server, the token, the body's type, size and time, and the requests in flight."""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import time
from typing import Any, Callable
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from rag_assets.serving.errors import Busy, TooLarge, error_status
from rag_assets.serving.openapi import docs_page, openapi_document
from rag_assets.serving.requests import BadRequest, answer_request, search_request
from rag_assets.serving.service import IndexService

log = logging.getLogger("rag_assets.serving")

MAX_BODY_BYTES = 64 * 1024  # a query is at most RAG_MAX_QUERY_CHARS; a selected text a few pages
MAX_IN_FLIGHT = 64  # search/answer/MCP requests at once; past it a 503 says so at once (no queue to time out in)
BODY_SECONDS = 10.0  # to send a whole body once the headers are in (a slow sender holds nothing longer)
OPEN_PATHS = ("/health",)  # answered without the token (a load balancer's liveness probe)
JSON_BODY_PATHS = ("/search", "/answer", "/mcp")  # POSTed JSON: anything else is a 415 (a browser's form or text)


class InFlight:
    """Requests being answered now, against the limit: one count for the HTTP endpoints and MCP."""

    def __init__(self, most: int):
        self.most = most
        self.now = 0

    @contextlib.contextmanager
    def slot(self):
        if self.now >= self.most:
            raise Busy(f"server busy: {self.now} requests in flight (at most {self.most}); retry shortly")
        self.now += 1
        try:
            yield
        finally:
            self.now -= 1


def create_app(service: IndexService, *, token: str | None = None, mcp_server=None, log_queries: bool = False,
               max_in_flight: int = MAX_IN_FLIGHT, max_body_bytes: int = MAX_BODY_BYTES, loopback: bool = True,
               body_seconds: float = BODY_SECONDS,
               on_start: Callable[[], None] | None = None, on_stop: Callable[[], None] | None = None) -> Starlette:
    """The ASGI app. token: the bearer token every request but /health must carry (None: none).
    mcp_server: an MCPServer to serve at /mcp (rag_assets.serving.mcp_tools.build_mcp_server);
    loopback: the server listens on a loopback address only (Host and Origin must be local, on every
    route: DNS rebinding). on_start / on_stop: called when the app starts serving and when it stops
    (the server file)."""
    in_flight = InFlight(max_in_flight)

    async def work(fn: Callable[[], Any]) -> Any:
        with in_flight.slot():
            return await anyio.to_thread.run_sync(fn)

    async def body_of(request: Request) -> Any:
        raw = await request.body()  # the gate read it whole, within its limits
        try:
            return json.loads(raw or b"null")
        except ValueError as exc:
            raise BadRequest(f"the request body is not JSON: {exc}") from None
        except RecursionError:
            raise BadRequest("the request body nests JSON too deep (objects and lists within each other)") from None

    async def health(request: Request) -> Response:
        return JSONResponse(service.health())

    async def corpora(request: Request) -> Response:
        return JSONResponse({"corpora": await work(service.corpora), "default": service.default_corpus})

    async def search(request: Request) -> Response:
        parsed = search_request(await body_of(request))
        request.state.query = parsed.query
        return JSONResponse(await work(lambda: service.search(parsed)))

    async def answer(request: Request) -> Response:
        parsed = answer_request(await body_of(request))
        request.state.query = parsed.question
        data = await work(lambda: service.answer(parsed))
        return JSONResponse(data, status_code=502 if data.get("error") else 200)

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_page())

    def guarded(endpoint):
        async def run(request: Request) -> Response:
            try:
                return await endpoint(request)
            except Exception as exc:  # noqa: BLE001 - every failure is one JSON line with its status
                status, message = error_status(exc)
                if status >= 500 and status not in (503, 504):
                    log.error("%s %s failed: %s", request.method, request.url.path, message, exc_info=exc)
                return JSONResponse({"error": message}, status_code=status)
        return run

    routes = [
        Route("/health", guarded(health), methods=["GET"]),
        Route("/corpora", guarded(corpora), methods=["GET"]),
        Route("/search", guarded(search), methods=["POST"]),
        Route("/answer", guarded(answer), methods=["POST"]),
        Route("/openapi.json", guarded(openapi), methods=["GET"]),
        Route("/docs", guarded(docs), methods=["GET"]),
    ]
    mcp_lifespan = None
    if mcp_server is not None:
        from rag_assets.serving.mcp_tools import mcp_http_app

        mcp_app = mcp_http_app(mcp_server, loopback=loopback)
        routes.extend(mcp_app.routes)
        mcp_lifespan = mcp_server.session_manager.run

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with contextlib.AsyncExitStack() as stack:
            if mcp_lifespan is not None:
                await stack.enter_async_context(mcp_lifespan())
            if on_start is not None:
                on_start()
            try:
                yield
            finally:
                if on_stop is not None:
                    on_stop()

    paths = [r.path for r in routes]

    async def not_routed(request: Request, exc: HTTPException) -> Response:
        """404 and 405 as every other error: one JSON line (Starlette's are plain text)."""
        if exc.status_code == 405:
            message = f"{request.method} is not a method of {request.url.path} (it takes {exc.headers.get('Allow', '')})" \
                if exc.headers else f"{request.method} is not a method of {request.url.path}"
        elif exc.status_code == 404:
            message = f"no such path: {request.url.path} (paths: {', '.join(paths)})"
        else:
            message = exc.detail
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: not_routed})
    app.add_middleware(_Gate, token=token, log_queries=log_queries, loopback=loopback, in_flight=in_flight,
                       max_body_bytes=max_body_bytes, body_seconds=body_seconds)
    return app


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def _loopback_host(host: str) -> bool:
    """Whether a Host header's or Origin's host (port or not) names this machine's loopback."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and _loopback_host(parts.netloc)


class _Gate:
    """Pure ASGI middleware, every request (the routes and /mcp) in this order: on a loopback bind the
    Host (421) and Origin (403) must be local, so a web page that rebinds its name to 127.0.0.1 reads
    nothing; the bearer token (401); then a POST's body: JSON only (415), at most max_body_bytes
    (413), sent within body_seconds (408), read whole here and handed on; an /mcp request takes a
    place among the requests in flight (503 past the limit). One log line per request (no query
    text unless log_queries)."""

    def __init__(self, app, token: str | None, log_queries: bool, loopback: bool = True,
                 in_flight: InFlight | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                 body_seconds: float = BODY_SECONDS):
        self.app = app
        self.token = token.encode() if token else None
        self.log_queries = log_queries
        self.loopback = loopback
        self.in_flight = in_flight or InFlight(MAX_IN_FLIGHT)
        self.max_body_bytes = max_body_bytes
        self.body_seconds = body_seconds

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        path = scope.get("path", "")
        status = {"code": 0}

        async def send_logged(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            refusal = self._refusal(scope, path)
            if refusal is None and scope.get("method") == "POST":
                refusal, receive = await self._body(scope, receive)
            if refusal is not None:
                await refusal(scope, receive, send_logged)
                return
            if path == "/mcp" or path.startswith("/mcp/"):
                try:
                    with self.in_flight.slot():
                        await self.app(scope, receive, send_logged)
                except Busy as exc:
                    await _error(503, str(exc))(scope, receive, send_logged)
                return
            await self.app(scope, receive, send_logged)
        finally:
            elapsed = (time.perf_counter() - start) * 1000
            client = scope.get("client") or ("-", 0)
            query = ""
            if self.log_queries:
                state = scope.get("state") or {}
                query = f" query={state.get('query')!r}" if state.get("query") is not None else ""
            log.info("%s %s %s %d %.1fms%s", client[0], scope.get("method", "-"), path, status["code"], elapsed, query)

    def _refusal(self, scope, path: str) -> Response | None:
        headers = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(name, value.decode("latin-1"))
        if self.loopback:
            host = headers.get(b"host", "")
            if not _loopback_host(host):
                return _error(421, f"Host {host[:100]!r} is not this server: a server on a loopback address answers "
                                   "127.0.0.1, localhost or [::1] only (a foreign Host is how DNS rebinding reaches it)")
            origin = headers.get(b"origin")
            if origin is not None and not _loopback_origin(origin):
                return _error(403, f"Origin {origin[:100]!r} may not call this server: on a loopback address only "
                                   "pages of 127.0.0.1, localhost or [::1] may (a web page elsewhere may not read it)")
        if self.token is not None and path not in OPEN_PATHS and not self._authorized(scope):
            return _error(401, "missing or wrong bearer token (Authorization: Bearer $RAG_SERVE_TOKEN)",
                          **{"WWW-Authenticate": "Bearer"})
        if path == "/mcp" and scope.get("method") == "GET":
            # the SDK would open an event stream for server-initiated messages, which a stateless server
            # never sends: an idle stream held a connection for good
            return _error(405, "GET /mcp: this server is stateless and sends no messages unasked; POST JSON-RPC "
                               "messages to /mcp", Allow="POST")
        if scope.get("method") == "POST" and path in JSON_BODY_PATHS:
            kind = headers.get(b"content-type", "")
            if kind.split(";", 1)[0].strip().lower() != "application/json":
                return _error(415, f"the request body must be JSON, sent as Content-Type: application/json (got "
                                   f"{kind[:60]!r})")
        return None

    async def _body(self, scope, receive):
        """(a refusal or None, a receive that hands on the body read here): at most max_body_bytes,
        within body_seconds."""
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                return _error(413, str(TooLarge(f"request body of {int(value)} bytes is over the limit of "
                                                f"{self.max_body_bytes}"))), receive
        chunks, size = [], 0
        try:
            with anyio.fail_after(self.body_seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return Response(status_code=400), receive  # the client left: nothing to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body_bytes:
                        return _error(413, f"request body is over the limit of {self.max_body_bytes} bytes"), receive
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            return _error(408, f"the request body was not sent within {self.body_seconds:g} s", Connection="close"), receive
        body = b"".join(chunks)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the disconnect, when it comes

        return None, replay

    def _authorized(self, scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False
