"""The rules bot's service notes (its retriever's configuration and flows), as settings and calls of
ours: where a figure differs from the notes on purpose, the test pins ours and docs/api.md lists it."""

import dataclasses

from rag_assets import RAGPipeline, RetrieveRequest
from rag_assets.config import Settings


def test_the_cache_is_the_contracts_five_minutes_and_the_notes_figures_are_settings():
    """The rules-bot contract caches for 5 minutes (300 s); its notes say 1 hour and 1000 entries.
    Ours: 300 s and 256 entries by default, the notes' figures one setting away each."""
    settings = Settings.from_env({})
    assert (settings.query_cache_ttl_seconds, settings.query_cache_size) == (300.0, 256)
    notes = Settings.from_env({"RAG_QUERY_CACHE_TTL_SECONDS": "3600", "RAG_QUERY_CACHE_SIZE": "1000"})
    assert (notes.query_cache_ttl_seconds, notes.query_cache_size) == (3600.0, 1000)


def test_rrf_with_the_notes_k_is_one_argument_away(built):
    """The notes fuse by RRF with k = 60; ours fuses by convex combination unless asked (`mode="rrf"`)."""
    pipeline = RAGPipeline.from_settings(built[1])
    assert pipeline.settings.fusion == "convex" and pipeline.settings.rrf_k == 60
    ctx = pipeline.retrieve(RetrieveRequest("How can I create multiple test cases?", mode="rrf", max_chunks=3))
    assert ctx.mode == "hybrid" and ctx.document_chunks[0].doc_path == "guide/evaluation.md"


def test_max_chunks_is_per_call_and_min_relevance_a_calibrated_probability(built):
    """The notes' RAG_MAX_CHUNKS (15) and RAG_MIN_RELEVANCE (0.45, a cosine): ours are `max_chunks` per call
    (5 by default, as the contract's RetrieveRequest) and RAG_MIN_RELEVANCE, a threshold on the calibrated
    relevance (the chance a chunk is relevant) whose default is chosen with the calibration."""
    from rag_assets.retrieval.relevance import shipped

    assert RetrieveRequest("q").max_chunks == 5
    assert Settings.from_env({}).min_relevance == shipped().default_threshold
    pipeline = RAGPipeline.from_settings(dataclasses.replace(built[1], min_relevance=0.45))
    ctx = pipeline.retrieve(RetrieveRequest("How can I create multiple test cases?", max_chunks=15))
    assert ctx.min_relevance == 0.45 and all(s >= 0.45 for s in ctx.relevance_scores)


def test_a_query_with_too_few_words_or_too_many_characters_is_refused(built):
    """The notes' validator: query length limits and sanitisation."""
    import pytest

    from rag_assets.errors import InvalidQueryError

    pipeline = RAGPipeline.from_settings(built[1])
    for bad in ("", "???", "x" * 2001, "\u200b"):
        with pytest.raises(InvalidQueryError):
            pipeline.retrieve(RetrieveRequest(bad))
