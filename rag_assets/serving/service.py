"""IndexService: what `rag serve` and `rag mcp` answer, over the public API (RAGPipeline,
answer_question): one warm RAGPipeline per corpus (corpora with the same embedder settings share
one model), search (one corpus or one ranking over several), cited answers, the corpora, and the
pages of each index. Plain Python: the HTTP app and the MCP tools are thin shells over it.

Every search reads one index generation (the pipeline pins it), so an ingest running beside the
server never mixes two versions of a document in one answer; identical searches within
RAG_QUERY_CACHE_TTL_SECONDS are served from a cache dropped whole when a generation moves. A corpus's
generation is checked (a read of the state database and of the snapshot's CURRENT) at most once in
RECHECK_SECONDS, not on every request: an ingest's commit is searchable here at most that much later."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from rag_assets.answer.generation import ChatLLM
from rag_assets.answering import answer_question
from rag_assets.config import Settings
from rag_assets.corpus import DEFAULT_CORPUS, Corpus
from rag_assets.embedding import embedder_key
from rag_assets.index.generation import EMPTY, current_generation
from rag_assets.pipeline import RANKING_FLOOR, RAGPipeline, prefer_place
from rag_assets.retrieval.across import merge_rankings
from rag_assets.retrieval.context import relevance_gate
from rag_assets.retrieval.filters import Filters
from rag_assets.retrieval.query_cache import GenerationCache
from rag_assets.retrieval.result_fields import anchor, result_fields
from rag_assets.retrieval.retriever import Retriever, SearchResult
from rag_assets.serving.pages import PageCatalog
from rag_assets.serving.requests import AnswerRequest, SearchRequest, UnknownCorpus
from rag_assets.vocabulary.modes import RetrievalMode

log = logging.getLogger(__name__)

# how long a served corpus answers from the snapshot view it last confirmed live before checking again
# (retrieval.snapshot.SearchSnapshot.recheck_seconds): the state database and CURRENT were read ~3 times
# a request before (0.2 ms each on a quiet machine, 1-2 ms under load); an ingest's commit now reaches
# the server's searches within this bound, against the seconds an ingest takes to commit
RECHECK_SECONDS = 0.25

@dataclass
class _Served:
    corpus: Corpus
    settings: Settings
    pipeline: RAGPipeline | None = None
    catalog: PageCatalog | None = None


class IndexService:
    def __init__(self, corpora: list[tuple[Corpus, Settings]], *, llm: ChatLLM | None = None,
                 cache_size: int | None = None, recheck_seconds: float = RECHECK_SECONDS):
        """corpora: (corpus, its settings) each, resolved once by the caller; the first one answers a
        request that names none. llm: a ChatLLM for answers (default: each corpus's chat settings).
        recheck_seconds: how long a corpus's snapshot view is answered from before its generation is
        read again (0: on every search)."""
        if not corpora:
            raise ValueError("a server needs at least one corpus")
        self._served = {corpus.name: _Served(corpus, settings) for corpus, settings in corpora}
        self.default_corpus = corpora[0][0].name
        self.llm = llm
        first = corpora[0][1]
        self._cache = GenerationCache(cache_size or first.query_cache_size, first.query_cache_ttl_seconds)
        self._lock = threading.Lock()
        self._embedders: dict[tuple, Any] = {}
        self.recheck_seconds = recheck_seconds
        self.started = time.time()

    @classmethod
    def for_corpora(cls, base: Settings, names: list[str] | None = None, *, llm: ChatLLM | None = None) -> "IndexService":
        """The default corpus and every known one (components and registered folders), or `names`."""
        from rag_assets.corpus import find_corpus
        from rag_assets.corpus_registry import known_corpora

        known = known_corpora(base)
        chosen = [find_corpus(n, base, known) for n in dict.fromkeys(names)] if names else [Corpus(base=base), *known]
        return cls([(c, c.settings()) for c in chosen], llm=llm)

    # -- corpora and pipelines -------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self._served)

    def _entry(self, name: str | None) -> _Served:
        name = name or self.default_corpus
        served = self._served.get(name)
        if served is None:
            raise UnknownCorpus(f"no corpus named {name!r} is served here (served: {', '.join(self._served)})")
        return served

    def settings(self, name: str | None = None) -> Settings:
        return self._entry(name).settings

    def pipeline(self, name: str | None = None) -> RAGPipeline:
        served = self._entry(name)
        if served.pipeline is None:
            with self._lock:
                if served.pipeline is None:
                    key = embedder_key(served.settings)
                    retriever = Retriever.from_settings(served.settings, embedder=self._embedders.get(key),
                                                        recheck_seconds=self.recheck_seconds)
                    pipeline = RAGPipeline(retriever, served.settings)
                    self._embedders.setdefault(key, retriever.embedder)
                    served.pipeline = pipeline
        return served.pipeline

    def warm(self) -> None:
        """Open every corpus's pipeline and run one search on it (model, snapshot and store loaded)
        before the first client waits; a corpus that fails here is logged and tried again on use."""
        for name in self._served:
            if current_generation(self._served[name].settings) == EMPTY:
                log.warning("corpus %s: nothing indexed yet (run `rag ingest`); its searches return no results", name)
                continue
            try:
                pipeline = self.pipeline(name)
                pipeline.open_snapshot()  # a build from the store, if due, before clients wait (no timeout)
                pipeline.search("warm up", None, 1)
            except Exception as exc:  # noqa: BLE001 - an empty or broken index must not stop the others
                log.warning("corpus %s: warm-up search failed: %s: %s", name, type(exc).__name__, exc)

    def generation(self, name: str | None = None) -> str:
        return self._generation(self._entry(name))

    @staticmethod
    def _generation(served: _Served) -> str:
        """The generation a search of the corpus answers from now: its pipeline's snapshot view (confirmed
        within RECHECK_SECONDS), or the state database's while no pipeline is open (nothing indexed yet)."""
        if served.pipeline is not None:
            return served.pipeline.retriever.current_generation()
        return current_generation(served.settings)

    # -- search -----------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> dict[str, Any]:
        start = time.perf_counter()
        names = request.corpora or (self.default_corpus,)
        entries = [self._entry(n) for n in names]
        filters = Filters.parse(request.filters)  # InvalidFilterError (a 400) before any work
        generation = tuple(self._generation(e) for e in entries)
        key = (names, request.query, request.mode, request.top_k, filters, request.prefer, request.min_relevance)
        hit = self._cache.get(key, generation)
        if hit is not None:
            return {**hit, "cached": True, "elapsed_ms": round((time.perf_counter() - start) * 1000, 3)}
        rankings = {e.corpus.name: self._ranking(e.corpus.name, request, g, filters) for e, g in zip(entries, generation)}
        mode = RetrievalMode.parse(request.mode, entries[0].settings.retrieval_mode)
        threshold = request.min_relevance if request.min_relevance is not None else entries[0].settings.min_relevance
        body: dict[str, Any] = {"query": request.query, "mode": mode.value, "filters": request.filters,
                                "corpora": list(names), "min_relevance": threshold}
        if len(names) == 1:
            results = rankings[names[0]]
            avg, meets = relevance_gate(results, threshold)
            body.update(avg_relevance=round(avg, 6), meets_threshold=meets,
                        results=[result_fields(r, rank, names[0]) for rank, r in enumerate(results, 1)])
        else:
            models = {e.settings.model_name for e in entries}
            merged = merge_rankings(rankings, request.top_k, same_model=len(models) == 1)
            confidence = {hit.corpus: round(hit.confidence, 6) for hit in merged}
            body.update(confidence=confidence, results=[
                {**result_fields(hit.result, rank, hit.corpus), "score": round(hit.score, 6),
                 "corpus_score": round(float(hit.result.score), 6)} for rank, hit in enumerate(merged, 1)])
        body["generation"] = generation[0] if len(generation) == 1 else list(generation)
        self._cache.set(key, generation, body)
        return {**body, "cached": False, "elapsed_ms": round((time.perf_counter() - start) * 1000, 3)}

    def _ranking(self, name: str, request: SearchRequest, generation: str, filters) -> list[SearchResult]:
        """filters: the request's, parsed once in search()."""
        if generation == EMPTY:
            return []  # nothing indexed yet: no results (`rag query` says "run rag ingest"), not an error
        pipeline = self.pipeline(name)
        if not request.prefer:
            return pipeline.search(request.query, request.mode, request.top_k, filters)
        # the reader's place moves its chunks up a few places (RetrieveRequest.prefer): rank deep enough
        place = request.prefer.strip().strip("/")
        ranked = pipeline.search(request.query, request.mode, max(request.top_k, RANKING_FLOOR), filters)
        return prefer_place(ranked, place)[: request.top_k] if place else ranked[: request.top_k]

    # -- answers ----------------------------------------------------------------------------------
    def answer(self, request: AnswerRequest) -> dict[str, Any]:
        served = self._entry(request.corpus)
        pipeline = self.pipeline(served.corpus.name)
        result = answer_question(request.question, request.chapter_context, request.max_sources, pipeline=pipeline,
                                 settings=served.settings, context_key=request.context_key,
                                 min_relevance=request.min_relevance,
                                 mode=request.mode or RetrievalMode.HYBRID.value, llm=self.llm,
                                 filters=request.filters, selected_text=request.selected_text)
        data = result.as_dict()
        for source in data["sources"]:
            source["anchor"] = anchor(source.get("section") or "")
            source["corpus"] = served.corpus.name
        data["corpus"] = served.corpus.name
        return data

    # -- corpora and pages ------------------------------------------------------------------------
    def corpora(self) -> list[dict[str, Any]]:
        rows = []
        for name, served in self._served.items():
            generation = self._generation(served)
            rows.append({"name": name, "default": name == self.default_corpus,
                         "docs_dir": str(served.settings.docs_dir), "collection": served.settings.collection,
                         "generation": generation,
                         # counted from the search snapshot whether or not a search has opened the corpus yet
                         "pages": len(self.catalog(name).pages()) if generation != EMPTY else 0,
                         "model": served.settings.model_name})
        return rows

    def catalog(self, name: str | None = None) -> PageCatalog:
        served = self._entry(name)
        if served.catalog is None:
            pipeline = self.pipeline(served.corpus.name)

            def chunks():
                # the live search snapshot: what every search of this generation reads (not the store)
                view = pipeline.retriever.snapshot.view()
                return ((view.chunk_id(row), view.text(row), view.metadata(row)) for row in range(len(view)))

            served.catalog = PageCatalog(lambda: self._generation(served), chunks)
        return served.catalog

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "corpora": self.names, "default_corpus": self.default_corpus,
                "uptime_s": round(time.time() - self.started, 1)}
