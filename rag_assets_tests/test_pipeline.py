"""RAGPipeline: retrieve/query contracts, thresholds, caching, errors (sample corpus, index built once)."""

import dataclasses
import time

import pytest

from rag_assets import RAGContext, RAGPipeline, RetrieveRequest
from rag_assets.config import Settings
from rag_assets.errors import InvalidQueryError, VectorDBUnavailableError
from rag_assets.index.generation import bump_generation


@pytest.fixture
def pipeline(built):
    return RAGPipeline.from_settings(built[1])


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_off_topic_question_returns_nothing(pipeline, mode):
    ctx = pipeline.retrieve(RetrieveRequest("How do I cook pasta?", context_key="test:user1", mode=mode))
    assert isinstance(ctx, RAGContext)
    assert ctx.document_chunks == [] and ctx.relevance_scores == [] and ctx.total_chunks == 0
    assert ctx.meets_threshold is False
    assert ctx.avg_relevance < pipeline.settings.min_relevance


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_on_topic_question_returns_cited_chunks(pipeline, mode):
    ctx = pipeline.retrieve(RetrieveRequest("How can I create multiple test cases?", max_chunks=1, mode=mode))
    assert ctx.meets_threshold and ctx.total_chunks == 1
    chunk = ctx.document_chunks[0]
    assert chunk.doc_path == chunk.document_id == "guide/evaluation.md"
    assert chunk.metadata["section"] == "Creating test cases"
    assert chunk.metadata["source"] == "Product docs" and chunk.metadata["doc_type"] == "guide"
    assert chunk.metadata["last_update_date"] == "2024-05-01"
    assert chunk.position_in_doc == 0 and chunk.retrieval_rank == 1
    assert 0.5 < chunk.relevance_score <= 1.0


def test_relevance_ordering_and_keyword_hits_get_a_cosine(pipeline):
    ctx = pipeline.retrieve(RetrieveRequest("rate limit requests per minute 429", max_chunks=3, min_relevance=0.0))
    scores = [c.relevance_score for c in ctx.document_chunks]
    assert scores == sorted(scores, reverse=True) == ctx.relevance_scores
    assert ctx.document_chunks[0].doc_path == "rate-limits.md"
    kw = pipeline.retrieve(RetrieveRequest("retry-after header", mode="keyword", min_relevance=0.0))
    assert kw.document_chunks and all(c.relevance_score != 0.0 for c in kw.document_chunks)


def test_the_gate_reads_the_best_results_and_hands_on_those_that_qualify(pipeline):
    """meets_threshold comes from the best candidates' calibrated relevance, not a mean padded with
    unrelated chunks: on this 4-chunk corpus a question one section answers passes (issue 43)."""
    every = pipeline.retrieve(RetrieveRequest("server-sent events", max_chunks=4, min_relevance=0.0, mode="vector"))
    assert every.total_chunks == 4 and every.meets_threshold
    best = every.relevance_scores[0]
    assert every.relevance_scores[-1] < best  # unrelated chunks follow the answer
    cut = (best + every.relevance_scores[-1]) / 2
    some = pipeline.retrieve(RetrieveRequest("server-sent events", max_chunks=4, min_relevance=cut, mode="vector"))
    assert some.meets_threshold and 1 <= some.total_chunks < 4 and all(s >= cut for s in some.relevance_scores)
    assert some.avg_relevance == pytest.approx(sum(some.relevance_scores) / some.total_chunks)
    strict = pipeline.retrieve(RetrieveRequest("server-sent events", max_chunks=4, min_relevance=1.0, mode="vector"))
    assert strict.document_chunks == [] and not strict.meets_threshold
    assert strict.avg_relevance == pytest.approx(best)  # none qualifies: the best one's relevance
    default = pipeline.retrieve(RetrieveRequest("How do I receive the response as server-sent events?"))
    assert default.meets_threshold and default.document_chunks[0].doc_path == "guide/streaming.md"


