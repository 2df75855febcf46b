"""The Model Context Protocol side of `rag serve` (streamable HTTP at /mcp) and `rag mcp` (stdio), with
the official SDK's MCPServer: the tools a docs MCP server gives an agent, over the IndexService.

Tools: ``search`` (sections with a snippet, the page path, the heading and its anchor, a resource
URI; filters, version and corpus), ``read_page`` (a whole page or one section by path, a part at a
time), ``list_pages`` (the corpora and their pages, a part at a time), ``answer`` (a cited answer).
Resources: every page, ``rag://CORPUS/PATH`` (text/markdown), listed a part at a time and read.

An agent corrects itself from what it is told: each tool's input schema (types, ranges, allowed
values, defaults, a line per argument) and each refusal's text come from serving.requests, the checks
the HTTP endpoints make, so a wrong call is an ``isError`` result in the words of the HTTP 400."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types import ListResourcesResult
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool

from rag_assets.serving import page_tools
from rag_assets.serving.errors import error_status
from rag_assets.serving.page_tools import page_uri
from rag_assets.serving.requests import (FIELDS, TOOLS, BadRequest, PageRequest, UnknownCorpus, decode_cursor,
                                         tool_request, tool_schema)
from rag_assets.serving.service import IndexService

log = logging.getLogger(__name__)

__all__ = ["build_mcp_server", "mcp_http_app", "page_uri"]

SNIPPET_CHARS = 300
INSTRUCTIONS = (
    "Search the indexed documentation with `search` (each hit: page path, heading, anchor, snippet), read a "
    "page or one section with `read_page` (a long page comes in parts: each ends with the offset of the next), "
    "list corpora and pages with `list_pages` (a part at a time: pass next_cursor on), and get an answer "
    "citing its sources as [Source N] with `answer`. Pages are also resources: rag://CORPUS/PATH. A wrong "
    "argument is answered with what it accepts.")


def _one_line(exc: BaseException) -> str:
    text = exc.args[0] if isinstance(exc, UnknownCorpus) and exc.args else exc
    return " ".join(str(text).split())


class _RagMCPServer(MCPServer):
    """MCPServer whose tools publish the input schemas of serving.requests, check every call's
    arguments there first (a refusal is a tool error naming the argument and what it accepts), and
    whose resource list is every page of every corpus as the index holds it now, a part at a time."""

    def __init__(self, service: IndexService, **kwargs: Any):
        super().__init__(**kwargs)
        self.service = service

    async def list_tools(self) -> list[MCPTool]:
        return [tool.model_copy(update={"input_schema": tool_schema(tool.name)}) for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        if name in TOOLS:  # another name: the SDK says there is no such tool
            arguments = _json_arguments(arguments or {})
            try:
                tool_request(name, arguments)  # the HTTP endpoints' checks, before the SDK's own
            except BadRequest as exc:
                raise ToolError(_one_line(exc)) from None
        return await super().call_tool(name, arguments, context)

    # The SDK's MCPServer lists resources whole; resources/list carries a cursor (MCP pagination), so
    # the handler it registers is answered here a part at a time.
    async def _handle_list_resources(self, ctx, params) -> ListResourcesResult:
        cursor = getattr(params, "cursor", None) if params is not None else None
        try:
            after = decode_cursor(cursor)
        except BadRequest as exc:
            raise MCPError(code=INVALID_PARAMS, message=_one_line(exc)) from None
        listed = [] if after is not None else await super().list_resources()
        pages, next_cursor = await anyio.to_thread.run_sync(page_tools.resources, self.service, after)
        return ListResourcesResult(resources=[*listed, *(MCPResource(**p) for p in pages)], next_cursor=next_cursor)


def _json_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Object and list arguments a client sent as JSON text (some desktop clients do) read as the SDK
    reads them, so the checks here see what the tool will."""
    out = dict(arguments)
    for name, value in arguments.items():
        spec = FIELDS.get(name, {})
        wants = {spec.get("type"), *(a.get("type") for a in spec.get("anyOf", ()))}
        if isinstance(value, str) and wants & {"object", "array"}:
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                continue
            if isinstance(parsed, (dict, list)):
                out[name] = parsed
    return out


