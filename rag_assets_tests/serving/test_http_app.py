"""The HTTP API in-process (Starlette's TestClient) over a real sample index: search as `rag query`,
several corpora in one ranking, answers against the OpenAI-compatible stub, the errors as one JSON
line with their status, the token, the request log without query text, the OpenAPI document."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
from starlette.testclient import TestClient

from rag_assets.pipeline import RAGPipeline
from rag_assets.serving.http_app import create_app
from rag_assets.serving.mcp_tools import build_mcp_server
from rag_assets.serving.openapi import openapi_document
from rag_assets.serving.requests import ANSWER_FIELDS, SEARCH_FIELDS
from rag_assets.serving.service import IndexService
from rag_assets_tests.support.serving import SECOND, sample_corpora, with_chat

STREAMING = "How can I receive the response incrementally as events?"
URL = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return sample_corpora(tmp_path_factory.mktemp("serving"))[1]


@pytest.fixture(scope="module")
def service(corpora, chat):
    return IndexService(with_chat(corpora, chat))


@pytest.fixture(scope="module")
def client(service):
    with TestClient(create_app(service, mcp_server=build_mcp_server(service)), base_url=URL) as c:
        yield c


def test_search_returns_what_rag_query_ranks_with_context_and_metadata(client, corpora):
    r = client.post("/search", json={"query": STREAMING, "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    local = RAGPipeline.from_settings(corpora[0][1]).search(STREAMING, None, 3)
    assert [x["chunk_id"] for x in body["results"]] == [x.chunk_id for x in local]
    first = body["results"][0]
    assert first["doc_path"] == "guide/streaming.md" and first["section"] == "Server-sent events"
    assert first["anchor"] == "server-sent-events" and first["corpus"] == "default" and first["rank"] == 1
    assert "stream" in first["context"] and first["metadata"]["title"] == "Streaming messages"
    assert "content_hash" not in first["metadata"]
    assert body["mode"] == "hybrid" and body["meets_threshold"] is True and body["corpora"] == ["default"]
    again = client.post("/search", json={"query": STREAMING, "top_k": 3}).json()
    assert again["cached"] is True and again["results"] == body["results"]


def test_search_filters_and_max_chunks_follow_retrieve_request(client):
    body = client.post("/search", json={"query": STREAMING, "max_chunks": 5, "filters": {"module": "guide"}}).json()
    assert body["results"] and all(x["doc_path"].startswith("guide/") for x in body["results"])
    assert client.post("/search", json={"query": STREAMING, "filters": {"tags": ["eval"]}}).json()["results"][0][
        "doc_path"] == "guide/evaluation.md"


def test_search_over_several_corpora_is_one_ranking(client):
    body = client.post("/search", json={"query": "How many requests per minute on the free tier?", "top_k": 4,
                                        "corpus": ["default", SECOND]}).json()
    assert {x["corpus"] for x in body["results"]} == {"default", SECOND}
    assert body["results"][0]["doc_path"] == "rate-limits.md"
    scores = [x["score"] for x in body["results"]]
    assert scores == sorted(scores, reverse=True) and set(body["confidence"]) == {"default", SECOND}
    only = client.post("/search", json={"query": "free tier", "corpus": SECOND}).json()
    assert {x["doc_path"] for x in only["results"]} == {"rate-limits.md"}


@pytest.mark.parametrize("body, status, words", [
    ({"query": ""}, 400, "empty"),
    ({"query": "x" * 2001}, 400, "too long"),
    ({"query": "x", "top_k": 0}, 400, "top_k"),
    ({"query": "x", "top_k": 101}, 400, "top_k"),
    ({"query": "x", "top_k": 2, "max_chunks": 2}, 400, "not both"),
    ({"q": "x"}, 400, "unknown field(s) q"),
    ({"query": "x", "filters": {"no_such_key": 1}}, 400, "no_such_key"),
    ({"query": "x", "filters": ["guide"]}, 400, "filters"),
    ({"query": "x", "mode": "semantic"}, 400, "mode"),
    ({"query": "x", "corpus": "nope"}, 404, "nope"),
    (["x"], 400, "JSON object"),
])
def test_bad_requests_are_one_line_with_their_status(client, body, status, words):
    r = client.post("/search", json=body)
    assert r.status_code == status and words in r.json()["error"] and "\n" not in r.json()["error"]


JSON = {"Content-Type": "application/json"}


def test_body_limit_and_malformed_json(client):
    r = client.post("/search", content=b'{"query": "' + b"x" * 70_000 + b'"}', headers=JSON)
    assert r.status_code == 413 and "limit" in r.json()["error"]
    r = client.post("/search", content=b"{not json", headers=JSON)
    assert r.status_code == 400 and "not JSON" in r.json()["error"]


@pytest.mark.parametrize("body, words", [
    (b"[" * 30_000 + b"]" * 30_000, "nests JSON too deep"),
    (b'{"query": "rate limits \\ud800"}', "lone surrogate"),
    (b'{"query": "rate limits", "filters": {"module": "\\udfff"}}', "lone surrogate"),
])
def test_json_a_parser_or_tokenizer_would_choke_on_is_a_400(client, body, words):
    """Deeply nested JSON and a lone surrogate answered 500 with a traceback in the log."""
    r = client.post("/search", content=body, headers=JSON)
    assert r.status_code == 400 and words in r.json()["error"], r.text


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/search", 405), ("DELETE", "/search", 405), ("GET", "/answer", 405), ("POST", "/corpora", 405),
    ("GET", "/no/such/path", 404), ("GET", "/mcp", 405),
])
def test_every_error_is_one_json_line_unknown_paths_and_methods_too(client, method, path, status):
    """GET /search, DELETE /search and unknown paths answered plain text; GET /mcp opened an event
    stream that stayed open for good (read as a stream here: before, reading it whole never ended)."""
    with client.stream(method, path, headers={**JSON, "Accept": "application/json, text/event-stream"}) as r:
        assert r.status_code == status and r.headers["content-type"] == "application/json", r.headers
        error = json.loads(r.read())["error"]
    assert error and "\n" not in error
    if status == 405:
        assert r.headers["allow"]


ROUTES = [("GET", "/health"), ("GET", "/corpora"), ("POST", "/search"), ("POST", "/answer"), ("GET", "/openapi.json"),
          ("GET", "/docs"), ("POST", "/mcp")]


@pytest.mark.parametrize("method, path", ROUTES)
def test_a_loopback_server_refuses_a_foreign_host_or_origin_on_every_route(client, service, method, path):
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 read /search, /corpora,
    /answer, /openapi.json and /docs before (only /mcp refused it)."""
    body = {"query": "rate limits"} if path != "/mcp" else {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    host = client.request(method, path, json=body, headers={"Host": "evil.example"})
    assert host.status_code == 421 and "evil.example" in host.json()["error"]
    origin = client.request(method, path, json=body, headers={"Origin": "http://evil.example"})
    assert origin.status_code == 403 and "evil.example" in origin.json()["error"]
    for local in ("http://127.0.0.1:8765", "http://localhost:3000"):
        assert client.request(method, path, json=body, headers={"Origin": local}).status_code not in (403, 421)
    # off loopback the token guards, whatever name the server is reached by
    with TestClient(create_app(service, token="s3cret", loopback=False),
                    base_url="http://docs.example:8765") as remote:
        assert remote.get("/corpora").status_code == 401
        assert remote.get("/corpora", headers={"Authorization": "Bearer s3cret"}).status_code == 200


@pytest.mark.parametrize("path", ["/search", "/answer", "/mcp"])
def test_a_body_that_is_not_json_is_a_415(client, path):
    """A web page may POST text/plain or a form to any address without asking: /search and /answer
    answered such bodies."""
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        r = client.post(path, content=b'{"query": "rate limits"}', headers={"Content-Type": kind})
        assert r.status_code == 415 and "application/json" in r.json()["error"]



def test_mcp_is_held_to_the_body_limit_and_the_requests_in_flight(service):
    """/mcp took 4 MiB bodies (64 KiB documented) and was outside the in-flight limit."""
    with TestClient(create_app(service, mcp_server=build_mcp_server(service)), base_url=URL) as c:
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "search", "arguments": {"query": "x" * 100_000}}}
        r = c.post("/mcp", json=big, headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 413 and "limit" in r.json()["error"]
    with TestClient(create_app(service, mcp_server=build_mcp_server(service), max_in_flight=0), base_url=URL) as c:
        r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 503 and "busy" in r.json()["error"]


def test_the_retrieval_timeout_is_a_504(corpora):
    slow = [(c, dataclasses.replace(s, retrieve_timeout_seconds=1e-6)) for c, s in corpora[:1]]
    with TestClient(create_app(IndexService(slow)), base_url=URL) as c:
        r = c.post("/search", json={"query": "a question no cache has seen"})
    assert r.status_code == 504 and "RAG_RETRIEVE_TIMEOUT_SECONDS" in r.json()["error"]


def test_answer_is_cited_from_the_chat_model(client, chat):
    chat.reset()
    chat.reply("Set `stream: true` to get server-sent events [Source 1].")
    r = client.post("/answer", json={"question": STREAMING, "max_sources": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert "[Source 1]" in body["answer"] and body["cited_sources"] == [1]
    assert body["sources"][0]["doc_path"] == "guide/streaming.md" and body["sources"][0]["anchor"] == "server-sent-events"
    assert chat.chat_requests and STREAMING in chat.chat_requests[-1].json["messages"][-1]["content"]


def test_answer_without_a_chat_model_is_a_503_and_a_failing_one_a_502(corpora, chat):
    with TestClient(create_app(IndexService(corpora)), base_url=URL) as c:
        r = c.post("/answer", json={"question": STREAMING})
    assert r.status_code == 503 and "OPENAI_API_KEY" in r.json()["error"]
    from rag_assets_tests.support.openai_server import CHAT_PATH, Fault

    failing = with_chat(corpora[:1], chat, chat_max_retries=1)
    chat.reset()
    chat.always(Fault.status(500, path=CHAT_PATH))
    try:
        with TestClient(create_app(IndexService(failing)), base_url=URL) as c:
            r = c.post("/answer", json={"question": STREAMING})
    finally:
        chat.always(None)
    assert r.status_code == 502 and r.json()["error"] and r.json()["sources"]


def test_corpora_and_health(client):
    corpora = client.get("/corpora").json()
    assert [c["name"] for c in corpora["corpora"]] == ["default", SECOND] and corpora["default"] == "default"
    assert corpora["corpora"][0]["pages"] == 3 and corpora["corpora"][1]["pages"] == 1
    assert client.get("/health").json()["corpora"] == ["default", SECOND]


def test_corpora_counts_pages_before_any_search(corpora, chat):
    """A server just started lists its corpora's pages (it once said None until a search opened one)."""
    fresh = IndexService(with_chat(corpora, chat))
    assert [(c["name"], c["pages"]) for c in fresh.corpora()] == [("default", 3), (SECOND, 1)]


def test_the_token_guards_everything_but_health(service):
    with TestClient(create_app(service, token="s3cret"), base_url=URL) as c:
        assert c.get("/health").status_code == 200
        r = c.post("/search", json={"query": STREAMING})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert c.post("/search", json={"query": STREAMING}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/corpora", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.post("/search", json={"query": STREAMING}, headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_the_request_log_has_no_query_text_unless_asked(service, caplog):
    caplog.set_level(logging.INFO, logger="rag_assets.serving")
    with TestClient(create_app(service), base_url=URL) as c:
        c.post("/search", json={"query": "a secret question about streaming"})
    lines = [r.getMessage() for r in caplog.records if r.name == "rag_assets.serving"]
    assert any("POST /search 200" in line for line in lines)
    assert not any("secret question" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with TestClient(create_app(service, log_queries=True), base_url=URL) as c:
        c.post("/search", json={"query": "a secret question about streaming"})
    assert any("secret question" in r.getMessage() for r in caplog.records if r.name == "rag_assets.serving")


def test_openapi_names_every_route_and_request_field(client):
    doc = client.get("/openapi.json").json()
    assert doc == openapi_document()
    assert set(doc["paths"]) == {"/health", "/corpora", "/search", "/answer", "/mcp"}
    schemas = doc["components"]["schemas"]
    assert set(schemas["SearchRequest"]["properties"]) == set(SEARCH_FIELDS)
    assert set(schemas["AnswerRequest"]["properties"]) == set(ANSWER_FIELDS)
    page = client.get("/docs")
    assert page.status_code == 200 and "POST /search" in page.text


def test_busy_server_says_so(service):
    with TestClient(create_app(service, max_in_flight=0), base_url=URL) as c:
        r = c.post("/search", json={"query": STREAMING})
    assert r.status_code == 503 and "busy" in r.json()["error"]


def test_a_corpus_with_nothing_indexed_answers_no_results(tmp_path):
    from rag_assets.config import Settings
    from rag_assets.corpus import Corpus

    (tmp_path / "docs").mkdir()
    empty = Settings.from_env({"RAG_DOCS_DIR": str(tmp_path / "docs"), "RAG_CHROMA_PATH": str(tmp_path / "chroma"),
                               "RAG_STATE_DIR": str(tmp_path / "state"), "RAG_CACHE_DIR": str(tmp_path / "cache")})
    service = IndexService([(Corpus(), empty)])
    service.warm()
    with TestClient(create_app(service), base_url=URL) as c:
        r = c.post("/search", json={"query": STREAMING})
    assert r.status_code == 200 and r.json()["results"] == [] and r.json()["meets_threshold"] is False