def test_result_cache_hit_and_invalidation(built):
    env, settings = built
    pipeline = RAGPipeline.from_settings(settings)
    request = RetrieveRequest("How do I stream responses?", context_key="chan:1")
    first = pipeline.retrieve(request)
    second = pipeline.retrieve(request)
    assert not first.cached and second.cached
    assert second.context_id == first.context_id and second.document_chunks == first.document_chunks
    # another context_key, mode or max_chunks is another entry
    assert not pipeline.retrieve(dataclasses.replace(request, context_key="chan:2")).cached
    assert not pipeline.retrieve(dataclasses.replace(request, max_chunks=2)).cached
    # an ingest that changed the index drops every entry
    bump_generation(settings.state_dir)
    third = pipeline.retrieve(request)
    assert not third.cached and pipeline.cache.invalidations == 1
    assert pipeline.retrieve(request).cached


def test_result_cache_expires(built):
    settings = dataclasses.replace(built[1], query_cache_ttl_seconds=0.0)
    pipeline = RAGPipeline.from_settings(settings)
    request = RetrieveRequest("How do I stream responses?")
    pipeline.retrieve(request)
    assert not pipeline.retrieve(request).cached


def test_query_embeddings_are_cached(pipeline):
    calls = []
    embedder = pipeline.retriever.embedder
    original = embedder.embed_query
    embedder.embed_query = lambda text: calls.append(text) or original(text)
    try:
        for mode in ("vector", "hybrid", "keyword"):
            pipeline.search("grading results on a scale", mode, 2)
    finally:
        del embedder.embed_query
    assert calls == ["grading results on a scale"]


@pytest.mark.parametrize(
    "bad",
    ["", "   \n\t", "x" * 2001, None,
     "\u200b", "\u200b\u200c\u200d\u2060\ufeff", " \u200b\u3000\u00a0 ", "\u0301"],  # nothing visible
)
def test_invalid_queries(pipeline, bad):
    with pytest.raises(InvalidQueryError, match="query"):
        pipeline.retrieve(RetrieveRequest(bad))
    with pytest.raises(ValueError, match="query"):  # InvalidQueryError is a ValueError
        pipeline.query(bad)


def test_the_query_limit_is_2000_characters_and_a_setting_takes_it_to_the_seeds_10000(built):
    """The pipeline-API seed allows 10,000 characters, the rules-bot seed 2,000: 2,000 by default
    (docs/api.md says why), RAG_MAX_QUERY_CHARS=10000 for a caller that wants the other."""
    long_query = ("How do I stream responses with server-sent events? " * 200)[:9_990].rstrip()
    long_query += "?" * (10_000 - len(long_query))
    with pytest.raises(InvalidQueryError, match="10000 characters, the limit is 2000"):
        RAGPipeline.from_settings(built[1]).retrieve(RetrieveRequest(long_query))
    wide = RAGPipeline.from_settings(Settings.from_env({**built[0], "RAG_MAX_QUERY_CHARS": "10000"}))
    ctx = wide.retrieve(RetrieveRequest(long_query, min_relevance=0.0))
    assert ctx.document_chunks[0].doc_path == "guide/streaming.md"


def test_zero_width_characters_are_dropped_from_a_visible_query(pipeline):
    hidden = pipeline.search("\u200bgrading\u200b results\ufeff", "keyword", 2)
    assert [r.chunk_id for r in hidden] == [r.chunk_id for r in pipeline.search("grading results", "keyword", 2)]


