"""The MCP tools and resources through the SDK's own client, in-process (Client(MCPServer)): search
with anchors and URIs, a page or one section read back, the pages and corpora listed, a cited answer
from the OpenAI-compatible stub, and the pages as resources."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from rag_assets.serving.mcp_tools import build_mcp_server, page_uri
from rag_assets.serving.service import IndexService
from rag_assets_tests.support.serving import SECOND, sample_corpora, with_chat

STREAMING = "How can I receive the response incrementally as events?"


@pytest.fixture(scope="module")
def server(tmp_path_factory, chat):
    return build_mcp_server(IndexService(with_chat(sample_corpora(tmp_path_factory.mktemp("mcp"))[1], chat)))


def run(server, fn):
    async def go():
        async with Client(server) as client:
            return await fn(client)
    return anyio.run(go)


def test_tools_are_listed_with_their_parameters(server):
    tools = run(server, lambda c: c.list_tools())
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == {"search", "read_page", "list_pages", "answer"}
    assert {"query", "top_k", "corpus", "filters", "mode"} <= set(by_name["search"].input_schema["properties"])
    assert {"path", "section", "corpus"} == set(by_name["read_page"].input_schema["properties"])


def test_search_gives_sections_with_path_heading_anchor_and_snippet(server):
    result = run(server, lambda c: c.call_tool("search", {"query": STREAMING, "top_k": 3}))
    assert not result.is_error
    hits = result.structured_content["results"]
    first = hits[0]
    assert first["path"] == "guide/streaming.md" and first["heading"] == "Server-sent events"
    assert first["anchor"] == "server-sent-events" and first["uri"] == "rag://default/guide/streaming.md#server-sent-events"
    assert "stream" in first["snippet"] and len(first["snippet"]) <= 300


def test_search_takes_filters_and_several_corpora(server):
    filtered = run(server, lambda c: c.call_tool("search", {"query": STREAMING, "filters": {"tags": ["eval"]}}))
    assert {h["path"] for h in filtered.structured_content["results"]} == {"guide/evaluation.md"}
    both = run(server, lambda c: c.call_tool("search", {"query": "requests per minute", "corpus": ["default", SECOND]}))
    assert {h["corpus"] for h in both.structured_content["results"]} == {"default", SECOND}
    bad = run(server, lambda c: c.call_tool("search", {"query": "x", "filters": {"nope": 1}}))
    assert bad.is_error and "nope" in bad.content[0].text


def test_read_page_whole_or_one_section(server):
    page = run(server, lambda c: c.call_tool("read_page", {"path": "guide/evaluation.md"}))
    text = page.content[0].text
    assert "## Creating test cases" in text and "## Grading results" in text
    section = run(server, lambda c: c.call_tool("read_page", {"path": "guide/evaluation.md", "section": "grading-results"}))
    assert "## Grading results" in section.content[0].text and "Creating test cases" not in section.content[0].text
    missing = run(server, lambda c: c.call_tool("read_page", {"path": "guide/evaluation.md", "section": "nope"}))
    assert missing.is_error and "grading-results" in missing.content[0].text
    absent = run(server, lambda c: c.call_tool("read_page", {"path": "no/such.md"}))
    assert absent.is_error and "no page" in absent.content[0].text


def test_list_pages_lists_corpora_and_pages(server):
    listed = run(server, lambda c: c.call_tool("list_pages", {})).structured_content
    assert [c["name"] for c in listed["corpora"]] == ["default", SECOND]
    assert {(p["corpus"], p["path"]) for p in listed["pages"]} == {
        ("default", "guide/evaluation.md"), ("default", "guide/streaming.md"), ("default", "rate-limits.md"),
        (SECOND, "rate-limits.md")}
    guide = run(server, lambda c: c.call_tool("list_pages", {"corpus": "default", "prefix": "guide"})).structured_content
    assert [p["path"] for p in guide["pages"]] == ["guide/evaluation.md", "guide/streaming.md"]


def test_answer_cites_its_sources(server, chat):
    chat.reset()
    chat.reply("Set stream to true and read the events [Source 1].")
    result = run(server, lambda c: c.call_tool("answer", {"question": STREAMING, "max_sources": 2}))
    assert not result.is_error, result.content
    data = result.structured_content
    assert "[Source 1]" in data["answer"] and data["cited_sources"] == [1]
    assert data["sources"][0]["path"] == "guide/streaming.md" and data["sources"][0]["uri"].startswith("rag://default/")


def test_pages_are_resources(server):
    listed = run(server, lambda c: c.list_resources())
    uris = {str(r.uri) for r in listed.resources}
    assert page_uri("default", "guide/streaming.md") in uris and page_uri(SECOND, "rate-limits.md") in uris
    read = run(server, lambda c: c.read_resource("rag://default/guide/streaming.md"))
    assert "Server-sent events" in read.contents[0].text and read.contents[0].mime_type == "text/markdown"
