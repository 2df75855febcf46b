"""chunk_document: one document's blocks, section by section through the packer, into Chunks."""

from __future__ import annotations

import logging
from collections.abc import Callable

from rag_assets.ingest.chunking.config import ChunkingConfig, ChunkingStats
from rag_assets.vocabulary.index_text import HEADER_ENTRY_MAX_CHARS, build_index_text
from rag_assets.ingest.chunking.metadata import _document_metadata
from rag_assets.ingest.chunking.packer import _Packer
from rag_assets.ingest.chunking.sections import _Section, _sections
from rag_assets.ingest.chunking.units import _Draft
from rag_assets.vocabulary.markup import strip_heading_attributes
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.models import Block, BlockType, Chunk, ParsedDocument

# The package's name, as before it was split into modules: logging set up for (and tests listening
# to) "rag_assets.ingest.chunking" still gets the header-budget warning.
log = logging.getLogger(__package__)


def chunk_document(
    doc: ParsedDocument,
    blocks: list[Block],
    counter: TokenCounter,
    config: ChunkingConfig,
    fits: Callable[[str], bool] | None = None,
    stats: ChunkingStats | None = None,
) -> list[Chunk]:
    """Chunk one document's blocks (from ``split_markdown``); chunk_id/content_hash are left empty.

    ``stats``, if given, is added to (so one object can total a batch of documents)."""
    sections = _sections(blocks, strip_heading_attributes(doc.title[: HEADER_ENTRY_MAX_CHARS * 4]).strip())
    packer = _Packer(doc.title, counter, config, fits)
    drafts: list[_Draft] = []
    for section in sections:
        if section.body:
            drafts.extend(packer.section(section))
    if not drafts and sections and sections[-1].heading_line:
        # Only headings: keep them, so the page is still findable by its outline.
        text = "\n\n".join(s.heading_line for s in sections if s.heading_line)
        last = sections[-1]
        only_headings = _Section("", last.title, last.breadcrumb, [Block(BlockType.HEADING, text)])
        drafts.extend(packer.section(only_headings))
    if stats is not None:
        stats.blocks_split += len(packer.split_blocks)

    metadata = _document_metadata(doc)
    longest = max([len(doc.title)] + [len(entry) for d in drafts for entry in d.breadcrumb], default=0)
    if longest > HEADER_ENTRY_MAX_CHARS:
        log.warning("%s: a title or heading of %d characters is cut to %d in every chunk's header",
                    doc.doc_path, longest, HEADER_ENTRY_MAX_CHARS)
    return [
        Chunk(
            doc_path=doc.doc_path,
            chunk_index=i,
            text=d.text,
            section=d.section,
            heading_breadcrumb=list(d.breadcrumb),
            token_count=d.tokens,
            block_types=d.block_types,
            oversized=d.oversized,
            index_text=build_index_text(doc.title, d.breadcrumb, d.text),
            metadata=dict(metadata),
        )
        for i, d in enumerate(drafts)
    ]
