"""The rules bot's contract (its `RAGPipeline.retrieve` / `ingest`, shapes, errors and its six Contract
Tests), written as the bot's code calls us: `retrieve(query=..., context_key=...)`, its own `RuleDocument`
dataclass, its figures. Documents of our own, written like the contract's fixtures
(support/contract_documents.py). Where we differ on purpose the test pins our behaviour and docs/api.md
lists the difference."""

import datetime as dt
import logging
import statistics
import time
import uuid
from dataclasses import dataclass
from uuid import UUID

import pytest

from rag_assets import RAGContext, RAGPipeline, RetrieveRequest
from rag_assets.errors import InvalidQueryError, VectorDBUnavailableError, VectorDBWriteError
from rag_assets.models import IngestionResult
from rag_assets.retrieval.context import DocumentChunk
from rag_assets_tests.support.contract_documents import (DOC_TYPES, META, PHASES, WEAPONS, RuleDocument,
                                                         contract_settings, dagster_home_in, hundred_documents,
                                                         rule_documents)


@dataclass
class Index:
    pipeline: RAGPipeline
    root: object
    documents: list
    result: IngestionResult


def _ingested(tmp_path_factory, name, documents) -> Index:
    root = tmp_path_factory.mktemp(name)
    with dagster_home_in(root):
        pipeline = RAGPipeline.from_settings(contract_settings(root))
        result = pipeline.ingest(documents)
    assert (result.documents_processed, result.documents_failed, result.errors) == (len(documents), 0, [])
    return Index(pipeline, root, documents, result)


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> Index:
    """Vector DB contains "rules-1-phases.md" (Movement Phase, Shooting Phase, Barricade) and "weapon-rules.md"."""
    return _ingested(tmp_path_factory, "rules", rule_documents())


@pytest.fixture(scope="module")
def weapons_only(tmp_path_factory) -> Index:
    """Vector DB contains only "weapon-rules.md"."""
    return _ingested(tmp_path_factory, "weapons", [RuleDocument(uuid.uuid4(), "weapon-rules.md", WEAPONS, dict(META))])


# -- the contract's six tests, with its own figures ----------------------------------------------
def test_contract_test_1_retrieve_with_high_relevance(rules):
    ctx = rules.pipeline.retrieve(query="What can I do during movement?", context_key="test:user1")
    assert ctx.avg_relevance >= 0.8
    assert ctx.meets_threshold is True
    assert ctx.document_chunks[0].metadata["section"] == "Movement Phase"
    assert len(ctx.document_chunks) >= 1


def test_contract_test_2_retrieve_with_low_relevance(weapons_only):
    ctx = weapons_only.pipeline.retrieve(query="How do I cook pasta?", context_key="test:user1")
    assert ctx.meets_threshold is False
    assert ctx.document_chunks == []
    assert ctx.avg_relevance < 0.6


def test_contract_test_3_chunk_ordering(rules):
    ctx = rules.pipeline.retrieve(query="Barricade rules", context_key="test:user1")
    assert ctx.document_chunks[0].relevance_score >= ctx.document_chunks[1].relevance_score
    assert ctx.relevance_scores == [c.relevance_score for c in ctx.document_chunks]
    assert ctx.relevance_scores == sorted(ctx.relevance_scores, reverse=True)


def test_contract_test_4_metadata_completeness(rules):
    ctx = rules.pipeline.retrieve(query="What does Piercing do to the defence dice?", context_key="test:user1")
    assert ctx.document_chunks
    for chunk in ctx.document_chunks:
        assert chunk.metadata["source"]
        assert chunk.metadata["doc_type"] in DOC_TYPES
        dt.date.fromisoformat(chunk.metadata["last_update_date"])


