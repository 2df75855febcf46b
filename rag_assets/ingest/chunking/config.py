"""The chunker's settings (ChunkingConfig) and what it reports back (ChunkingStats)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkingConfig:
    min_tokens: int = 40
    target_tokens: int = 100  # the defaults of Settings (rag_assets.config)
    max_tokens: int = 140
    overlap_tokens: int = 0

    @classmethod
    def from_settings(cls, chunking) -> "ChunkingConfig":
        """From the settings' chunking group (rag_assets.config.ChunkingSettings: RAG_CHUNK_*_TOKENS)."""
        return cls(chunking.chunk_min_tokens, chunking.chunk_target_tokens, chunking.chunk_max_tokens,
                   chunking.chunk_overlap_tokens)

    def __post_init__(self) -> None:
        if not 0 < self.max_tokens:
            raise ValueError("max_tokens must be positive")
        if not 0 <= self.min_tokens <= self.target_tokens <= self.max_tokens:
            raise ValueError("need 0 <= min_tokens <= target_tokens <= max_tokens")
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise ValueError("need 0 <= overlap_tokens < max_tokens")


@dataclass
class ChunkingStats:
    """What chunking had to do to one or more documents (filled in by ``chunk_document``)."""

    blocks_split: int = 0  # CODE/TABLE blocks too big for one chunk, split at line boundaries