def test_a_request_is_checked_once_and_the_plan_is_what_runs(pipeline, monkeypatch):
    from rag_assets.retrieval import retriever as retriever_module

    calls = []
    check = retriever_module.validate_query
    counted = lambda q, n: calls.append(q) or check(q, n)  # noqa: E731
    monkeypatch.setattr(retriever_module, "validate_query", counted)
    monkeypatch.setattr("rag_assets.pipeline.validate_query", counted, raising=False)  # checked there before
    ctx = pipeline.retrieve(RetrieveRequest("\u200bgrading results ", max_chunks=3, mode="keyword",
                                            filters={"doc_type": ["guide", "faq"]}, min_relevance=0.0))
    assert calls == ["\u200bgrading results "]  # once, for the whole request
    assert ctx.query == "grading results" and ctx.total_chunks <= 3
    plan = pipeline.retriever.plan("grading results", "rrf", 7, {"doc_type": "guide"})
    assert (plan.mode.value, plan.top_k, plan.ranking.fusion.value) == ("hybrid", 7, "rrf")
    with pytest.raises(ValueError, match="top_k must be an integer between 1 and 100, got 0"):
        pipeline.retriever.plan("grading results", None, 0)


def test_a_retrieve_reads_the_index_generation_once(pipeline):
    snapshot = pipeline.retriever.snapshot
    before = snapshot.checks
    ctx = pipeline.retrieve(RetrieveRequest("How do I stream responses?", mode="hybrid"))
    assert snapshot.checks - before == 1  # the result cache's generation is the view the retrieval reads
    assert ctx.generation == snapshot.view().generation


def test_query_contract(pipeline):
    result = pipeline.query("How do I stream responses with server-sent events?", method="hybrid", top_k=3)
    assert result["answer"] == ""
    meta = result["metadata"]
    for key in ("retrieval_method", "context_count", "sources", "execution_time_ms", "pipeline_type", "fallback_used"):
        assert key in meta
    assert meta["retrieval_method"] == "hybrid" and meta["fallback_used"] is False
    assert meta["context_count"] == len(result["contexts"]) >= 1
    assert meta["sources"][0] == "guide/streaming.md"
    assert pipeline.query("How do I cook pasta?")["contexts"] == []
    for top_k in (0, 101, -1, 2.5, True):
        with pytest.raises(ValueError, match="top_k"):
            pipeline.query("streaming", top_k=top_k)
    with pytest.raises(ValueError, match="mode"):
        pipeline.query("streaming", method="graph")
    assert pipeline.query("streaming", method="bm25", top_k=1)["metadata"]["retrieval_method"] == "keyword"


def test_search_returns_search_results(pipeline):
    results = pipeline.search("HTTP 429 retry-after", "keyword", 2)
    assert results[0].doc_path == "rate-limits.md"
    d = results[0].as_dict()
    assert set(d) >= {"chunk_id", "doc_path", "section", "heading_breadcrumb", "text", "score"}
    assert [r.chunk_id for r in pipeline.search("HTTP 429", "hybrid", 4)][:1] == [results[0].chunk_id]


def test_queries_need_the_store_only_to_build_a_missing_snapshot(built, tmp_path):
    """A query reads the committed search snapshot: an unreachable store does not fail it. Only a
    snapshot that must be built from the store (an index an earlier version wrote) needs the store, and
    then an unreachable one raises VectorDBUnavailableError."""
    down = dataclasses.replace(built[1], chroma_host="127.0.0.1", chroma_port=9)
    assert RAGPipeline.from_settings(down).search("HTTP 429 retry-after", "hybrid", 2)[0].doc_path == "rate-limits.md"
    stale = Settings.from_env({}, chroma_host="127.0.0.1", chroma_port=9, state_dir=tmp_path, cache_dir=tmp_path)
    bump_generation(stale)  # the state says an index was written; no snapshot was committed for it
    with pytest.raises(VectorDBUnavailableError):
        RAGPipeline.from_settings(stale).search("HTTP 429 retry-after", "hybrid", 2)
    with pytest.raises(ConnectionError):  # the pipeline-API contract's "database connection failure"
        RAGPipeline.from_settings(stale).search("HTTP 429 retry-after", "hybrid", 2)


