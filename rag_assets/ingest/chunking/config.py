"""The chunker's settings (ChunkingConfig) and what it reports back (ChunkingStats)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_assets.config import DEFAULTS, chunk_sizes_problem


@dataclass(frozen=True)
class ChunkingConfig:
    # the defaults of the settings (rag_assets.config.settings: RAG_CHUNK_*_TOKENS)
    min_tokens: int = DEFAULTS["chunk_min_tokens"]
    target_tokens: int = DEFAULTS["chunk_target_tokens"]
    max_tokens: int = DEFAULTS["chunk_max_tokens"]
    overlap_tokens: int = DEFAULTS["chunk_overlap_tokens"]

    @classmethod
    def from_settings(cls, chunking) -> "ChunkingConfig":
        """From the settings' chunking group (rag_assets.config.ChunkingSettings: RAG_CHUNK_*_TOKENS)."""
        return cls(chunking.chunk_min_tokens, chunking.chunk_target_tokens, chunking.chunk_max_tokens,
                   chunking.chunk_overlap_tokens)

    def __post_init__(self) -> None:
        # the settings' one rule for chunk sizes (the overlap under half the maximum)
        problem = chunk_sizes_problem(self.min_tokens, self.target_tokens, self.max_tokens, self.overlap_tokens)
        if problem:
            raise ValueError(problem)


@dataclass
class ChunkingStats:
    """What chunking had to do to one or more documents (filled in by ``chunk_document``)."""

    blocks_split: int = 0  # CODE/TABLE blocks too big for one chunk, split at line boundaries
