"""How retrieval learns that the index changed: one call site for the index generation.

Readers (the keyword index, the query cache, a Retriever's Chroma client) compare the current
generation with the one they were built for and reload when it moved. Everything on the read side
asks through :func:`current_generation`, so changing where the generation is stored changes one line.
"""

from __future__ import annotations

from pathlib import Path

from rag_assets.index_generation import read_generation


def current_generation(state_dir: Path) -> str:
    """The index generation now (cheap: called on every query)."""
    return read_generation(state_dir)