def test_the_seed_contracts_names_are_ours():
    import rag_assets
    from rag_assets import errors

    assert issubclass(errors.VectorDBUnavailableError, ConnectionError)
    assert errors.EmbeddingFailureError is errors.EmbeddingError
    assert issubclass(errors.VectorDBWriteError, errors.VectorDBUnavailableError)
    assert issubclass(errors.VectorStoreFullError, errors.VectorDBWriteError)
    assert rag_assets.RAGResponse is rag_assets.Answer and "RAGResponse" in rag_assets.__all__


def test_rrf_asked_for_is_rrf(pipeline):
    """Issue 35 item 5: method="rrf" ran the configured convex fusion, silently."""
    question = "How can I create multiple test cases?"
    assert pipeline.settings.fusion == "convex"
    rrf = {r.chunk_id: r.score for r in pipeline.retriever.search(question, "hybrid", 4, fusion="rrf")}
    convex = {r.chunk_id: r.score for r in pipeline.retriever.search(question, "hybrid", 4)}
    assert rrf != convex
    assert pipeline.retriever.search(question, "rrf", 4)[0].score == max(rrf.values())
    ctx = pipeline.retrieve(RetrieveRequest(question, max_chunks=4, mode="rrf", min_relevance=0.0))
    assert ctx.mode == "hybrid" and {c.chunk_id: c.retrieval_score for c in ctx.document_chunks} == rrf
    out = pipeline.query(question, method="rrf", top_k=4, min_relevance=0.0)
    assert out["metadata"]["fusion"] == "rrf" and set(out["metadata"]["chunk_ids"]) == set(rrf)
    assert pipeline.query(question, method="hybrid", top_k=4)["metadata"]["fusion"] == "convex"
    with pytest.raises(ValueError, match="fusion"):
        pipeline.retrieve(RetrieveRequest(question, fusion="borda"))


def test_tags_come_back_as_a_list(pipeline):
    """Issue 35 item 5: tags came back as one comma-joined string (Chroma stores them so)."""
    ctx = pipeline.retrieve(RetrieveRequest("How can I create multiple test cases?", max_chunks=1))
    assert ctx.document_chunks[0].metadata["tags"] == ["eval", "testing"]
    hit = pipeline.search("grading results on a scale", "keyword", 1)[0]
    assert hit.doc_path == "guide/evaluation.md" and hit.metadata["tags"] == ["eval", "testing"]
    assert pipeline.search("server-sent events", "keyword", 1)[0].metadata["tags"] == []


def test_retrieve_takes_the_rules_bot_call_form_too(pipeline):
    by_name = pipeline.retrieve(query="How do I stream responses?", context_key="chan:9", max_chunks=2,
                                min_relevance=0.0)
    assert pipeline.retrieve("How do I stream responses?", "chan:9", max_chunks=2, min_relevance=0.0).cached
    assert pipeline.retrieve(RetrieveRequest("How do I stream responses?", "chan:9", max_chunks=2,
                                             min_relevance=0.0)).cached
    assert by_name.document_chunks and by_name.total_chunks <= 2
    with pytest.raises(TypeError, match="unexpected"):
        pipeline.retrieve("streaming", "chan:9", top_k=3)
    with pytest.raises(TypeError, match="twice"):
        pipeline.retrieve("streaming", query="streaming")
    with pytest.raises(InvalidQueryError, match="required"):
        pipeline.retrieve(context_key="chan:9")


# -- a docs site's pages: version, url, route and site_path (rag_assets.vocabulary.site) ----------------------
SEARCH_QUESTION = "How do readers search the pages without a server?"
INSTALL_QUESTION = "How do I install Zephyr?"


@pytest.fixture(scope="module")
def site(site_built):
    return RAGPipeline.from_settings(site_built[1])


def _site_facts(metadata: dict) -> dict:
    from rag_assets.vocabulary.site import SITE_KEYS

    return {key: metadata.get(key) for key in SITE_KEYS}


