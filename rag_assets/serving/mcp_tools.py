"""The Model Context Protocol side of `rag serve` (streamable HTTP at /mcp) and `rag mcp` (stdio), with
the official SDK's MCPServer: the tools a docs MCP server gives an agent, over the IndexService.

Tools: ``search`` (sections with a snippet, the page path, the heading and its anchor, a resource
URI; filters and corpus), ``read_page`` (a whole page or one section by path), ``list_pages`` (the
corpora and their pages), ``answer`` (a cited answer). Resources: every page, ``rag://CORPUS/PATH``
(text/markdown), listed and read."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import Resource as MCPResource

from rag_assets.serving.errors import error_status
from rag_assets.serving.requests import BadRequest, UnknownCorpus, answer_request, search_request
from rag_assets.serving.service import IndexService

log = logging.getLogger(__name__)

SNIPPET_CHARS = 300
PAGE_LIST_LIMIT = 1000  # pages in one list_pages answer (narrow it with prefix)
INSTRUCTIONS = (
    "Search the indexed documentation with `search` (each hit: page path, heading, anchor, snippet), read a "
    "whole page or one section with `read_page`, list corpora and pages with `list_pages`, and get an answer "
    "citing its sources as [Source N] with `answer`. Pages are also resources: rag://CORPUS/PATH.")


def page_uri(corpus: str, path: str) -> str:
    return f"rag://{corpus}/{quote(path, safe='/')}"


class _RagMCPServer(MCPServer):
    """MCPServer whose resource list is every page of every corpus, as the index holds it now."""

    def __init__(self, service: IndexService, **kwargs: Any):
        super().__init__(**kwargs)
        self.service = service

    async def list_resources(self) -> list[MCPResource]:
        listed = await super().list_resources()
        return [*listed, *await anyio.to_thread.run_sync(self._page_resources)]

    def _page_resources(self) -> list[MCPResource]:
        out = []
        for name in self.service.names:
            for page in self.service.catalog(name).pages().values():
                out.append(MCPResource(uri=page_uri(name, page.path), name=f"{name}:{page.path}",
                                       title=page.title or None, mime_type="text/markdown",
                                       description=f"{page.title or page.path} ({name})"))
        return out


def build_mcp_server(service: IndexService) -> MCPServer:
    server = _RagMCPServer(service, name="rag_assets", instructions=INSTRUCTIONS, log_level="WARNING")

    def call(fn, *args):
        try:
            return fn(*args)
        except (BadRequest, UnknownCorpus, ValueError) as exc:
            raise ToolError(" ".join(str(exc.args[0] if isinstance(exc, UnknownCorpus) else exc).split())) from None
        except Exception as exc:  # noqa: BLE001 - the agent reads one line, the log has the rest

            status, message = error_status(exc)
            if status == 500:
                log.error("MCP tool failed: %s", message, exc_info=exc)
            raise ToolError(message) from None

    @server.tool(description="Search the documentation: the sections that best answer a query, each with its page "
                             "path, heading, anchor, a snippet and a resource URI (read it whole with read_page). "
                             "corpus: one name or a list (one ranking over several); filters as in docs/api.md, "
                             "e.g. {\"module\": \"guide\"}; mode: hybrid (default), vector or keyword.")
    def search(query: str, top_k: int = 5, corpus: str | list[str] | None = None,
               filters: dict[str, Any] | None = None, mode: str | None = None) -> dict[str, Any]:
        body = {"query": query, "top_k": top_k, "corpus": corpus, "filters": filters, "mode": mode}
        found = call(service.search, search_request({k: v for k, v in body.items() if v is not None}))
        return {"query": query, "corpora": found["corpora"], "results": [{
            "corpus": r["corpus"], "path": r["doc_path"], "heading": r["section"], "breadcrumb": r["heading_breadcrumb"],
            "anchor": r["anchor"], "uri": page_uri(r["corpus"], r["doc_path"]) + (f"#{r['anchor']}" if r["anchor"] else ""),
            "snippet": _snippet(r["text"]), "score": r["score"], "relevance": r.get("relevance"),
            "chunk_id": r["chunk_id"]} for r in found["results"]]}

    @server.tool(description="Read a documentation page by its path (as search returns it), whole or one section "
                             "(its heading, heading path or anchor), as markdown.")
    def read_page(path: str, section: str | None = None, corpus: str | None = None) -> str:
        return call(_read, service, corpus, path, section)

    @server.tool(description="List the corpora served and their pages (path, title, sections); prefix narrows "
                             "the pages to a folder.")
    def list_pages(corpus: str | None = None, prefix: str | None = None) -> dict[str, Any]:
        return call(_list, service, corpus, prefix)

    @server.tool(description="Answer a question from the documentation with [Source N] citations; each source has "
                             "its page path, heading and anchor. Needs a chat model (OPENAI_API_KEY).")
    def answer(question: str, max_sources: int = 5, corpus: str | None = None,
               filters: dict[str, Any] | None = None, chapter_context: str | None = None) -> dict[str, Any]:
        body = {"question": question, "max_sources": max_sources, "corpus": corpus, "filters": filters,
                "chapter_context": chapter_context}
        data = call(service.answer, answer_request({k: v for k, v in body.items() if v is not None}))
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
            return _read(service, corpus, path, None)
        except (UnknownCorpus, BadRequest) as exc:
            raise ResourceNotFoundError(str(exc.args[0] if exc.args else exc)) from None

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


def _read(service: IndexService, corpus: str | None, path: str, section: str | None) -> str:
    page = service.catalog(corpus).page(path)
    if page is None:
        raise BadRequest(f"no page {path!r} in corpus {corpus or service.default_corpus} (list_pages lists them)")
    if section is None or not section.strip():
        return page.text()
    text = page.section_text(section)
    if text is None:
        names = ", ".join(s.anchor for s in page.sections if s.anchor) or "none"
        raise BadRequest(f"page {page.path} has no section {section!r} (its sections: {names})")
    return text


def _list(service: IndexService, corpus: str | None, prefix: str | None) -> dict[str, Any]:
    names = [corpus] if corpus else service.names
    pages = []
    for name in names:
        for page in service.catalog(name).pages().values():
            if prefix and not page.path.startswith(prefix.strip("/")):
                continue
            pages.append({"corpus": name, "path": page.path, "title": page.title, "uri": page_uri(name, page.path),
                          "sections": [s.heading for s in page.sections if s.heading]})
    return {"corpora": service.corpora(), "pages": pages[:PAGE_LIST_LIMIT], "total_pages": len(pages),
            "truncated": len(pages) > PAGE_LIST_LIMIT}
