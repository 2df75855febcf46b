"""The HTTP/JSON side of `rag serve` (Starlette): GET /health, GET /corpora, POST /search, POST /answer,
the OpenAPI document (/openapi.json, a page at /docs), and MCP over streamable HTTP at /mcp.

Every error is a JSON object ``{"error": "<one line>"}`` with an honest status: 400 a malformed
request (unknown field, bad top_k, bad filter, empty or too long query), 401 a missing or wrong bearer
token, 404 an unknown corpus or path, 413 a body over the limit, 503 busy / store unavailable /
answers not configured, 504 the retrieval timeout (RAG_RETRIEVE_TIMEOUT_SECONDS), 502 the chat model
failed (the body is the answer with its sources and ``error``). One log line a request: method,
path, status, milliseconds, never the query text (unless log_queries)."""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import time
from typing import Any, Callable

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from rag_assets.serving.errors import Busy, TooLarge, error_status
from rag_assets.serving.openapi import docs_page, openapi_document
from rag_assets.serving.requests import BadRequest, answer_request, search_request
from rag_assets.serving.service import IndexService

log = logging.getLogger("rag_assets.serving")

MAX_BODY_BYTES = 64 * 1024  # a query is at most RAG_MAX_QUERY_CHARS; a selected text a few pages
MAX_IN_FLIGHT = 64  # search/answer requests at once; past it a 503 says so at once (no queue to time out in)
OPEN_PATHS = ("/health",)  # answered without the token (a load balancer's liveness probe)


def create_app(service: IndexService, *, token: str | None = None, mcp_server=None, log_queries: bool = False,
               max_in_flight: int = MAX_IN_FLIGHT, max_body_bytes: int = MAX_BODY_BYTES, loopback: bool = True,
               on_start: Callable[[], None] | None = None, on_stop: Callable[[], None] | None = None) -> Starlette:
    """The ASGI app. token: the bearer token every request but /health must carry (None: none).
    mcp_server: an MCPServer to serve at /mcp (rag_assets.serving.mcp_tools.build_mcp_server);
    loopback: the server listens on a loopback address only (MCP's DNS-rebinding guard on).
    on_start / on_stop: called when the app starts serving and when it stops (the server file)."""
    in_flight = {"n": 0}

    async def work(fn: Callable[[], Any]) -> Any:
        if in_flight["n"] >= max_in_flight:
            raise Busy(f"server busy: {in_flight['n']} requests in flight (at most {max_in_flight}); retry shortly")
        in_flight["n"] += 1
        try:
            return await anyio.to_thread.run_sync(fn)
        finally:
            in_flight["n"] -= 1

    async def body_of(request: Request) -> Any:
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > max_body_bytes:
            raise TooLarge(f"request body of {size} bytes is over the limit of {max_body_bytes}")
        raw = b""
        async for part in request.stream():
            raw += part
            if len(raw) > max_body_bytes:
                raise TooLarge(f"request body is over the limit of {max_body_bytes} bytes")
        try:
            return json.loads(raw or b"null")
        except ValueError as exc:
            raise BadRequest(f"the request body is not JSON: {exc}") from None

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

    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(_Gate, token=token, log_queries=log_queries)
    return app


class _Gate:
    """Pure ASGI middleware: the bearer token, then one log line per request (no query text)."""

    def __init__(self, app, token: str | None, log_queries: bool):
        self.app = app
        self.token = token.encode() if token else None
        self.log_queries = log_queries

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
            if self.token is not None and path not in OPEN_PATHS and not self._authorized(scope):
                response = JSONResponse({"error": "missing or wrong bearer token (Authorization: Bearer $RAG_SERVE_TOKEN)"},
                                        status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send_logged)
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

    def _authorized(self, scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False
