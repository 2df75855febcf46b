"""The retrieval API: ``RAGPipeline.retrieve(RetrieveRequest) -> RAGContext`` and ``query(...) -> dict``.

    from rag_assets import RAGPipeline, RetrieveRequest
    pipeline = RAGPipeline.from_settings()
    ctx = pipeline.retrieve(RetrieveRequest("How do I stream responses?", context_key="chan:user"))

Contract (the rag-pipeline contract callers wrote; docs/api.md maps its names to ours):

- ``document_chunks`` holds at most ``max_chunks`` chunks: the best ``max_chunks`` of the mode's
  ranking (hybrid by default), presented sorted by ``relevance_score`` descending; ``relevance_scores``
  is in the same order. ``relevance_score`` is the chance that the chunk is relevant to the question,
  in [0, 1], calibrated on labelled questions in every mode and for every embedder
  (rag_assets.retrieval.relevance), so one threshold works for all of them; ``cosine`` keeps the raw
  dense cosine. Each chunk also keeps ``retrieval_rank``/``retrieval_score``: its place and score in
  the mode's own ranking.
- Threshold (context.relevance_gate): the candidates whose relevance reaches ``min_relevance``
  (default RAG_MIN_RELEVANCE, chosen with the calibration: docs/benchmarks.md) come back ("return only
  those that qualify"), and ``avg_relevance`` is their mean; when none does, no chunks come back,
  ``meets_threshold`` is False and ``avg_relevance`` is the best candidate's. Every ``max_chunks`` up to
  RANKING_FLOOR (20) reads the same ranking, so asking for more context returns a superset of asking
  for less, never fewer chunks.
- Filters (``RetrieveRequest.filters``, ``query(filters=...)``): the documents a query may return
  chunks from (rag_assets.retrieval.filters); ranking happens inside that set.
- Preference (``RetrieveRequest.prefer``: the reader's module, chapter or doc_path): chunks from
  there move up to PREFERENCE_PLACES (3) places ahead in the ranking; nothing is filtered, so a
  question about another chapter is still answered from it.
- Errors: empty/whitespace or too long (RAG_MAX_QUERY_CHARS) queries raise InvalidQueryError (a
  ValueError); a query reads the search snapshot the ingest commits, not the store, so the store being
  down does not fail it; VectorDBUnavailableError (logged at ERROR) only when the snapshot has to be
  built from an unreachable store (an index an earlier version wrote); a retrieval longer than
  RAG_RETRIEVE_TIMEOUT_SECONDS (10) raises RetrievalTimeoutError (the work finishes in the background);
  a snapshot made with another embedder than the configured one raises DimensionMismatchError (a
  ConfigurationError) or ConfigurationError.
- Context: each chunk handed on carries ``context``, the chunk with its neighbours in its section up
  to RAG_CONTEXT_TOKENS (rag_assets.retrieval.windows); ``query()``'s ``contexts`` are these (the
  matched chunks are in ``metadata["matched_texts"]``).
- Cache: identical (query, context_key, mode, max_chunks, min_relevance, filters) within
  RAG_QUERY_CACHE_TTL_SECONDS is served from an LRU/TTL cache (``RAGContext.cached``); any change of
  the index generation (an ingest that changed the index) drops it. Query embeddings are cached (LRU).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from rag_assets.config import Settings
import numpy as np

from rag_assets.errors import DimensionMismatchError, RetrievalTimeoutError, VectorDBUnavailableError
from rag_assets.models import IngestionResult
from rag_assets.retrieval.query_cache import GenerationCache
from rag_assets.vocabulary.modes import RetrievalMode, validate_top_k
from rag_assets.retrieval.context import (DocumentChunk, RAGContext, RetrieveRequest, relevance_gate,
                                         validate_min_relevance)
from rag_assets.retrieval.retriever import QueryPlan, Retriever, SearchResult
from rag_assets.vocabulary.site import site_path_of, url_of

log = logging.getLogger(__name__)

PIPELINE_TYPE = "rag_assets.retrieval.retriever"
# retrievals run here so a caller can stop waiting (RAG_RETRIEVE_TIMEOUT_SECONDS); a few at once; one
# pool for the process on purpose (threads are the process's, whatever pipelines it holds)
_RETRIEVAL_THREADS = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="rag-retrieve")
RANKING_FLOOR = 20  # every max_chunks up to this reads the same ranking (its first max_chunks)
PREFERENCE_PLACES = 3  # how far a chunk of the reader's chapter (RetrieveRequest.prefer) moves up
# stored chunk metadata that is bookkeeping, not something a consumer cites
_INTERNAL_KEYS = {"content_hash", "embedding_model", "token_count", "oversized", "chunk_index"}


class RAGPipeline:
    def __init__(self, retriever: Retriever, settings: Settings | None = None, corpus=None):
        """``corpus`` (rag_assets.corpus.Corpus): the corpus ingest() and delete_documents() write; by
        default the project's own corpus over these settings (their docs folder, store and state)."""
        self.retriever = retriever
        self.settings = settings or retriever.settings
        if corpus is None:
            from rag_assets.corpus import Corpus

            corpus = Corpus(base=self.settings)
        self.corpus = corpus
        self._cache = GenerationCache(self.settings.query_cache_size, self.settings.query_cache_ttl_seconds)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, corpus: str | None = None, *,
                      embedder=None) -> "RAGPipeline":
        """The pipeline over the default corpus's index (Settings.from_env), or over the named corpus's
        (rag_assets.corpus; its own collection and state) when `corpus` is given. `embedder`: one
        already loaded for the same embedder settings (several corpora then share one model)."""
        found = None
        if corpus is not None:
            from rag_assets.corpus import find_corpus
            from rag_assets.corpus_registry import known_corpora

            base = settings or Settings.from_env()  # the Python API's documented default: the environment, once
            found = find_corpus(corpus, base, known_corpora(base))
            settings = found.settings()
        settings = settings or Settings.from_env()
        return cls(Retriever.from_settings(settings, embedder=embedder), settings, found)

    @property
    def cache(self) -> GenerationCache:
        return self._cache

    # ------------------------------------------------------------------------------------------
    def search(self, query: str, mode: str | None = None, top_k: int = 5, filters=None) -> list[SearchResult]:
        """The top_k chunks for query in the mode's order, no threshold, no result cache.

        This is the ``search(question, mode, top_k)`` callable the evaluation uses.
        """
        return self._guard(self.retriever.search, query, mode, top_k, filters)  # checked there, once

    def retrieve(self, request: RetrieveRequest | str | None = None, context_key: str | None = None, *,
                 query: str | None = None, **options: Any) -> RAGContext:
        """``retrieve(RetrieveRequest(...))``, or the rules-bot contract's call
        ``retrieve(query, context_key)`` (positional or by name; RetrieveRequest's other fields by name:
        ``max_chunks``, ``min_relevance``, ``mode``, ``filters``, ``prefer``, ``fusion``)."""
        request = _request(request, context_key, query, options)
        start = time.perf_counter()
        max_chunks = validate_top_k(request.max_chunks, name="max_chunks")
        # the query's parameters checked once, here, before any work; the retrieval runs this plan
        plan = self.retriever.plan(request.query, request.mode, max(max_chunks, RANKING_FLOOR), request.filters,
                                   request.fusion)
        min_relevance = validate_min_relevance(request.min_relevance, self.settings.min_relevance)

        view = self._guard(self.retriever.view)  # read once: the cache's generation is the one the run reads
        generation = view.generation
        prefer = (request.prefer or "").strip().strip("/") or None
        fusion = plan.ranking.fusion.value if plan.mode is RetrievalMode.HYBRID else None
        key = (plan.query, request.context_key, plan.mode, max_chunks, min_relevance, plan.filters, prefer, fusion)
        hit = self._cache.get(key, generation)
        if hit is not None:
            return dataclasses.replace(
                hit, query_id=uuid.uuid4(), cached=True, elapsed_ms=(time.perf_counter() - start) * 1000
            )

        retrieval, ranked = self._guard(self._ranked, plan, view, prefer, max_chunks)
        candidates = [_to_chunk(r, rank) for rank, r in enumerate(ranked[:max_chunks], 1)]
        avg, meets = relevance_gate(candidates, min_relevance)
        chunks = [c for c in candidates if c.relevance_score >= min_relevance] if meets else []
        chunks.sort(key=lambda c: (-c.relevance_score, c.retrieval_rank))
        context = RAGContext(
            context_id=uuid.uuid4(),
            query_id=uuid.uuid4(),
            query=plan.query,
            mode=retrieval.mode,
            document_chunks=chunks,
            relevance_scores=[c.relevance_score for c in chunks],
            total_chunks=len(chunks),
            avg_relevance=avg,
            meets_threshold=meets,
            min_relevance=min_relevance,
            fallback_used=retrieval.fallback_used,
            generation=retrieval.generation,
            elapsed_ms=(time.perf_counter() - start) * 1000,
            weights=retrieval.weights,
        )
        self._cache.set(key, retrieval.generation, context)
        return context

    def query(self, query: str, method: str = "hybrid", top_k: int = 5, *, generate_answer: bool | None = None,
              **kwargs) -> dict[str, Any]:
        """The multi-pipeline API (pipeline-api-contract): contexts for query, and an answer when configured.

        ``contexts``: each retrieved chunk's context (its neighbours in its section, RAG_CONTEXT_TOKENS),
        or its text when contexts are off. ``answer`` is "" unless a chat model is configured (OPENAI_API_KEY and RAG_CHAT_MODEL or
        OPENAI_BASE_URL set): then it is rag_assets.answer.generation's answer from these contexts, with
        ``[Source N]`` citations (N-th of ``contexts``), its "not found" message when there are no
        contexts, or a graceful message (``metadata["answer_error"]``) when the chat model failed.
        kwargs: context_key, min_relevance (default RAG_MIN_RELEVANCE), filters (rag_assets.retrieval.filters).
        ``generate_answer``: True asks for an answer, False never answers, None (default) answers when
        a chat model is configured. Asking for one (True, or RAG_CHAT_MODEL set) without
        OPENAI_API_KEY raises ConfigurationError naming it, before any retrieval.
        Raises ValueError (InvalidQueryError is one) for a missing/empty/too long query, an unknown
        method or top_k outside 1..100.
        """
        start = time.perf_counter()
        from rag_assets.answer.generation import answer_from_context, chat_configured, check_chat_settings

        wants_answer = generate_answer if generate_answer is not None else (
            chat_configured(self.settings.answer) or bool(self.settings.chat_model))
        if wants_answer:
            check_chat_settings(self.settings.answer)  # ConfigurationError naming OPENAI_API_KEY
        validate_top_k(top_k)
        fusion = self.retriever.ranking_for(method).fusion  # "rrf" is hybrid fused by RRF, whatever RAG_FUSION says
        method = RetrievalMode.parse(method, self.settings.retrieval_mode)  # ValueError for an unknown method
        unknown = set(kwargs) - {"context_key", "min_relevance", "filters"}
        if unknown:
            raise ValueError(f"unexpected arguments: {', '.join(sorted(unknown))} (accepted: context_key, min_relevance, filters)")
        context = self.retrieve(
            RetrieveRequest(
                query=query,
                context_key=kwargs.get("context_key"),
                max_chunks=top_k,
                min_relevance=kwargs.get("min_relevance"),
                mode=method,
                filters=kwargs.get("filters"),
                fusion=fusion.value,
            )
        )
        sources: list[str] = []
        urls: list[str] = []  # where each source is published ("" for a page of a folder that is no site)
        for chunk in context.document_chunks:
            if chunk.doc_path not in sources:
                sources.append(chunk.doc_path)
                urls.append(url_of(chunk.metadata))
        answer, answer_meta = "", {}
        if wants_answer:
            generated = answer_from_context(context.query, context, answer=self.settings.answer)
            answer = generated.answer
            answer_meta = {
                "answer_model": generated.model,
                "tokens_used": generated.tokens_used,
                "cited_sources": generated.cited_sources,
                "invalid_citations": generated.invalid_citations,
                "answer_error": generated.error,
            }
        return {
            "answer": answer,
            "contexts": [c.context or c.text for c in context.document_chunks],
            "metadata": {
                "retrieval_method": context.mode,
                "fusion": fusion.value if method is RetrievalMode.HYBRID else None,  # hybrid: convex or rrf
                "context_count": context.total_chunks,
                "sources": sources,
                "execution_time_ms": (time.perf_counter() - start) * 1000,
                "pipeline_type": PIPELINE_TYPE,
                "fallback_used": context.fallback_used,
                # beyond the contract
                "source_urls": urls,  # the URL each of `sources` is published at, when its folder is a site
                "chunk_ids": [c.chunk_id for c in context.document_chunks],
                "matched_texts": [c.text for c in context.document_chunks],  # the chunks the contexts grew from
                "context_tokens": [c.context_tokens for c in context.document_chunks],
                "relevance_scores": context.relevance_scores,
                "avg_relevance": context.avg_relevance,
                "meets_threshold": context.meets_threshold,
                "cached": context.cached,
                **answer_meta,
            },
        }

    # -- documents from code (rag_assets.ingest.documents_from_code) -----------------------------
    def ingest(self, documents) -> IngestionResult:
        """Index documents handed over from code; they take the same road as files (a file each in
        the docs folder's `_from_code/`, then one Dagster run over them, as `rag ingest-doc` does).

        A document: our ``Document``, a mapping, a dataclass (the rules-bot contract's
        ``RuleDocument``) or a pydantic model, with ``content`` (markdown), ``metadata``
        (frontmatter) and an id: ``document_id``, ``id`` or ``doc_id`` (a string or a UUID), else its
        ``filename``, else one derived from its source and content (documents_from_code.derived_id).
        Chunks carry the id as ``document_id``, the result lists it (``document_ids``) and
        ``delete_documents`` takes it back. Re-ingesting an id with new content replaces its chunks.
        Metadata filled in (source, doc_type, last_update_date not given) is named in ``warnings``.

        ValueError, before anything is written, for an empty list, a document without content, two
        without an id and alike, an id twice, an id too long for a file name, metadata YAML cannot hold
        (naming the key). VectorDBWriteError when the vector store cannot be reached (nothing indexed). A
        document that cannot be indexed (over RAG_MAX_FILE_BYTES, missing RAG_REQUIRED_METADATA,
        failing in its run) is counted in ``documents_failed``, named in ``errors`` and leaves nothing
        behind; the others are indexed."""
        from rag_assets.indexing.code_documents import ingest_documents

        return ingest_documents(self.corpus, documents)

    def load_documents(self, documents, batch_size: int = 100) -> dict[str, Any]:
        """The pipeline-API contract's load: ingest() in batches of batch_size; a failing batch
        does not stop the next. A document with empty content is skipped with a WARNING and counted
        as failed (the contract's text); when no document has content, ValueError (its test). Each
        document must carry metadata (a mapping, ``{}`` for none: the contract's rule; ValueError).
        Beyond the contract's keys: ``document_ids`` (given or derived, in order) and ``warnings``."""
        from rag_assets.ingest.documents_from_code import validate

        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if documents is None or isinstance(documents, (str, bytes, dict)):
            raise ValueError("documents are required: a non-empty list of documents")
        documents = list(documents)
        if not documents:
            raise ValueError("documents are required: the list is empty")
        start = time.perf_counter()
        empty = [i for i, raw in enumerate(documents) if _empty_content(raw)]
        if len(empty) == len(documents):
            raise ValueError("content is required: every document is empty (non-empty markdown text)")
        errors = [f"document {i}: content is required (non-empty markdown text); skipped" for i in empty]
        for line in errors:
            log.warning("%s", line)
        skipped = set(empty)
        docs = validate([raw for i, raw in enumerate(documents) if i not in skipped], require_metadata=True)
        totals = {"documents_loaded": 0, "documents_failed": len(empty), "embeddings_generated": 0, "errors": errors,
                  "warnings": [], "document_ids": [doc.id for doc in docs]}
        for i in range(0, len(docs), batch_size):
            batch = docs[i:i + batch_size]
            try:
                result = self.ingest(batch)
            except Exception as exc:  # noqa: BLE001 - the next batch still runs
                log.error("batch %d failed: %s", i // batch_size + 1, exc)
                totals["documents_failed"] += len(batch)
                totals["errors"].append(f"batch {i // batch_size + 1}: {type(exc).__name__}: {exc}")
                continue
            totals["documents_loaded"] += len(batch) - result.documents_failed
            totals["documents_failed"] += result.documents_failed
            totals["embeddings_generated"] += result.embedding_count
            totals["errors"] += result.errors
            totals["warnings"] += result.warnings
        return {**totals, "storage_complete": totals["documents_failed"] == 0,
                "execution_time_ms": (time.perf_counter() - start) * 1000}

    def delete_documents(self, ids) -> dict[str, Any]:
        """Remove documents ingested from code, by the ids they were ingested with (strings or UUIDs):
        their files, then their chunks, in one catalog run. An explicit deletion is done however many
        documents it removes; DeletionRefusedError when other documents vanished from the folder too
        and the deletion guard keeps them (then nothing is deleted)."""
        from rag_assets.indexing.code_documents import delete_documents

        return delete_documents(self.corpus, ids)

    def embed(self, texts: list[str], **kwargs) -> list[list[float]]:
        """Vectors of the configured embedder, one per text (the pipeline-API contract's embed()).

        ValueError for an empty list or a non-string item. A text longer than the model's input
        limit is embedded from its first tokens, as the model does, and never silently: the count
        is logged as a warning (and the ingest pipeline splits such texts before they get here)."""
        if kwargs:
            raise ValueError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts:
            raise ValueError("texts are required: a non-empty list of strings")
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise ValueError(f"texts must be strings: item {bad[0]} is {type(texts[bad[0]]).__name__}")
        embedder = self.retriever.embedder
        over = [i for i, t in enumerate(texts) if not embedder.fits(t)]
        if over:
            log.warning("%d of %d text(s) exceed %s's %d-token input and are embedded from their start "
                        "(items %s)", len(over), len(texts), embedder.model_name, embedder.max_input_tokens, over[:10])
        vectors = np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
        if vectors.shape != (len(texts), embedder.dimension):
            raise DimensionMismatchError(f"{embedder.model_name} returned vectors of shape {vectors.shape}, "
                                         f"expected ({len(texts)}, {embedder.dimension})",
                                         expected=embedder.dimension, actual=int(vectors.shape[-1]))
        log.info("embedded %d text(s): %d dimensions", len(texts), embedder.dimension)
        return vectors.tolist()

    # ------------------------------------------------------------------------------------------
    def _ranked(self, plan: QueryPlan, view, prefer: str | None, max_chunks: int):
        """(the retrieval from ``view``, its ranking after the reader's preference), the first max_chunks
        results with their context (RAG_CONTEXT_TOKENS): only the ones that can be handed on are given one."""
        retrieval = self.retriever.run(plan, context_tokens=0, view=view)
        ranked = prefer_place(retrieval.results, prefer) if prefer else retrieval.results
        self.retriever.add_context(ranked[:max_chunks], generation=retrieval.generation)
        return retrieval, ranked

    def open_snapshot(self) -> None:
        """Open the live search snapshot, building it from the store first when none answers for the
        index (once: after an upgrade from a version without it, or a snapshot lost; 30 s and more at
        100,000 chunks), outside RAG_RETRIEVE_TIMEOUT_SECONDS. For a caller with nothing else to do
        meanwhile: `rag query` before its question, `rag serve` before it listens. A query that meets
        such a build instead waits for it within the timeout, and its timeout error says so. The
        embedder's relevance anchors are made ready too (embedded once, then read from RAG_CACHE_DIR)."""
        self.retriever.view()
        self.retriever.anchors()

    def _guard(self, fn, *args):
        """fn(*args) within RAG_RETRIEVE_TIMEOUT_SECONDS (0 or less: no limit)."""
        timeout = self.settings.retrieve_timeout_seconds
        try:
            if not timeout or timeout <= 0:
                return fn(*args)
            future = _RETRIEVAL_THREADS.submit(fn, *args)
            try:
                return future.result(timeout=timeout)
            except concurrent.futures.TimeoutError:
                log.error("retrieval took longer than %g s (RAG_RETRIEVE_TIMEOUT_SECONDS)", timeout)
                building = self.retriever.snapshot.building
                why = (f"the search snapshot is being built from the store, once ({building}); the build goes "
                       "on: try again when it is done" if building else "the machine may be overloaded; try again")
                raise RetrievalTimeoutError(
                    f"retrieval took longer than {timeout:g} s (RAG_RETRIEVE_TIMEOUT_SECONDS): {why}") from None
        except VectorDBUnavailableError as exc:
            log.error("vector store unavailable: %s", exc)
            raise


def in_place(result: SearchResult, place: str) -> bool:
    """The result comes from the reader's place: its module, its chapter, or under that doc_path (or
    that site_path: the page's path under its docs site's content root, rag_assets.vocabulary.site)."""
    meta = result.metadata or {}
    return (place in (str(meta.get("module", "")), str(meta.get("chapter", "")))
            or any(path == place or path.startswith(place + "/") or path.removesuffix(".md").removesuffix(".mdx") == place
                   for path in (result.doc_path, site_path_of(meta)) if path))


def prefer_place(results: list[SearchResult], place: str, places: int = PREFERENCE_PLACES) -> list[SearchResult]:
    """The ranking with results from `place` moved up to `places` places ahead (stable otherwise)."""
    keyed = [(i - (places + 0.5 if in_place(r, place) else 0), i, r) for i, r in enumerate(results)]
    return [r for _, _, r in sorted(keyed, key=lambda t: (t[0], t[1]))]


def _request(request, context_key, query, options: dict[str, Any]) -> RetrieveRequest:
    """The RetrieveRequest of either call form (TypeError for arguments neither form takes)."""
    if isinstance(request, RetrieveRequest):
        if context_key is not None or query is not None or options:
            raise TypeError("retrieve(RetrieveRequest) takes no other arguments: put them in the request")
        return request
    if request is not None and query is not None:
        raise TypeError("retrieve() got the query twice (positionally and as query=)")
    unknown = set(options) - {f.name for f in dataclasses.fields(RetrieveRequest)} - {"query", "context_key"}
    if unknown:
        raise TypeError(f"retrieve() got unexpected arguments: {', '.join(sorted(unknown))}")
    return RetrieveRequest(query=request if request is not None else query, context_key=context_key, **options)


def _empty_content(raw: Any) -> bool:
    """A document whose content is missing or blank (load_documents skips it)."""
    from rag_assets.ingest.documents_from_code import Document, fields_of

    fields = {"content": raw.content} if isinstance(raw, Document) else fields_of(raw)
    if fields is None:
        return False  # not a document at all: validate() names it
    content = next((fields.get(k) for k in ("content", "page_content", "text") if fields.get(k) is not None), None)
    return isinstance(content, str) and not content.strip() or content is None


def _to_chunk(result: SearchResult, rank: int) -> DocumentChunk:
    meta = {k: v for k, v in result.metadata.items() if k not in _INTERNAL_KEYS}
    if result.section:
        meta.setdefault("section", result.section)
    return DocumentChunk(
        chunk_id=result.chunk_id,
        document_id=str(meta.get("document_id") or result.doc_path),
        text=result.text,
        metadata=meta,
        relevance_score=float(result.relevance if result.relevance is not None else 0.0),
        position_in_doc=result.chunk_index,
        doc_path=result.doc_path,
        cosine=result.cosine,
        section=result.section,
        heading_breadcrumb=result.heading_breadcrumb,
        retrieval_rank=rank,
        retrieval_score=float(result.score),
        context=result.context,
        context_tokens=result.context_tokens,
    )
