"""What a client may send: RetrieveRequest's fields under their names, checked before any work (the
HTTP statuses of these errors: test_http_app.py)."""

from __future__ import annotations

import pytest

from rag_assets.serving.requests import BadRequest, answer_request, search_request


def test_search_request_takes_retrieve_request_fields():
    r = search_request({"query": "q", "max_chunks": 7, "mode": "KEYWORD", "filters": {"module": "m"},
                        "corpus": ["a", "b", "a"], "prefer": "guide", "min_relevance": 0.2, "context_key": "c:u"})
    assert (r.top_k, r.mode, r.corpora, r.prefer, r.min_relevance) == (7, "keyword", ("a", "b"), "guide", 0.2)
    assert search_request({"query": "q", "fusion": "rrf"}).mode == "rrf"
    assert search_request({"query": "q", "corpus": "a"}).corpora == ("a",)


@pytest.mark.parametrize("body, words", [
    ({"query": "q", "fusion": "rrf", "mode": "vector"}, "hybrid"),
    ({"query": "q", "fusion": "max"}, "convex or rrf"),
    ({"query": "q", "corpus": []}, "corpus"),
    ({"query": "q", "corpus": [f"c{i}" for i in range(17)]}, "at most 16"),
    ({"query": "q", "min_relevance": 2}, "between 0 and 1"),
    ({"query": "q", "top_k": True}, "top_k"),
    ({"query": 5}, "string"),
    ({}, "query is required"),
])
def test_search_request_refuses_with_one_line(body, words):
    with pytest.raises(BadRequest, match=words):
        search_request(body)


def test_answer_request_takes_the_ask_fields_and_their_aliases():
    a = answer_request({"query": "q", "prefer": "guide", "max_sources": 3, "selected_text": "passage"})
    assert (a.question, a.chapter_context, a.max_sources, a.selected_text) == ("q", "guide", 3, "passage")
    for body, words in [({"question": "q", "query": "q"}, "not both"), ({"question": "q", "corpus": ["a", "b"]}, "one"),
                        ({"question": "q", "selected_text": " "}, "selected_text"),
                        ({"question": "q", "max_sources": 0}, "max_sources")]:
        with pytest.raises(BadRequest, match=words):
            answer_request(body)