def build_mcp_server(service: IndexService) -> MCPServer:
    server = _RagMCPServer(service, name="rag_assets", instructions=INSTRUCTIONS, log_level="WARNING")

    def call(fn, *args):
        try:
            return fn(*args)
        except (BadRequest, UnknownCorpus, ValueError) as exc:
            raise ToolError(_one_line(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the agent reads one line, the log has the rest
            status, message = error_status(exc)
            if status == 500:
                log.error("MCP tool failed: %s", message, exc_info=exc)
            raise ToolError(message) from None

    def checked(tool: str, **arguments):
        return call(tool_request, tool, arguments)

    # The parameters are typed loosely (Any; str where pydantic must not parse JSON text): the checks
    # and the published schemas are serving.requests', so a wrong value is refused in its words.
    @server.tool(description="Search the documentation: the sections that best answer a query, each with its page "
                             "path, heading, anchor, a snippet and a resource URI (read it whole with read_page). "
                             "Narrow it with filters (module, tags, doc_type, path_prefix, language, version, or "
                             "any frontmatter key) or version; corpus: one name or a list (one ranking over "
                             "several); mode: hybrid (default), vector, keyword or rrf.")
    def search(query: str = None, top_k: Any = None, corpus: Any = None, filters: Any = None,  # type: ignore[assignment]
               mode: Any = None, version: Any = None) -> dict[str, Any]:
        request = checked("search", query=query, top_k=top_k, corpus=corpus, filters=filters, mode=mode,
                          version=version)
        found = call(service.search, request)
        return {"query": request.query, "corpora": found["corpora"], "results": [{
            "corpus": r["corpus"], "path": r["doc_path"], "heading": r["section"], "breadcrumb": r["heading_breadcrumb"],
            "anchor": r["anchor"], "uri": page_uri(r["corpus"], r["doc_path"]) + (f"#{r['anchor']}" if r["anchor"] else ""),
            "snippet": _snippet(r["text"]), "score": r["score"], "relevance": r.get("relevance"),
            "metadata": r.get("metadata", {}), "chunk_id": r["chunk_id"]} for r in found["results"]]}

    @server.tool(description="Read a documentation page by its path (as search and list_pages give it), whole or one "
                             "section (its heading, heading path or anchor), as markdown. A long page comes in "
                             f"parts of at most {page_tools.READ_CHARS:,} characters: each part ends saying the "
                             "offset that reads on.")
    def read_page(path: str = None, section: str = None, corpus: str = None,  # type: ignore[assignment]
                  offset: Any = None) -> str:
        request: PageRequest = checked("read_page", path=path, section=section, corpus=corpus, offset=offset)
        return call(page_tools.read, service, request)

    @server.tool(description="List the corpora served and their pages (path, title, first section headings, uri), "
                             "a part at a time: `total` counts the whole list, `next_cursor` (when not null) gives "
                             "the next part; prefix narrows the pages to a folder.")
    def list_pages(corpus: str = None, prefix: str = None, cursor: str = None,  # type: ignore[assignment]
                   limit: Any = None) -> dict[str, Any]:
        request = checked("list_pages", corpus=corpus, prefix=prefix, cursor=cursor, limit=limit)
        return call(page_tools.listing, service, request)

    @server.tool(description="Answer a question from the documentation with [Source N] citations; each source has "
                             "its page path, heading and anchor. Needs a chat model (OPENAI_API_KEY).")
    def answer(question: str = None, max_sources: Any = None, corpus: str = None,  # type: ignore[assignment]
               filters: Any = None, chapter_context: str = None) -> dict[str, Any]:  # type: ignore[assignment]
        request = checked("answer", question=question, max_sources=max_sources, corpus=corpus, filters=filters,
                          chapter_context=chapter_context)
        data = call(service.answer, request)
        if data.get("error"):
            raise ToolError(f"the chat model failed: {data['error']}")
        return {"answer": data["answer"], "cited_sources": data["cited_sources"], "sources": [{
            "number": s["number"], "corpus": s["corpus"], "path": s["doc_path"], "heading": s["section"],
            "anchor": s["anchor"], "uri": page_uri(s["corpus"], s["doc_path"]) + (f"#{s['anchor']}" if s["anchor"] else ""),
            "excerpt": s["excerpt"]} for s in data["sources"]]}

    @server.resource("rag://{corpus}/{+path}", name="page", mime_type="text/markdown",
                     description="a documentation page as indexed: rag://CORPUS/PATH")
    def page(corpus: str, path: str) -> str:
        try:
            found = service.catalog(corpus).page(path)
        except UnknownCorpus as exc:
            raise ResourceNotFoundError(_one_line(exc)) from None
        if found is None:
            raise ResourceNotFoundError(f"no page {path!r} in corpus {corpus} (list_pages lists them)")
        return found.text()

    return server


def mcp_http_app(server: MCPServer, *, loopback: bool = True):
    """The streamable HTTP app of `server` at /mcp (stateless: any worker answers any request; plain
    JSON responses). On a loopback bind the SDK's DNS-rebinding guard stays on (Host and Origin must
    be local); elsewhere the bearer token guards it."""
    security = None if loopback else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                      transport_security=security)


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"
