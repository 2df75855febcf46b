"""The textbook chat's service contract (`RAGService.answer_question` -> `RAGResponse`), written as its
callers write it: the service built once, `answer_question(question, chapter_context, max_sources)`, the
response's four fields, its behavioural rules and its unit-test requirements. Answers come from the
OpenAI-compatible stub on 127.0.0.1 (support/openai_server.py); the sample index is built once."""

import dataclasses
import logging

import pytest

from rag_assets import RAGPipeline, RAGResponse, RAGService, Source
from rag_assets.answer.generation import NOT_FOUND_ANSWER
from rag_assets.errors import ConfigurationError
from rag_assets_tests.support.contract_documents import contract_settings
from rag_assets_tests.support.openai_server import CHAT_PATH, Fault

ON_TOPIC = "How can I create multiple test cases?"


@pytest.fixture
def server(chat):
    """The module's chat stub (conftest's `chat`), its faults and requests of earlier tests cleared."""
    chat.reset()
    return chat


@pytest.fixture
def service(built, server):
    settings = dataclasses.replace(built[1], openai_api_key="sk-test-0", openai_base_url=server.base_url)
    return RAGService(RAGPipeline.from_settings(built[1]), settings)


def test_the_response_shape_is_built_with_its_four_fields():
    response = RAGResponse(answer="Statement [Source 1].", sources=[], processing_time_ms=12.5, tokens_used=30)
    assert (response.answer, response.sources, response.processing_time_ms, response.tokens_used) == (
        "Statement [Source 1].", [], 12.5, 30)
    assert RAGResponse("a", [], 1.0, 2).tokens_used == 2  # positionally, in its order


def test_sufficient_context_answers_with_citations_of_the_sources_in_relevance_order(service):
    response = service.answer_question(ON_TOPIC, None, 3)
    assert isinstance(response, RAGResponse) and "[Source 1]" in response.answer
    assert 1 <= len(response.sources) <= 3
    assert all(isinstance(s, Source) for s in response.sources)
    scores = [s.relevance_score for s in response.sources]
    assert scores == sorted(scores, reverse=True)  # highest first; [Source N] is sources[N-1]
    assert [s.number for s in response.sources] == list(range(1, len(response.sources) + 1))
    assert response.cited()[0] is response.sources[0]
    assert response.processing_time_ms > 0 and response.tokens_used > 0


def test_every_source_meets_the_threshold_ours_not_its_cosine_0_3(service):
    """The contract keeps chunks with a cosine `score >= 0.3`; our sources are those whose calibrated
    relevance reaches RAG_MIN_RELEVANCE (docs/api.md says why)."""
    response = service.answer_question(ON_TOPIC, max_sources=5)
    threshold = service.settings.min_relevance
    assert response.sources and all(s.relevance_score >= threshold for s in response.sources)


def test_no_context_is_an_empty_list_and_an_explicit_message_not_an_error(service, server):
    response = service.answer_question("How do I cook pasta?")
    assert response.sources == [] and response.error is None
    assert response.answer == NOT_FOUND_ANSWER  # our words for "Based on the available textbook content..."
    assert server.requests == []


def test_an_llm_error_is_a_message_in_the_answer_field(service, server):
    server.always(Fault.status(500, retry_after=0.01, path=CHAT_PATH))
    response = service.answer_question(ON_TOPIC, max_sources=3)
    assert response.answer.startswith("Sorry, I could not generate an answer") and response.error
    assert response.sources


def test_a_failed_search_returns_no_sources_and_logs_an_error(tmp_path, server, caplog):
    settings = contract_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=9, openai_api_key="sk-test-0",
                                 openai_base_url=server.base_url)
    with caplog.at_level(logging.ERROR):
        response = RAGService(settings=settings).answer_question(ON_TOPIC)
    assert response.sources == [] and response.error
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_the_generation_settings_are_the_contracts(service, server):
    assert (service.settings.chat_temperature, service.settings.chat_max_tokens) == (0.3, 1500)
    service.answer_question(ON_TOPIC, max_sources=2)
    body = server.chat_requests[0].json
    assert body["temperature"] == 0.3 and body["max_tokens"] == 1500


def test_max_sources_and_the_question_are_checked(service):
    with pytest.raises(ValueError):
        service.answer_question(ON_TOPIC, max_sources=0)
    with pytest.raises(ValueError):
        service.answer_question("")


def test_without_a_key_the_service_refuses_before_it_retrieves(built):
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        RAGService(settings=dataclasses.replace(built[1], openai_api_key=None)).answer_question(ON_TOPIC)
