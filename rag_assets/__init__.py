"""rag_assets: markdown folders in, an evaluated, always-current retrieval index out.

The package namespace is lazy (PEP 562): `import rag_assets.ingest.markdown` does not import Dagster,
while `dagster ... -m rag_assets` still finds `defs` and the public API is one import away.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "defs": "rag_assets.orchestration.definitions",
    "MarkdownCorpus": "rag_assets.orchestration.component",
    "load_embedder": "rag_assets.embedding",
    "Settings": "rag_assets.config",
    "Retriever": "rag_assets.retrieval.retriever",
    "RAGPipeline": "rag_assets.pipeline",
    "RetrieveRequest": "rag_assets.retrieval.context",
    "RAGContext": "rag_assets.retrieval.context",
    "RetrievalMode": "rag_assets.vocabulary.modes",
    "answer_question": "rag_assets.answering",
    "RAGService": "rag_assets.answering",
    "Answer": "rag_assets.answer.generation",
    "DocumentChunk": "rag_assets.retrieval.context",
    "IngestionResult": "rag_assets.models",
    "Document": "rag_assets.ingest.documents_from_code",
    "Source": "rag_assets.answer.generation",
}
# the seed contracts' names for ours (docs/api.md, "Seed names and ours")
_ALIASES = {
    "RAGResponse": "Answer",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _ALIASES:
        return __getattr__(_ALIASES[name])
    raise AttributeError(f"module 'rag_assets' has no attribute {name!r}")


def __dir__() -> list[str]:
    # Only `defs` and the component are listed: Dagster's module loader getattr()s every listed name,
    # and should not import the retrieval stack just to find the Definitions; `dg` finds
    # MarkdownCorpus here (the package is its registry module).
    return sorted(set(globals()) | {"defs", "MarkdownCorpus"})


__all__ = sorted({*_LAZY, *_ALIASES})
