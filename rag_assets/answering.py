"""answer_question: retrieve with a RAGPipeline (hybrid, thresholded), then answer from the sources
with [Source N] citations (the generation itself: rag_assets.answer.generation). It stands beside
rag_assets.pipeline, above it: the answer package below knows nothing of the pipeline."""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from typing import TYPE_CHECKING

from rag_assets.answer.generation import (MAX_SOURCES, SEARCH_FAILED_ANSWER, Answer, ChatLLM, answer_from_context,
                                         check_chat_settings)
from rag_assets.config import Settings
from rag_assets.errors import EmbeddingError, InvalidQueryError, RagError
from rag_assets.retrieval.context import DocumentChunk, RAGContext, RetrieveRequest
from rag_assets.vocabulary.modes import RetrievalMode, validate_count

if TYPE_CHECKING:
    from rag_assets.pipeline import RAGPipeline

log = logging.getLogger(__name__)


def answer_question(
    question: str,
    chapter_context: str | None = None,
    max_sources: int = 5,
    *,
    pipeline: "RAGPipeline | None" = None,
    settings: Settings | None = None,
    context_key: str | None = None,
    min_relevance: float | None = None,
    mode: str = RetrievalMode.HYBRID.value,
    llm: ChatLLM | None = None,
    filters=None,
    selected_text: str | None = None,
) -> Answer:
    """Retrieve up to max_sources chunks and answer from them with [Source N] citations.

    The textbook-service order: ``answer_question(question, chapter_context, max_sources)``.
    ``chapter_context`` (the module, chapter or doc_path the reader is in) prefers chunks from there
    softly (RetrieveRequest.prefer): a question about another chapter is still answered. (An int in
    its place is the earlier ``answer_question(question, max_sources)`` form and is read as such.)
    ``selected_text`` (a passage the reader selected) is Source 1; retrieval, asked with the
    selection and the question, adds up to max_sources - 1 sources of context around it.

    settings (default: the pipeline's, else Settings.from_env()) configure the chat model; the
    pipeline (default: RAGPipeline.from_settings(settings)) does the retrieval. Raises
    ConfigurationError without OPENAI_API_KEY, InvalidQueryError (a ValueError) for an empty or too
    long question, ValueError for max_sources outside 1..100, and EmbeddingError (the seed's
    EmbeddingFailureError) when the question cannot be embedded after the embedder's retries, as the
    textbook contract wants. A failed search (a retrieval timeout, a snapshot that had to be built from
    an unreachable store) does not raise: the answer has no sources, says the search failed (never "I
    could not find this") and ``Answer.error`` says why in one line; an ERROR line is logged. With
    ``selected_text`` the selection is still answered from. A failing chat model does not raise either:
    see ``Answer.error``. ``filters``
    restrict the sources to some documents (rag_assets.retrieval.filters; InvalidFilterError).
    """
    start = time.perf_counter()
    if isinstance(chapter_context, int) and not isinstance(chapter_context, bool):
        chapter_context, max_sources = None, chapter_context  # the earlier (question, max_sources) form
    if chapter_context is not None and not isinstance(chapter_context, str):
        raise ValueError(f"chapter_context is a module, chapter or doc_path string, got {chapter_context!r}")
    if selected_text is not None and (not isinstance(selected_text, str) or not selected_text.strip()):
        raise ValueError("selected_text, when given, is the non-empty passage the reader selected")
    settings = settings or (pipeline.settings if pipeline is not None else Settings.from_env())
    if llm is None:
        check_chat_settings(settings.answer)  # fail fast, before the (slow) retrieval stack loads
    max_sources = validate_count(max_sources, "max_sources", MAX_SOURCES)
    from rag_assets.pipeline import RAGPipeline  # the retrieval stack loads only once the call is valid
    if pipeline is None:
        pipeline = RAGPipeline.from_settings(settings)
    if isinstance(question, str):
        log.info("question received: %r", question.strip()[:50])
    query = f"{selected_text.strip()}\n\n{question}" if selected_text and isinstance(question, str) else question
    request = RetrieveRequest(query=query, context_key=context_key, max_chunks=max_sources,
                              min_relevance=min_relevance, mode=mode, filters=filters, prefer=chapter_context)
    try:
        context = pipeline.retrieve(request)
    except (InvalidQueryError, ValueError):
        raise  # the caller's mistake, not a failed search
    except EmbeddingError as exc:  # the textbook contract: an embedding failure raises (after the retries)
        log.error("embedding the question failed: %s", exc)
        raise
    except Exception as exc:  # noqa: BLE001 - the textbook service: a failed search is no sources + ERROR
        failed = search_error(exc)
        log.error("search failed, answering without sources: %s", failed)
        if not selected_text:
            # not "I could not find this": nothing was searched. Answer.error says what failed
            return Answer(question=question.strip(), answer=SEARCH_FAILED_ANSWER.format(reason=failed), sources=[],
                          processing_time_ms=(time.perf_counter() - start) * 1000, tokens_used=0, model="",
                          error=f"search failed: {failed}")
        context = empty_context(question if isinstance(question, str) else "", mode, pipeline.settings)
    else:
        failed = None
    if selected_text:
        context = with_selection(context, selected_text.strip(), max_sources)
    answer = answer_from_context(question.strip(), context, answer=settings.answer, llm=llm, start=start)
    if failed is not None and answer.error is None:
        answer.error = f"search failed: {failed}; answered from the selected text alone"
    return answer