def test_contract_test_5_ingest_idempotency(tmp_path):
    phases = RuleDocument(uuid.uuid4(), "rules-1-phases.md", PHASES, dict(META))
    with dagster_home_in(tmp_path):
        pipeline = RAGPipeline.from_settings(contract_settings(tmp_path))
        pipeline.ingest([phases])

        def vectors():
            return {cid for cid, _, meta in pipeline.retriever.store.iter_all()
                    if meta.get("document_id") == str(phases.document_id)}

        old = vectors()
        updated = RuleDocument(phases.document_id, "rules-1-phases.md",
                               PHASES.replace("# Turn phases", "# Turn phases (v3.2)"), dict(META))
        result = pipeline.ingest([updated])
    new = vectors()
    assert old and not old & new  # old embeddings removed
    assert new  # new embeddings created
    assert result.documents_processed == 1
    assert result.documents_failed == 0


def test_contract_test_6_performance_sla(tmp_path_factory):
    index = _ingested(tmp_path_factory, "hundred", hundred_documents())
    assert len({meta["doc_path"] for _, _, meta in index.pipeline.retriever.store.iter_all()}) == 100
    times = []
    for i in range(20):  # another context_key each time: no cached answer
        start = time.perf_counter()
        index.pipeline.retrieve(query="test", context_key=f"test:user{i}")
        times.append(time.perf_counter() - start)
    assert statistics.quantiles(times, n=20)[-1] <= 5.0  # p95


# -- the interface: shapes, call forms, contracts 1-5 of retrieve, errors -------------------------
def test_the_contracts_shapes_are_built_with_its_fields_alone():
    chunk = DocumentChunk(chunk_id=uuid.uuid4(), document_id=uuid.uuid4(), text="Movement text", metadata=dict(META),
                          relevance_score=0.9, position_in_doc=0)
    ctx = RAGContext(context_id=uuid.uuid4(), query_id=uuid.uuid4(), document_chunks=[chunk], relevance_scores=[0.9],
                     total_chunks=1, avg_relevance=0.9, meets_threshold=True)
    assert ctx.document_chunks[0].relevance_score == 0.9 and ctx.min_relevance is None
    positional = RAGContext(uuid.uuid4(), uuid.uuid4(), [chunk], [0.9], 1, 0.9, True)
    assert positional.meets_threshold and positional.total_chunks == 1
    request = RetrieveRequest(query="q", context_key="chan:user", max_chunks=5, min_relevance=0.6)
    assert (request.max_chunks, request.min_relevance) == (5, 0.6)


def test_a_cached_context_deserialises(rules):
    ctx = rules.pipeline.retrieve(query="What can I do during movement?", context_key="test:cache")
    again = RAGContext.from_dict(ctx.as_dict())
    assert again == ctx and isinstance(again.context_id, UUID)


def test_relevance_ordering_chunk_limits_and_threshold(rules):
    ctx = rules.pipeline.retrieve(query="What can I do during movement?", context_key="test:user1", max_chunks=1)
    assert len(ctx.document_chunks) <= 1
    wide = rules.pipeline.retrieve(RetrieveRequest("What can I do during movement?", "test:user1", max_chunks=5,
                                                   min_relevance=0.0))
    assert wide.relevance_scores == sorted(wide.relevance_scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in wide.relevance_scores) and len(wide.document_chunks) <= 5
    strict = rules.pipeline.retrieve(RetrieveRequest("What can I do during movement?", "test:user1", min_relevance=1.0))
    assert strict.document_chunks == [] and not strict.meets_threshold and strict.avg_relevance < 1.0
    some = rules.pipeline.retrieve(RetrieveRequest("What can I do during movement?", "test:user1", min_relevance=0.5))
    assert all(s >= 0.5 for s in some.relevance_scores)  # only those that qualify
    assert some.avg_relevance == pytest.approx(statistics.fmean(some.relevance_scores))


def test_every_chunk_keeps_its_raw_cosine(rules):
    ctx = rules.pipeline.retrieve(RetrieveRequest("What can I do during movement?", min_relevance=0.0))
    assert all(-1.0 <= c.cosine <= 1.0 for c in ctx.document_chunks)
    assert any(c.cosine != c.relevance_score for c in ctx.document_chunks)


