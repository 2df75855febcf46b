"""What a retrieval is asked and what it returns: the request, the chunks, the context (plain
dataclasses shared by the pipeline API, the answer generator and the CLI), and the relevance gate
they all apply (``relevance_gate``; its threshold checked by ``validate_min_relevance``)."""

from __future__ import annotations

import dataclasses
import numbers
import statistics
import uuid
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Sequence

GATE_HEAD = 5  # the avg_relevance gate reads this many of the ranking's first candidates


def relevance_gate(ranking: Sequence[Any], min_relevance: float) -> tuple[float, bool]:
    """(avg_relevance, meets_threshold) of a ranking (SearchResults, best first): the mean dense cosine
    of its first GATE_HEAD results (a result without one counts 0), and whether the ranking is not
    empty and that mean reaches ``min_relevance``. The one gate of RAGPipeline.retrieve, `rag query`
    and `rag serve`'s searches."""
    head = [r.relevance or 0.0 for r in ranking[:GATE_HEAD]]
    avg = statistics.fmean(head) if head else 0.0
    return avg, bool(ranking) and avg >= min_relevance


def validate_min_relevance(value: Any, default: float | None = None) -> float | None:
    """A gate's threshold as a float (``default`` when None), else ValueError: a cosine is in [-1, 1]."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not -1.0 <= float(value) <= 1.0:
        raise ValueError(f"min_relevance is a cosine similarity between -1 and 1, got {value!r}")
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
    doc_path: str
    text: str
    metadata: dict[str, Any]  # source, doc_type, last_update_date, section, title, ... when present
    relevance_score: float  # dense cosine similarity of query and chunk
    position_in_doc: int  # chunk_index, for citation
    section: str = ""
    heading_breadcrumb: str = ""
    retrieval_rank: int = 0  # 1-based place in the mode's ranking
    retrieval_score: float = 0.0  # the mode's score (cosine, BM25 or RRF)
    # the chunk with its neighbours in its section up to RAG_CONTEXT_TOKENS ("" when that is 0): the
    # text an answer is given (rag_assets.retrieval.windows); its size in tiktoken tokens
    context: str = ""
    context_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RAGContext:
    context_id: uuid.UUID
    query_id: uuid.UUID
    query: str
    mode: str
    document_chunks: list[DocumentChunk]
    relevance_scores: list[float]
    total_chunks: int
    avg_relevance: float
    meets_threshold: bool
    min_relevance: float
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