def search_error(exc: BaseException) -> str:
    """A failed search in one line: our errors say what to do as they are; others get their type."""
    text = " ".join(str(exc).split())
    message = text if isinstance(exc, RagError) and text else f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return message[:300]


class RAGService:
    """The textbook service's interface (seed rag-service-interface): one long-lived object that keeps
    its pipeline (the store and the model, loaded once) and answers
    ``answer_question(question, chapter_context=None, max_sources=5) -> RAGResponse`` (our Answer).

        service = RAGService()                      # RAG_* and OPENAI_* from the environment
        response = service.answer_question("How do I stream responses?", "guides/streaming", 5)
        response.answer, response.sources, response.processing_time_ms, response.tokens_used

    ``pipeline``: a RAGPipeline to answer from (default: one for ``settings``, made at the first
    question); ``settings``: the chat model's (default: the pipeline's, else Settings.from_env());
    ``llm``: a ChatLLM to use instead of the configured one. Everything else is answer_question's."""

    def __init__(self, pipeline: "RAGPipeline | None" = None, settings: Settings | None = None,
                 llm: ChatLLM | None = None):
        self.pipeline = pipeline
        self.settings = settings or (pipeline.settings if pipeline is not None else Settings.from_env())
        self.llm = llm

    def answer_question(self, question: str, chapter_context: str | None = None, max_sources: int = 5,
                        **options) -> Answer:
        if self.pipeline is None:
            if self.llm is None:
                check_chat_settings(self.settings.answer)  # before the retrieval stack loads
            from rag_assets.pipeline import RAGPipeline

            self.pipeline = RAGPipeline.from_settings(self.settings)
        return answer_question(question, chapter_context, max_sources, pipeline=self.pipeline, settings=self.settings,
                               llm=self.llm, **options)


SELECTION_PATH = "(selected text)"


def empty_context(query: str, mode: str, settings: Settings) -> RAGContext:
    return RAGContext(context_id=uuid.uuid4(), query_id=uuid.uuid4(), query=query, mode=str(mode), document_chunks=[],
                      relevance_scores=[], total_chunks=0, avg_relevance=0.0, meets_threshold=False,
                      min_relevance=settings.min_relevance)


def with_selection(context, selected_text: str, max_sources: int):
    """The context with the reader's selection as its first source (relevance 1: it is what the
    question is about), then the retrieved chunks (the chunk the selection came from is context
    around it and stays; a chunk that is exactly the selection does not repeat it)."""
    selection = DocumentChunk(chunk_id="selected-text", document_id=SELECTION_PATH, doc_path=SELECTION_PATH,
                              text=selected_text, metadata={"section": "selected by the reader"},
                              relevance_score=1.0, position_in_doc=0, section="selected by the reader")
    same = " ".join(selected_text.split())
    around = [c for c in context.document_chunks if " ".join(c.text.split()) != same]
    chunks = [selection, *around][:max_sources]
    return dataclasses.replace(context, document_chunks=chunks, relevance_scores=[c.relevance_score for c in chunks],
                               total_chunks=len(chunks), meets_threshold=True)


