"""The contract every embedding model fulfils, local or remote."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors; cosine similarity is then a dot product."""

    model_name: str
    dimension: int
    max_input_tokens: int  # longer inputs are truncated by the model (local) or before sending (OpenAI)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimension), float32, unit rows, in input order; (0, dimension) for no texts."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape (dimension,), float32, unit norm."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens in the model's own tokenizer, special tokens included, never truncated."""
        ...

    def fits(self, text: str) -> bool:
        """True when the model sees all of `text` (count_tokens(text) <= max_input_tokens)."""
        ...


class TokenLimit:
    """`fits`, written once for every embedder: the embedder's own count_tokens against its
    max_input_tokens (a base class of each embedder, beside the Embedder protocol it fulfils)."""

    max_input_tokens: int

    def fits(self, text: str) -> bool:
        return self.count_tokens(text) <= self.max_input_tokens  # type: ignore[attr-defined]


def document_texts(texts: Sequence[str]) -> Sequence[str]:
    """embed_documents' input check, one for every embedder: a sequence of texts, not one string
    (a string is a sequence of one-character texts, and would embed as such)."""
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of texts, not one string (use embed_query)")
    return texts


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows as float32; an all-zero row stays zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