def test_a_site_pages_version_url_route_and_site_path_reach_every_surface_but_the_index_text(site_built, site):
    """Issue 42 items 4-5: the four keys the parse stage gives a site's page ride from its parsed
    metadata into the vector store, the search snapshot, every result and the answers' sources (the
    Python API's `source_urls`); none of them is embedded or keyword-indexed."""
    from rag_assets.index.chroma_store import ChromaStore
    from rag_assets.retrieval.terms import chunk_index_text
    from rag_assets_tests.support.site_pages import BASE_URL, SEARCH_PLUGIN, SITE_FACTS

    facts = SITE_FACTS[SEARCH_PLUGIN]
    assert facts == {"version": "2.x", "url": f"{BASE_URL}/docs/plugin/search/", "route": "/docs/plugin/search/",
                     "site_path": "plugin/search.md"}
    store = ChromaStore.for_settings(site_built[1].paths, site.retriever.embedder)
    stored = [meta for _, _, meta in store.iter_all() if meta["doc_path"] == SEARCH_PLUGIN]
    assert stored and all(_site_facts(meta) == facts for meta in stored)
    view = site.retriever.view()
    assert _site_facts(view.documents()[SEARCH_PLUGIN]) == facts  # what filters select on
    rows = [row for row in range(len(view)) if view.metadata(row)["doc_path"] == SEARCH_PLUGIN]
    assert rows and all(_site_facts(view.metadata(row)) == facts for row in rows)
    hit = site.search(SEARCH_QUESTION, None, 1)[0]
    assert hit.doc_path == SEARCH_PLUGIN and _site_facts(hit.metadata) == facts
    context = site.retrieve(RetrieveRequest(SEARCH_QUESTION, max_chunks=1))
    assert _site_facts(context.document_chunks[0].metadata) == facts
    assert _site_facts(context.as_dict()["document_chunks"][0]["metadata"]) == facts
    out = site.query(SEARCH_QUESTION, top_k=1, generate_answer=False)["metadata"]
    assert out["sources"] == [SEARCH_PLUGIN] and out["source_urls"] == [facts["url"]]
    # what is embedded and keyword-indexed holds no address: a word only the URLs hold finds nothing
    for row in range(len(view)):
        indexed = chunk_index_text(view.text(row), view.metadata(row))
        assert "example.dev" not in indexed and "/docs/" not in indexed and ".md" not in indexed
    assert site.search("example", "keyword", 5) == []


def test_version_path_prefix_and_the_readers_place_read_a_sites_own_paths(site):
    """Pointed at the site's repository, `path_prefix` and `prefer` match a page's site_path (its path
    under the site's content root) as well as its doc_path; `version` selects a version."""
    from rag_assets_tests.support.site_pages import INSTALL_1, INSTALL_2, SEARCH_PLUGIN, SITE_DOCS

    def found(filters):
        return {r.doc_path for r in site.search(INSTALL_QUESTION, None, 5, filters)}

    assert found({"version": "1.x"}) == {INSTALL_1}
    assert INSTALL_1 not in found({"version": "2.x"}) and INSTALL_2 in found({"version": "2.x"})
    assert found({"version": ["1.x", "2.x"]}) == set(SITE_DOCS)
    assert found({"path_prefix": "plugin/"}) == found({"path_prefix": "handbook/pages/plugin/"}) == {SEARCH_PLUGIN}
    assert found({"path_prefix": "guides/install", "version": "2.x"}) == {INSTALL_2}
    # the reader is in the site's plugin section: its page moves up, nothing is filtered out
    plain = site.retrieve(RetrieveRequest(INSTALL_QUESTION, max_chunks=4, min_relevance=0.0))
    placed = site.retrieve(RetrieveRequest(INSTALL_QUESTION, max_chunks=4, min_relevance=0.0, prefer="plugin/"))
    rank = {c.doc_path: c.retrieval_rank for c in placed.document_chunks}
    assert rank[SEARCH_PLUGIN] == 1 < {c.doc_path: c.retrieval_rank for c in plain.document_chunks}[SEARCH_PLUGIN]
    assert len(placed.document_chunks) == 4


