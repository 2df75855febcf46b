"""What a retrieval is asked and what it returns: the request, the chunks, the context (plain
dataclasses shared by the pipeline API, the answer generator and the CLI)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any


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
