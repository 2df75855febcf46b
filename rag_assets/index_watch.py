"""How retrieval learns that the index changed: one call site for the index generation.

Readers (the keyword index, the query cache, a Retriever's Chroma client) compare the current
generation with the one they were built for and reload when it moved. Everything on the read side
asks through :func:`current_generation`, so changing where the generation is stored changes one line.
"""

from __future__ import annotations

from rag_assets.index_generation import read_generation


def current_generation(where) -> str:
    """The index generation now (cheap: one indexed lookup, called on every query). `where`: the
    Settings (RAG_STATE_URL honoured), a StateDB, or a local state folder."""
    return read_generation(where)