def test_a_version_filter_on_a_corpus_without_versions_says_so(pipeline):
    from rag_assets.errors import InvalidFilterError

    with pytest.raises(InvalidFilterError, match="no indexed page has a version"):
        pipeline.search("rate limits", None, 3, {"version": "2.x"})


def test_package_exports():
    import rag_assets

    assert rag_assets.RAGPipeline is RAGPipeline and rag_assets.RetrieveRequest is RetrieveRequest
    assert RetrieveRequest("q").max_chunks == 5 and RetrieveRequest("q").min_relevance is None


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    """The bundled corpus (data/docs) indexed, and its eval questions."""
    import json
    from pathlib import Path

    from rag_assets_tests.support.index_builder import build_index

    repo = Path(__file__).resolve().parents[1]
    root = tmp_path_factory.mktemp("bundled")
    settings = Settings.from_env({"RAG_DOCS_DIR": str(repo / "data" / "docs"), "RAG_CHROMA_PATH": str(root / "chroma"),
                                  "RAG_STATE_DIR": str(root / "state"), "RAG_CACHE_DIR": str(root / "cache")})
    build_index(settings.docs_dir, settings)
    questions = [json.loads(line)["question"] for line in (repo / "data" / "eval" / "claude-docs.jsonl").open()
                 if line.strip()]
    return RAGPipeline.from_settings(settings), questions


def test_more_context_is_a_superset_of_less_on_every_bundled_question(bundled):
    pipeline, questions = bundled
    answered = 0
    for question in questions:
        few = pipeline.retrieve(RetrieveRequest(question, max_chunks=5))
        many = pipeline.retrieve(RetrieveRequest(question, max_chunks=20))
        assert {c.chunk_id for c in few.document_chunks} <= {c.chunk_id for c in many.document_chunks}, question
        assert few.meets_threshold == many.meets_threshold  # one gate, whatever max_chunks is
        assert len(many.document_chunks) >= len(few.document_chunks)
        answered += bool(few.document_chunks)
    assert answered >= len(questions) * 0.9  # the bundled questions are on topic


def test_retrieval_timeout_raises_its_own_error(built):
    from rag_assets.errors import RetrievalTimeoutError

    slow = RAGPipeline.from_settings(dataclasses.replace(built[1], retrieve_timeout_seconds=0.001))
    # a question not asked before: embedding it alone takes longer than 1 ms
    with pytest.raises(RetrievalTimeoutError, match="RAG_RETRIEVE_TIMEOUT_SECONDS"):
        slow.retrieve(RetrieveRequest("How do I stream responses?", mode="hybrid"))
    assert isinstance(RetrievalTimeoutError("x"), TimeoutError)


def test_dimension_mismatch_names_both_dimensions(built):
    import numpy as np

    from rag_assets.errors import ConfigurationError, DimensionMismatchError
    from rag_assets.index.chroma_store import ChromaStore

    settings = built[1]
    with pytest.raises(DimensionMismatchError, match="384-d.*1536-d") as err:
        ChromaStore(path=settings.chroma_path, collection=settings.collection, embedding_model="all-MiniLM-L6-v2",
                    dimension=1536)
    assert isinstance(err.value, ConfigurationError) and (err.value.expected, err.value.actual) == (384, 1536)
    store = RAGPipeline.from_settings(settings).retriever.store
    with pytest.raises(DimensionMismatchError, match="1536-d query vector"):
        store.query(np.ones(1536, dtype=np.float32))


def test_embed_validates_and_warns_about_over_long_texts(pipeline, caplog):
    import logging

    for bad in ([], "text", [1, 2], None):
        with pytest.raises(ValueError):
            pipeline.embed(bad)
    with caplog.at_level(logging.WARNING, logger="rag_assets.pipeline"):
        vectors = pipeline.embed(["short", "word " * 600])
    assert len(vectors) == 2 and len(vectors[0]) == 384
    assert any("exceed" in r.getMessage() and "256-token" in r.getMessage() for r in caplog.records)


