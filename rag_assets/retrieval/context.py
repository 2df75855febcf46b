"""What a retrieval is asked and what it returns: the request, the chunks, the context (plain
dataclasses shared by the pipeline API, the answer generator and the CLI), and the relevance gate
they all apply (``relevance_gate``; its threshold checked by ``validate_min_relevance``).

The shapes take the rules-bot contract's fields in its order, by position or by name
(``DocumentChunk(chunk_id, document_id, text, metadata, relevance_score, position_in_doc)``,
``RAGContext(context_id, query_id, document_chunks, relevance_scores, total_chunks, avg_relevance,
meets_threshold)``); ours follow with defaults. ``from_dict`` reads what ``as_dict`` wrote (a cache)."""

from __future__ import annotations

import dataclasses
import numbers
import statistics
import uuid
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Sequence


def relevance_gate(results: Sequence[Any], min_relevance: float) -> tuple[float, bool]:
    """(avg_relevance, meets_threshold) of the results a caller is handed (SearchResults or
    DocumentChunks, best first), from the best of them, not an average padded with unrelated ones:
    they meet the threshold when the best relevance (the chance it is relevant: relevance.py) reaches
    ``min_relevance``; avg_relevance is the mean relevance of those that reach it (the chunks handed
    on), else the best's. The one gate of RAGPipeline.retrieve, `rag query` and `rag serve`'s searches."""
    scores = [_relevance_of(r) for r in results]
    if not scores:
        return 0.0, False
    passing = [s for s in scores if s >= min_relevance]
    if not passing:
        return max(scores), False
    return statistics.fmean(passing), True


def _relevance_of(result: Any) -> float:
    value = getattr(result, "relevance_score", None)
    if value is None:
        value = getattr(result, "relevance", None)
    return float(value) if value is not None else 0.0


def validate_min_relevance(value: Any, default: float | None = None) -> float | None:
    """A gate's threshold as a float (``default`` when None), else ValueError: a relevance is a
    probability, in [0, 1]."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"min_relevance is a relevance between 0 and 1 (the chance a chunk is relevant), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RetrieveRequest:
    query: str
    context_key: str | None = None  # e.g. "{channel_id}:{user_id}"; part of the cache key
    max_chunks: int = 5
    min_relevance: float | None = None  # None = RAG_MIN_RELEVANCE
    mode: str | None = None  # vector | keyword | hybrid; None = RAG_RETRIEVAL_MODE
    # document filters, e.g. {"module": "module-2", "tags": ["ros"]} (rag_assets.retrieval.filters)
    filters: Mapping[str, Any] | None = None
    # the reader's place: a module, chapter or doc_path (prefix) whose chunks are preferred, softly:
    # they move up to PREFERENCE_PLACES places ahead; nothing is filtered out
    prefer: str | None = None
    fusion: str | None = None  # hybrid's fusion: convex | rrf; None = RAG_FUSION (mode "rrf" = hybrid + rrf)


@dataclass(frozen=True)
class DocumentChunk:
    chunk_id: str
    # the document's id: the one it was ingested with from code (RAGPipeline.ingest; a UUID as its text)
    # or a frontmatter `document_id`, else its path relative to the docs folder
    document_id: str
    text: str
    metadata: dict[str, Any]  # source, doc_type, last_update_date, section, title, ... when present
    relevance_score: float  # the chance that the chunk is relevant to the question, in [0, 1] (relevance.py)
    position_in_doc: int  # chunk_index, for citation
    doc_path: str = ""  # relative to the docs folder ("" given none: metadata["doc_path"], else document_id)
    cosine: float | None = None  # the dense cosine of question and chunk, raw
    section: str = ""
    heading_breadcrumb: str = ""
    retrieval_rank: int = 0  # 1-based place in the mode's ranking
    retrieval_score: float = 0.0  # the mode's score (cosine, BM25 or RRF)
    # the chunk with its neighbours in its section up to RAG_CONTEXT_TOKENS ("" when that is 0): the
    # text an answer is given (rag_assets.retrieval.windows); its size in tiktoken tokens
    context: str = ""
    context_tokens: int = 0

    def __post_init__(self):
        if not self.doc_path:  # a chunk a caller built with the contract's fields only
            meta = self.metadata if isinstance(self.metadata, Mapping) else {}
            object.__setattr__(self, "doc_path", str(meta.get("doc_path") or self.document_id or ""))

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DocumentChunk":
        """The chunk ``as_dict`` gave (keys it does not know are refused: TypeError)."""
        return cls(**dict(data))


@dataclass(frozen=True)
class RAGContext:
    context_id: uuid.UUID
    query_id: uuid.UUID
    document_chunks: list[DocumentChunk]  # best first by relevance_score
    relevance_scores: list[float]
    total_chunks: int
    avg_relevance: float  # the mean relevance of the chunks handed on; with none, the best one's (relevance_gate)
    meets_threshold: bool
    query: str = ""
    mode: str = ""
    min_relevance: float | None = None  # the threshold applied
    cached: bool = False
    fallback_used: bool = False
    generation: str = ""
    elapsed_ms: float = 0.0
    weights: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["context_id"] = str(self.context_id)
        data["query_id"] = str(self.query_id)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RAGContext":
        """The context ``as_dict`` gave (a cache, a message queue): ids back to UUIDs, chunks to
        DocumentChunks."""
        data = dict(data)
        for key in ("context_id", "query_id"):
            if isinstance(data.get(key), str):
                data[key] = uuid.UUID(data[key])
        data["document_chunks"] = [c if isinstance(c, DocumentChunk) else DocumentChunk.from_dict(c)
                                   for c in data.get("document_chunks", [])]
        if isinstance(data.get("weights"), list):
            data["weights"] = tuple(data["weights"])
        return cls(**data)
