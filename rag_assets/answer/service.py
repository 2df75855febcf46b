"""answer_question: retrieve (hybrid, thresholded), then answer from the sources with [Source N]
citations (the generation itself: rag_assets.answer.generation)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rag_assets.answer.generation import MAX_SOURCES, Answer, ChatLLM, answer_from_context, check_chat_settings
from rag_assets.config import Settings
from rag_assets.retrieval.context import RetrieveRequest
from rag_assets.retrieval.modes import RetrievalMode

if TYPE_CHECKING:
    from rag_assets.pipeline import RAGPipeline

log = logging.getLogger(__name__)


def answer_question(
    question: str,
    max_sources: int = 5,
    *,
    pipeline: "RAGPipeline | None" = None,
    settings: Settings | None = None,
    context_key: str | None = None,
    min_relevance: float | None = None,
    mode: str = RetrievalMode.HYBRID.value,
    llm: ChatLLM | None = None,
    filters=None,
) -> Answer:
    """Retrieve up to max_sources chunks and answer from them with [Source N] citations.

    settings (default: the pipeline's, else Settings.from_env()) configure the chat model; the
    pipeline (default: RAGPipeline.from_settings(settings)) does the retrieval. Raises
    ConfigurationError without OPENAI_API_KEY, InvalidQueryError (a ValueError) for an empty or too
    long question, ValueError for max_sources outside 1..100, VectorDBUnavailableError when Chroma
    cannot be reached. A failing chat model does not raise: see ``Answer.error``. ``filters``
    restrict the sources to some documents (rag_assets.retrieval.filters; InvalidFilterError).
    """
    start = time.perf_counter()
    settings = settings or (pipeline.settings if pipeline is not None else Settings.from_env())
    if llm is None:
        check_chat_settings(settings)  # fail fast, before the (slow) retrieval stack loads
    if isinstance(max_sources, bool) or not isinstance(max_sources, int) or not 1 <= max_sources <= MAX_SOURCES:
        raise ValueError(f"max_sources must be an integer between 1 and {MAX_SOURCES}, got {max_sources!r}")
    from rag_assets.pipeline import RAGPipeline  # the retrieval stack loads only once the call is valid
    if pipeline is None:
        pipeline = RAGPipeline.from_settings(settings)
    if isinstance(question, str):
        log.info("question received: %r", question.strip()[:50])
    context = pipeline.retrieve(
        RetrieveRequest(query=question, context_key=context_key, max_chunks=max_sources,
                        min_relevance=min_relevance, mode=mode, filters=filters)
    )
    return answer_from_context(context.query, context, settings=settings, llm=llm, start=start)