def test_every_chunk_of_the_bundled_corpus_carries_source_doc_type_and_date(bundled):
    import datetime as dt

    pipeline, _ = bundled
    metas = [meta for _, _, meta in pipeline.retriever.store.iter_all()]
    assert len(metas) > 1000
    for meta in metas:
        assert meta["source"] and meta["doc_type"], meta["doc_path"]
        dt.date.fromisoformat(meta["last_update_date"])


# -- the rules-bot contract (seed rag-pipeline-contract), run as it is written ---------------------
from dataclasses import dataclass  # noqa: E402
from typing import Any, Dict  # noqa: E402
from uuid import UUID, uuid4  # noqa: E402


@dataclass
class RuleDocument:  # the contract's input type, unchanged
    document_id: UUID
    filename: str
    content: str  # Full markdown
    metadata: Dict[str, Any]


PHASES = """# Phases

## Movement Phase

During the movement phase you can move each of your operatives up to its move characteristic. What you
can do during movement: a normal move, a dash, a fall back, or a charge into an enemy.

### Normal move

A normal move lets an operative move up to its move characteristic in inches, around terrain.

### Dash

A dash lets an operative move up to three more inches during the movement phase instead of shooting.

### Fall back

An operative within engagement range of an enemy can fall back during movement, moving away from it.

## Shooting Phase

In the shooting phase an operative that has not dashed may shoot at a visible enemy within range.
"""
WEAPONS = """# Weapon rules

## Lethal

A weapon with lethal x scores a critical hit on an unmodified roll of x or more.
"""
META = {"source": "Core Rules v3.1", "doc_type": "core-rules", "last_update_date": "2025-01-15"}


def test_the_rules_bot_contract_runs_unchanged_against_the_pipeline(rag_env, dagster_home):
    import shutil

    shutil.rmtree(rag_env / "docs")  # the bot's index holds its rules only
    (rag_env / "docs").mkdir()
    pipeline = RAGPipeline.from_settings()
    phases = RuleDocument(document_id=uuid4(), filename="rules-1-phases.md", content=PHASES, metadata=dict(META))
    weapons = RuleDocument(document_id=uuid4(), filename="weapon-rules.md", content=WEAPONS, metadata=dict(META))
    result = pipeline.ingest([phases, weapons])
    assert (result.documents_processed, result.documents_failed, result.errors) == (2, 0, [])
    assert len(result.run_ids) == 1 and UUID(result.job_id)  # one Dagster run for both documents
    assert result.document_ids == [str(phases.document_id), str(weapons.document_id)]

    # its call form, by name and by position
    ctx = pipeline.retrieve(query="What can I do during movement?", context_key="test:user1")
    assert ctx.meets_threshold and len(ctx.document_chunks) >= 1
    top = ctx.document_chunks[0]
    assert top.metadata["section"] == "Movement Phase"
    assert top.document_id == str(phases.document_id)  # the caller's id, not a path
    assert top.metadata["filename"] == "rules-1-phases.md" and top.metadata["doc_type"] == "core-rules"
    assert pipeline.retrieve("What can I do during movement?", "test:user1").cached
    with pytest.raises(TypeError):
        pipeline.retrieve(RetrieveRequest("movement"), context_key="test:user1")

    def vectors(document_id):
        return [cid for cid, _text, meta in pipeline.retriever.store.iter_all()
                if meta.get("document_id") == str(document_id)]

    # Contract Test 5: Ingest Idempotency
    old = set(vectors(phases.document_id))
    assert old
    updated = RuleDocument(document_id=phases.document_id, filename="rules-1-phases.md",
                           content=PHASES.replace("# Phases", "# Phases (v3.2)", 1),  # every chunk's text changes
                           metadata=dict(META))
    again = pipeline.ingest([updated])
    new = set(vectors(phases.document_id))
    assert not old & new  # old embeddings removed
    assert new  # new embeddings created
    assert again.documents_processed == 1
    assert again.documents_failed == 0
    assert len(again.run_ids) == 1

    # the same document again: nothing to run, and the result says so (errors are lines, job_id a UUID)
    same = pipeline.ingest([weapons])
    assert (same.run_ids, same.documents_processed, same.errors) == ([], 0, [])
    assert UUID(same.job_id) and same.warnings == ["1 document(s) were already indexed with this content: nothing to do"]

    # delete_documents by the caller's UUID removes the vectors
    deleted = pipeline.delete_documents([phases.document_id])
    assert deleted["doc_paths"] == [f"_from_code/{phases.document_id}.md"] and deleted["documents_deleted"] == 1
    assert vectors(phases.document_id) == [] and vectors(weapons.document_id)
    after = RAGPipeline.from_settings().retrieve(query="What can I do during movement?", context_key="test:user2")
    assert all(c.document_id != str(phases.document_id) for c in after.document_chunks)


