"""The OpenAPI 3.1 document of `rag serve`'s HTTP API (GET /openapi.json) and a page rendering it
(GET /docs: plain HTML, nothing fetched from elsewhere). The request fields are those of
rag_assets.serving.requests (a test holds the two together)."""

from __future__ import annotations

import html
import json
from typing import Any

from rag_assets.answer.generation import MAX_SOURCES
from rag_assets.vocabulary.modes import MAX_TOP_K

_ERROR = {"$ref": "#/components/schemas/Error"}
_FILTERS = {"type": "object", "description": "document filters, as RetrieveRequest.filters: e.g. "
            '{"module": "guide", "tags": ["eval"], "doc_type": "guide"} (docs/api.md#filters)',
            "additionalProperties": True}
_CORPUS = {"description": "a corpus name, or a list of names for one ranking over several (default: the server's "
           "first corpus)", "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_MODE = {"type": "string", "enum": ["hybrid", "vector", "keyword", "rrf"], "description": "default RAG_RETRIEVAL_MODE"}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "malformed request (one line naming the field)", 401: "missing or wrong bearer token",
            404: "unknown corpus", 413: "body over the limit", 502: "the chat model failed (the answer and its sources)",
            503: "busy, store unavailable or answers not configured", 504: "retrieval timeout"}
    return {str(c): {"description": text[c], "content": {"application/json": {"schema": _ERROR}}} for c in codes}


def openapi_document() -> dict[str, Any]:
    result = {"type": "object", "properties": {
        "chunk_id": {"type": "string"}, "doc_path": {"type": "string"}, "section": {"type": "string"},
        "heading_breadcrumb": {"type": "string"}, "anchor": {"type": "string"}, "text": {"type": "string"},
        "context": {"type": "string", "description": "the chunk with its neighbours in its section (RAG_CONTEXT_TOKENS)"},
        "context_tokens": {"type": "integer"},
        "score": {"type": "number", "description": "the mode's ranking score (merged score over several corpora)"},
        "relevance": {"type": "number", "description": "the chance that the chunk is relevant to the query, 0 to 1"},
        "cosine": {"type": "number", "description": "dense cosine of query and chunk"},
        "metadata": {"type": "object", "additionalProperties": True},
        "corpus": {"type": "string"}, "rank": {"type": "integer"}},
        "required": ["chunk_id", "doc_path", "text", "context", "score", "metadata", "corpus", "rank"]}
    return {
        "openapi": "3.1.0",
        "info": {"title": "rag_assets serve", "version": "1",
                 "description": "Search and cited answers over the indexed documents (docs/serve.md). "
                                "With RAG_SERVE_TOKEN set, every path but /health needs `Authorization: Bearer <token>`."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]},
                "SearchRequest": {"type": "object", "additionalProperties": False, "required": ["query"], "properties": {
                    "query": {"type": "string", "description": "the question (at most RAG_MAX_QUERY_CHARS)"},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5},
                    "max_chunks": {"type": "integer", "description": "RetrieveRequest's name for top_k"},
                    "mode": _MODE,
                    "fusion": {"type": "string", "enum": ["convex", "rrf"], "description": "hybrid's fusion"},
                    "filters": _FILTERS, "corpus": _CORPUS,
                    "prefer": {"type": "string", "description": "the reader's module, chapter or doc_path: its "
                               "chunks move up a few places (nothing is filtered)"},
                    "min_relevance": {"type": "number", "minimum": 0, "maximum": 1,
                                      "description": "the gate of meets_threshold (default RAG_MIN_RELEVANCE)"},
                    "context_key": {"type": "string", "description": "accepted as RetrieveRequest has it"}}},
                "SearchResult": result,
                "SearchResponse": {"type": "object", "properties": {
                    "query": {"type": "string"}, "mode": {"type": "string"}, "filters": {"type": ["object", "null"]},
                    "corpora": {"type": "array", "items": {"type": "string"}},
                    "avg_relevance": {"type": "number"}, "meets_threshold": {"type": "boolean"},
                    "min_relevance": {"type": "number"},
                    "confidence": {"type": "object", "description": "several corpora: each one's head relevance"},
                    "generation": {"description": "the index generation the results come from"},
                    "cached": {"type": "boolean"}, "elapsed_ms": {"type": "number"},
                    "results": {"type": "array", "items": {"$ref": "#/components/schemas/SearchResult"}}},
                    "required": ["results"]},
                "AnswerRequest": {"type": "object", "additionalProperties": False, "required": ["question"], "properties": {
                    "question": {"type": "string"}, "query": {"type": "string", "description": "same as question"},
                    "max_sources": {"type": "integer", "minimum": 1, "maximum": MAX_SOURCES, "default": 5},
                    "chapter_context": {"type": "string"}, "prefer": {"type": "string", "description": "same as chapter_context"},
                    "selected_text": {"type": "string"}, "filters": _FILTERS,
                    "corpus": {"type": "string"}, "mode": _MODE,
                    "min_relevance": {"type": "number"}, "context_key": {"type": "string"}}},
                "AnswerResponse": {"type": "object", "properties": {
                    "question": {"type": "string"}, "answer": {"type": "string", "description": "with [Source N] citations"},
                    "sources": {"type": "array", "items": {"type": "object"}},
                    "cited_sources": {"type": "array", "items": {"type": "integer"}},
                    "invalid_citations": {"type": "array", "items": {"type": "integer"}},
                    "model": {"type": "string"}, "tokens_used": {"type": "integer"},
                    "error": {"type": ["string", "null"]}, "corpus": {"type": "string"}}},
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/health": {"get": {"summary": "liveness: the corpora served", "security": [],
                                "responses": {"200": {"description": "ok"}}}},
            "/corpora": {"get": {"summary": "the corpora served: docs folder, collection, index generation, pages",
                                 "responses": {"200": {"description": "ok"}, **_errors(401)}}},
            "/search": {"post": {
                "summary": "the chunks that best answer a query (as `rag query`), in one corpus or several",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/SearchRequest"}}}},
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/SearchResponse"}}}}, **_errors(400, 401, 404, 413, 503, 504)}}},
            "/answer": {"post": {
                "summary": "an answer with [Source N] citations (as `rag ask`)",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/AnswerRequest"}}}},
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/AnswerResponse"}}}},
                    **_errors(400, 401, 404, 413, 502, 503, 504)}}},
            "/mcp": {"post": {"summary": "the Model Context Protocol, streamable HTTP (docs/serve.md#mcp)",
                              "responses": {"200": {"description": "MCP messages"}, **_errors(401)}}},
        },
    }


def docs_page() -> str:
    doc = openapi_document()
    parts = [f"<h1>{html.escape(doc['info']['title'])}</h1><p>{html.escape(doc['info']['description'])}</p>",
             '<p>The machine-readable document: <a href="/openapi.json">/openapi.json</a>.</p>']
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            parts.append(f"<h2><code>{method.upper()} {html.escape(path)}</code></h2><p>{html.escape(op['summary'])}</p>")
            ref = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
            if ref:
                schema = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
                parts.append("<pre>" + html.escape(json.dumps(schema, indent=2)) + "</pre>")
            codes = ", ".join(op["responses"])
            parts.append(f"<p>responses: {html.escape(codes)}</p>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>rag serve API</title></head><body>"
            + "".join(parts) + "</body></html>")
