"""One search result as every mode returns it (SearchResult): the chunk, its scores (the mode's,
the dense cosine, the calibrated relevance), its context window, and its metadata as results hand it
on (the list fields as lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag_assets.retrieval.filters import split_tags


@dataclass
class SearchResult:
    chunk_id: str
    doc_path: str
    section: str
    heading_breadcrumb: str
    text: str
    score: float  # the mode's ranking score: cosine (vector), BM25 (keyword), RRF (hybrid)
    chunk_index: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    # the chance that the chunk is relevant to the question, in [0, 1] (relevance.py); set in every mode
    relevance: float | None = None
    cosine: float | None = None  # dense cosine of query and chunk, set in every mode
    # the chunk with its neighbours in its section, up to RAG_CONTEXT_TOKENS ("" when that is 0):
    # the text an answer is given (windows.py); context_tokens = its size in tiktoken tokens
    context: str = ""
    context_tokens: int = 0
    # other chunks of this result's section that the ranking found, best first (collapsed into it by
    # diversity): the context reaches for them too (windows.passages)
    section_hits: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def from_chunk(cls, chunk_id: str, text: str, metadata: dict[str, Any], score: float,
                   cosine: float | None = None) -> "SearchResult":
        meta = metadata or {}
        return cls(
            chunk_id=chunk_id,
            doc_path=str(meta.get("doc_path", "")),
            section=str(meta.get("section", "")),
            heading_breadcrumb=str(meta.get("heading_breadcrumb", "")),
            text=text,
            score=score,
            chunk_index=int(meta.get("chunk_index", 0)),
            metadata=_presented(meta),
            cosine=cosine,
        )

    def as_dict(self) -> dict[str, Any]:
        data = {
            "chunk_id": self.chunk_id,
            "doc_path": self.doc_path,
            "section": self.section,
            "heading_breadcrumb": self.heading_breadcrumb,
            "text": self.text,
            "score": round(float(self.score), 6),
        }
        if self.relevance is not None:
            data["relevance"] = round(float(self.relevance), 6)
        if self.cosine is not None:
            data["cosine"] = round(float(self.cosine), 6)
        if self.context:
            data["context"] = self.context
            data["context_tokens"] = self.context_tokens
        return data


LIST_KEYS = ("tags", "learning_objectives")  # the ingestion contract's list fields


def _presented(meta: dict[str, Any]) -> dict[str, Any]:
    """Stored metadata as results hand it on: the list fields (`tags`, `learning_objectives`), stored
    as one "a, b" string (Chroma metadata holds no lists), as the lists they were in the frontmatter."""
    out = dict(meta)
    for key in LIST_KEYS:
        if key in out:
            out[key] = split_tags(out[key])
    return out