def test_idempotency_same_query_and_key_is_cached_and_reingestion_invalidates(rules, tmp_path):
    first = rules.pipeline.retrieve(query="What does Lethal 5+ do?", context_key="test:idem")
    second = rules.pipeline.retrieve(query="What does Lethal 5+ do?", context_key="test:idem")
    assert not first.cached and second.cached and second.context_id == first.context_id
    assert rules.pipeline.settings.query_cache_ttl_seconds == 300  # "within 5 minutes"
    with dagster_home_in(rules.root):
        rules.pipeline.ingest([RuleDocument(uuid.uuid4(), "faq.md", "# FAQ\n\n## Blast\n\nBlast hits friends too.",
                                            {**META, "doc_type": "faq"})])
    assert not rules.pipeline.retrieve(query="What does Lethal 5+ do?", context_key="test:idem").cached


@pytest.mark.parametrize("query", ["", "   ", "x" * 2001])
def test_invalid_query_error(rules, query):
    with pytest.raises(InvalidQueryError):
        rules.pipeline.retrieve(query=query, context_key="test:user1")


def test_vector_db_unavailable_is_raised_and_logged_at_error(tmp_path, caplog):
    """A reader with no local snapshot whose Chroma server does not answer: the contract's error, not
    an empty context."""
    settings = contract_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=9)
    with caplog.at_level(logging.ERROR):
        with pytest.raises(VectorDBUnavailableError) as err:
            RAGPipeline.from_settings(settings).retrieve(query="What can I do during movement?", context_key="t:u")
    assert "\n" not in str(err.value)  # one clear line
    assert any(r.levelno == logging.ERROR and "unavailable" in r.getMessage() for r in caplog.records)


def test_no_documents_found_is_an_empty_context_not_an_error(weapons_only):
    ctx = weapons_only.pipeline.retrieve(query="Who won the 1998 football world cup?", context_key="test:user1")
    assert isinstance(ctx, RAGContext) and ctx.document_chunks == [] and ctx.meets_threshold is False


# -- ingest --------------------------------------------------------------------------------------
def test_ingestion_result_has_the_contracts_fields(rules):
    result = rules.result
    assert UUID(result.job_id)  # a UUID (its text)
    assert (result.documents_processed, result.documents_failed) == (2, 0)
    assert result.embedding_count >= 4 and result.errors == [] and result.duration_seconds > 0
    assert result.warnings == []  # full metadata: nothing filled in
    assert result.document_ids == [str(d.document_id) for d in rules.documents]


def test_missing_required_metadata_is_filled_in_with_a_warning_or_refused_when_required(tmp_path):
    """The contract rejects a document without source/doc_type/last_update_date; we index it with
    values we say we filled in (its title, its folder's type, the day), unless RAG_REQUIRED_METADATA asks
    for the contract's rejection."""
    bare = RuleDocument(uuid.uuid4(), "bare.md", "# Bare rules\n\n## Cover\n\nCover is any terrain in the way.", {})
    with dagster_home_in(tmp_path / "lenient"):
        result = RAGPipeline.from_settings(contract_settings(tmp_path / "lenient")).ingest([bare])
    assert result.documents_processed == 1 and result.documents_failed == 0
    [warning] = result.warnings
    assert warning.startswith("bare.md: no source, doc_type, last_update_date in its metadata")
    assert "source 'Bare rules' (its title)" in warning and "doc_type 'document'" in warning
    assert dt.date.today().isoformat() in warning
    strict_settings = contract_settings(tmp_path / "strict", required_metadata="source,doc_type,last_update_date")
    with dagster_home_in(tmp_path / "strict"):
        strict = RAGPipeline.from_settings(strict_settings).ingest([bare])
    assert strict.documents_failed == 1 and strict.errors[0].startswith("bare.md: missing required metadata")


def test_an_unreachable_store_raises_vector_db_write_error(tmp_path):
    settings = contract_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=9)
    with dagster_home_in(tmp_path):
        with pytest.raises(VectorDBWriteError) as err:
            RAGPipeline.from_settings(settings).ingest(rule_documents())
    assert isinstance(err.value, VectorDBUnavailableError) and "\n" not in str(err.value)
    assert not list((tmp_path / "docs").rglob("*.md"))  # nothing left behind
