"""IndexService follows the index within its recheck bound: between two checks of the generation it
answers from the snapshot view it last confirmed (no read of the state database or CURRENT per
request); after the bound the next search sees a new ingest, never a cached answer of the old one."""

from __future__ import annotations

import time

from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.serving.requests import search_request
from rag_assets.serving.service import RECHECK_SECONDS, IndexService
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index, build_sample_index

NEW_DOC = "parts/valves.md"
NEW_TEXT = "# Valves\n\nGrease the ZK-4411 gate valve every quarter, or it seizes.\n"
QUESTION = "How often is the ZK-4411 gate valve greased?"


def _docs(body: dict) -> list[str]:
    return [r["doc_path"] for r in body["results"]]


def test_a_new_ingest_is_searchable_after_the_recheck_bound_and_not_before(tmp_path):
    env, settings = build_sample_index(tmp_path)
    settings = Settings.from_env(env)
    assert 0 < RECHECK_SECONDS <= 1  # what docs/serve.md promises `rag serve`'s searches
    following = IndexService([(Corpus(), settings)], recheck_seconds=0.2)
    lagging = IndexService([(Corpus(), settings)], recheck_seconds=3600)
    request = search_request({"query": QUESTION, "top_k": 3})
    before = {s: s.search(request) for s in (following, lagging)}
    assert all(NEW_DOC not in _docs(b) for b in before.values())
    old = before[following]["generation"]
    assert before[lagging]["generation"] == old
    checks = lagging.pipeline().retriever.snapshot.checks
    for i in range(5):  # unseen questions within the bound: no read of the generation or CURRENT
        lagging.search(search_request({"query": f"{QUESTION} ({i})", "top_k": 3}))
    assert lagging.pipeline().retriever.snapshot.checks == checks

    write_corpus(settings.docs_dir, {NEW_DOC: NEW_TEXT})
    build_index(None, settings)  # an ingest's commit

    stale = lagging.search(search_request({"query": f"{QUESTION} (again)", "top_k": 3}))
    assert stale["generation"] == old and NEW_DOC not in _docs(stale)  # within its bound: the confirmed view
    time.sleep(0.25)  # past the follower's bound
    after = following.search(request)  # the question it answered (and cached) before the ingest
    assert after["cached"] is False and after["generation"] != old
    assert _docs(after)[0] == NEW_DOC
    assert following.generation() == after["generation"] == following.corpora()[0]["generation"]


def test_warm_waits_for_a_one_time_snapshot_build_so_no_client_meets_it(tmp_path, monkeypatch, caplog):
    """Over an index an earlier version wrote, `rag serve`'s warm-up builds the search snapshot from the
    store before it listens, outside RAG_RETRIEVE_TIMEOUT_SECONDS (a build of 100,000 chunks takes 30 s
    and more): in the thread that called warm(), not in a retrieval under the timeout (the only place it
    applies), so no build can time out whatever the machine's speed; no warm-up failure, and the first
    client's search answers without building anything."""
    import dataclasses
    import logging
    import threading

    from rag_assets_tests.support.held_builds import hold_first_build

    write_corpus(tmp_path / "docs")
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    build_index(None, settings, snapshot=False)  # the store and its generation, no snapshot committed
    build = hold_first_build(monkeypatch, held=False)
    # a timeout a loaded machine's first search (the model loaded) fits in: only where the build runs matters
    service = IndexService([(Corpus(), dataclasses.replace(settings, retrieve_timeout_seconds=120.0))])
    with caplog.at_level(logging.WARNING, logger="rag_assets"):
        service.warm()
    assert not [r for r in caplog.records if "warm-up search failed" in r.getMessage()]
    assert build.threads == [threading.get_ident()]  # built by warm() itself, outside the timeout
    snapshot = service.pipeline().retriever.snapshot
    assert snapshot.rebuilds == 1 and snapshot.building is None
    assert _docs(service.search(search_request({"query": "HTTP 429 retry-after", "top_k": 3})))[0] == "rate-limits.md"
    assert snapshot.rebuilds == 1 and len(build.threads) == 1


def test_a_site_pages_url_and_version_over_http_search_and_answer(site_built, chat):
    """Issue 42 items 4-5 over HTTP: `filters.version` selects a docs site's version (and says so where
    no page has one), each result's metadata carries the page's version, url, route and site_path, and
    /answer's sources name the URL."""
    import dataclasses

    from starlette.testclient import TestClient

    from rag_assets.serving.http_app import create_app
    from rag_assets_tests.support.site_pages import BASE_URL, INSTALL_1, SEARCH_PLUGIN

    settings = dataclasses.replace(site_built[1], openai_api_key="sk-test-000", openai_base_url=chat.base_url)
    with TestClient(create_app(IndexService([(Corpus(base=settings), settings)])), base_url="http://127.0.0.1:8765") as client:
        older = client.post("/search", json={"query": "How do I install Zephyr?", "filters": {"version": "1.x"}}).json()
        assert [r["doc_path"] for r in older["results"]] == [INSTALL_1]
        assert older["results"][0]["metadata"]["version"] == "1.x"
        assert older["results"][0]["metadata"]["url"] == f"{BASE_URL}/docs/1.x/guides/install/"
        plugin = client.post("/search", json={"query": "How do I install Zephyr?", "filters": {"path_prefix": "plugin/"}})
        first = plugin.json()["results"][0]
        assert first["doc_path"] == SEARCH_PLUGIN and first["metadata"]["site_path"] == "plugin/search.md"
        assert first["metadata"]["route"] == "/docs/plugin/search/"
        chat.reset()
        chat.reply("Readers search a build-time index [Source 1].")
        answer = client.post("/answer", json={"question": "How do readers search the pages without a server?",
                                              "max_sources": 1}).json()
        assert answer["sources"][0]["url"] == f"{BASE_URL}/docs/plugin/search/"


def test_a_version_filter_over_a_corpus_without_versions_is_a_400_saying_so(tmp_path):
    from starlette.testclient import TestClient

    from rag_assets.serving.http_app import create_app

    env, settings = build_sample_index(tmp_path)
    with TestClient(create_app(IndexService([(Corpus(base=settings), settings)])), base_url="http://127.0.0.1:8765") as client:
        r = client.post("/search", json={"query": QUESTION, "filters": {"version": "2.x"}})
    assert r.status_code == 400 and "no indexed page has a version" in r.json()["error"]