def test_a_query_that_meets_a_snapshot_build_says_so_and_open_snapshot_waits_for_it(tmp_path, monkeypatch):
    """A query over an index an earlier version wrote (no search snapshot) meets the one-time build from
    the store: past RAG_RETRIEVE_TIMEOUT_SECONDS its error names the build, not the machine, and the build
    goes on; open_snapshot() (what `rag query` and `rag serve` call first) waits for it, outside the timeout.
    The build is held until the test has seen both (support/held_builds.py), so no timing decides."""
    import threading

    from rag_assets.errors import RetrievalTimeoutError
    from rag_assets_tests.support.corpus import write_corpus
    from rag_assets_tests.support.held_builds import hold_first_build
    from rag_assets_tests.support.index_builder import build_index

    write_corpus(tmp_path / "docs")
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", retrieve_timeout_seconds=0)
    build_index(None, settings, snapshot=False)  # the store and its generation, no snapshot committed
    build = hold_first_build(monkeypatch)
    patient = RAGPipeline.from_settings(settings)  # no retrieval timeout: it waits for the build
    # the same reader with a timeout the held build always outlasts, whatever the machine's speed
    impatient = RAGPipeline(patient.retriever, dataclasses.replace(settings, retrieve_timeout_seconds=0.5))
    answered, opened = [], []
    first = threading.Thread(target=lambda: answered.append(patient.search("HTTP 429 retry-after", "hybrid", 3)),
                             daemon=True)
    opening = threading.Thread(target=lambda: opened.append(impatient.open_snapshot()), daemon=True)
    try:
        first.start()  # the first query finds no snapshot and builds it from the store (held)
        build.wait_started()
        with pytest.raises(RetrievalTimeoutError, match=r"being built from the store, once \(.*found by a query\)"):
            impatient.retrieve("HTTP 429 retry-after")
        opening.start()
        opening.join(timeout=1)  # twice the impatient pipeline's timeout: open_snapshot is not bound by it
        assert opening.is_alive() and not opened  # it waits for the build (its lock), held all this time
        assert first.is_alive() and not answered  # the build goes on past the timed-out query
    finally:
        build.release.set()
    for thread in (first, opening):
        thread.join(timeout=300)  # only a guard against a hang
        assert not thread.is_alive()
    assert opened == [None] and answered[0][0].doc_path == "rate-limits.md"
    deadline = time.monotonic() + 300  # the timed-out query's own thread, waiting on the lock, ends too
    while patient.retriever.snapshot.building is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert patient.retriever.snapshot.rebuilds == 1  # the others found it built when they got the lock
    assert patient.search("HTTP 429 retry-after", "hybrid", 3)[0].doc_path == "rate-limits.md"
    again = RAGPipeline.from_settings(settings)
    again.open_snapshot()
    assert again.retriever.snapshot.rebuilds == 0  # built once
