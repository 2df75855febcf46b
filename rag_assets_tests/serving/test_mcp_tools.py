"""The MCP tools and resources through the SDK's own client, in-process (Client(MCPServer)): search
with anchors and URIs, a page or one section read back, the pages and corpora listed, a cited answer
from the OpenAI-compatible stub, and the pages as resources; the contracts an agent corrects itself
by (schemas with ranges and allowed values, every wrong call a tool error in the HTTP 400's words);
lists and long pages a part at a time."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from starlette.testclient import TestClient

from rag_assets.answer.generation import MAX_SOURCES
from rag_assets.serving import page_tools
from rag_assets.serving.http_app import create_app
from rag_assets.serving.mcp_tools import build_mcp_server, page_uri
from rag_assets.serving.service import IndexService
from rag_assets_tests.support.serving import (LONG_PAGE, SECOND, many_pages_corpora, sample_corpora, versioned_corpus,
                                              with_chat)

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
    assert {"path", "section", "corpus", "offset"} == set(by_name["read_page"].input_schema["properties"])


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
    assert listed["total"] == 4 and listed["next_cursor"] is None
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


def test_every_tool_publishes_types_ranges_allowed_values_and_a_line_per_argument(server):
    """What an agent reads before it calls: before, top_k, mode, filters and corpus carried no range,
    no allowed values and no description."""
    schemas = {t.name: t.input_schema for t in run(server, lambda c: c.list_tools()).tools}
    search = schemas["search"]
    assert search["required"] == ["query"] and search["additionalProperties"] is False
    top_k = search["properties"]["top_k"]
    assert (top_k["type"], top_k["minimum"], top_k["maximum"], top_k["default"]) == ("integer", 1, 100, 5)
    assert search["properties"]["mode"]["enum"] == ["vector", "keyword", "hybrid", "rrf"]
    filters = search["properties"]["filters"]["description"]
    assert all(key in filters for key in ("module", "tags", "path_prefix", "language", "version"))
    assert search["properties"]["version"]["type"] == "string"
    assert schemas["answer"]["properties"]["max_sources"]["maximum"] == MAX_SOURCES
    assert schemas["list_pages"]["properties"]["limit"]["maximum"] == 100
    assert schemas["read_page"]["properties"]["offset"]["minimum"] == 0 and schemas["read_page"]["required"] == ["path"]
    for tool, schema in schemas.items():
        for name, prop in schema["properties"].items():
            assert prop.get("description") and ("type" in prop or "anyOf" in prop), (tool, name)


@pytest.mark.parametrize("tool, arguments, words", [
    ("search", {"query": "x", "top_k": 0}, "top_k must be an integer between 1 and 100, got 0"),
    ("search", {"query": "x", "top_k": 500}, "top_k must be an integer between 1 and 100, got 500"),
    ("search", {"query": "x", "mode": "semantic"}, "mode must be one of vector, keyword, hybrid, rrf, got 'semantic'"),
    ("search", {"query": "x", "filters": {"nope": 1}}, "unknown filter key 'nope'; known keys:"),
    ("search", {"query": "x", "k": 3}, "unknown argument(s) k (accepted: corpus, filters, mode, query, top_k, version)"),
    ("search", {}, "query is required"),
    ("search", {"query": "x", "corpus": "nope"}, "no corpus named 'nope' is served here (served: default, limits)"),
    ("search", {"query": "x", "version": "v2", "filters": {"version": "v1"}}, "disagree"),
    ("read_page", {"path": "guide/streaming.md", "offset": -1}, "offset must be an integer of 0 or more"),
    ("read_page", {"section": "usage"}, "path is required"),
    ("read_page", {"path": "guide/streaming.md", "corpus": ["default"]}, "corpus must be one corpus name"),
    ("list_pages", {"limit": 0}, "limit must be an integer between 1 and 100, got 0"),
    ("list_pages", {"cursor": "not-a-cursor"}, "cursor is not one this server gave"),
    ("list_pages", {"corpus": "nope"}, "no corpus named 'nope'"),
    ("answer", {"question": "x", "max_sources": 0}, f"max_sources must be an integer between 1 and {MAX_SOURCES}, got 0"),
    ("answer", {"question": "x", "filters": "guide"}, "filters must be a JSON object"),
])
def test_a_wrong_call_is_a_tool_error_naming_the_argument_and_what_it_accepts(server, tool, arguments, words):
    """Before, top_k=0, top_k=500 or mode="semantic" answered only "Error executing tool search"."""
    result = run(server, lambda c: c.call_tool(tool, arguments))
    assert result.is_error and words in result.content[0].text, result.content[0].text


def test_the_tool_errors_are_the_http_400s(server):
    service = server.service
    with TestClient(create_app(service), base_url="http://127.0.0.1:8765") as http:
        for arguments in ({"query": "x", "top_k": 0}, {"query": "x", "mode": "semantic"}, {"query": 5}):
            refused = http.post("/search", json=arguments)
            tool = run(server, lambda c: c.call_tool("search", arguments))
            assert refused.status_code == 400 and tool.is_error
            assert tool.content[0].text == refused.json()["error"]


def test_search_takes_a_version(tmp_path):
    """version is filters.version: only that docs version's pages (before, the argument was dropped
    and both versions came back)."""
    server = build_mcp_server(IndexService(versioned_corpus(tmp_path)))
    question = "What power supply does the widget need?"
    both = run(server, lambda c: c.call_tool("search", {"query": question})).structured_content["results"]
    assert {h["path"] for h in both} == {"v1/install.md", "v2/install.md"}
    v2 = run(server, lambda c: c.call_tool("search", {"query": question, "version": "v2"})).structured_content
    assert {h["path"] for h in v2["results"]} == {"v2/install.md"}
    assert v2["results"][0]["metadata"]["version"] == "v2"
    same = run(server, lambda c: c.call_tool("search", {"query": question, "filters": {"version": "v2"}}))
    assert same.structured_content["results"] == v2["results"]


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    return build_mcp_server(IndexService(many_pages_corpora(tmp_path_factory.mktemp("many"))))


def test_list_pages_answers_in_parts_under_20_kb_and_reaches_every_page(many):
    """Two corpora of 311 pages: before, one answer of every page (143 KB for two small sites)."""
    seen, cursor, parts = [], None, 0
    while True:
        result = run(many, lambda c: c.call_tool("list_pages", {"cursor": cursor} if cursor else {}))
        assert not result.is_error and len(result.model_dump_json(by_alias=True)) <= 20_000
        data = result.structured_content
        assert data["total"] == 622 and data["pages"]
        seen += [(p["corpus"], p["path"]) for p in data["pages"]]
        parts += 1
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 622 and parts > 1
    assert {c for c, _ in seen} == {"default", "second"}
    folder = run(many, lambda c: c.call_tool("list_pages", {"corpus": "second", "prefix": "section-03", "limit": 100}))
    assert folder.structured_content["total"] == 40
    assert {p["path"][:10] for p in folder.structured_content["pages"]} == {"section-03"}


def test_resources_are_listed_a_part_at_a_time(many):
    seen, cursor = [], None
    while True:
        listed = run(many, lambda c: c.list_resources(cursor=cursor))
        assert len(listed.resources) <= page_tools.RESOURCES_PER_LIST
        seen += [str(r.uri) for r in listed.resources]
        cursor = listed.next_cursor
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 622 and page_uri("second", LONG_PAGE) in seen


def test_a_long_page_is_read_in_parts_that_say_where_to_go_on(many):
    whole = many.service.catalog("default").page(LONG_PAGE).text()
    assert len(whole) > 2 * page_tools.READ_CHARS
    parts, offset = [], 0
    while True:
        text = run(many, lambda c: c.call_tool("read_page", {"path": LONG_PAGE, "offset": offset})).content[0].text
        body, _, tail = text.partition(f"\n\n[{LONG_PAGE}: characters ")
        assert len(body) <= page_tools.READ_CHARS
        parts.append(body)
        if not tail:
            break
        offset = int(tail.rsplit("offset=", 1)[1].split()[0])
    assert "".join(parts) == whole and len(parts) >= 3
