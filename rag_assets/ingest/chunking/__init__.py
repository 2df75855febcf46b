"""Heading-aware chunking of structural blocks into retrieval units sized in tiktoken tokens.

Policy:

- A chunk never spans a heading: each heading starts a section (breadcrumb = the heading path).
  The first chunk of a section starts with the heading's markdown line (``## Title``); later chunks
  of the same section do not repeat it. A heading with no body makes no chunk of its own, unless
  the whole document would otherwise have no chunk (then one chunk holds all the heading lines).
  Text before the first heading (the page intro) is a section named after the page title
  (breadcrumb ``[title]``; ``build_index_text`` says the title once), or ``""`` without a title.
  When no H1 opens the body, the site shows the title as the page's H1 (Docusaurus, Starlight,
  Mintlify, MkDocs Material): every breadcrumb starts with it (``["Build", "Building"]``); the
  index text's header is the same (``Build > Building``: the title said once).
- Blocks are packed greedily toward ``target_tokens`` and never past ``max_tokens``; a chunk still
  under ``min_tokens`` may grow up to ``max_tokens``. A chunk that still ends up under
  ``min_tokens`` is merged into its previous neighbour in the section, else its next one, when the
  merge stays within ``max_tokens``; a small last piece that cannot merge is rebalanced with the
  piece before it. A section whose whole body is small stays one small chunk.
- ``target_tokens`` and ``min_tokens`` are measured on what is indexed (``build_index_text``): an
  include directive line (``{* ../../docs_src/x.py hl[3] *}``) and a heading's attribute block
  (``{ #anchor }``) are kept in the stored text but never embedded, so they take no room toward
  the target and do not make a chunk big enough; ``max_tokens`` bounds the stored text.
- A lead-in stays with what it introduces: a paragraph that ends in ``:`` (or "as follows", "for
  example", "like this", "e.g."), or only opens an HTML element, shares its chunk with (the start
  of) the next paragraph, list, code block, table or admonition of its section. When both do not
  fit one chunk: a code block or table that fits alone takes only the lead-in's last sentence(s)
  along; otherwise what follows a short lead-in (at most ``LEAD_IN_MAX_TOKENS``) is split so its
  first piece fits with it. Of a longer paragraph that ends in a lead-in, only its last line(s) or
  sentence(s), up to that size, introduce what follows: they go along with it and the rest of the
  paragraph stays behind. Only a lead-in with no such ending and nothing that fits is left at a
  chunk's end.
- PROSE is cut at paragraph, then line, then sentence, then word boundaries, and as a last resort
  into token slices (always on a character boundary): no text is lost, ``$$ … $$`` math is kept
  whole unless it alone is too big, and a cut right after a line or sentence ending in ``:`` is
  avoided when the next piece fits.
- CODE and TABLE blocks are kept whole when they fit a chunk. One that does not (over
  ``max_tokens`` or failing ``fits``) is split at line boundaries into pieces that fit: each code
  piece is wrapped in the block's own fence (the first piece's opening line with its info string,
  later ones with only its language: a title is read once, above the code; and a closing fence),
  each table piece repeats the header row and separator line, so every piece is valid markdown and
  reads alone. A single code line too long for a piece is cut like prose (words, then token
  slices); a table is cut between rows only: a row too long for a chunk is a piece of its own
  under the header, ``oversized``.
  ``ChunkingStats.blocks_split`` counts these blocks.
- ADMONITION blocks are kept whole when they fit, and split like prose when they do not: they are
  mostly prose, and an oversized one would be silently truncated by the embedder. So an admonition
  is never ``oversized``.
- ``fits(index_text)`` is an extra limit from the embedder's own tokenizer: a chunk is split until
  its index text fits.
- With ``overlap_tokens > 0`` every chunk after the first of a section starts with the last
  ``overlap_tokens`` tokens (cut on a word boundary) of the previous chunk, budgeted for. The overlap
  is dropped from a chunk holding a single code or table piece when keeping it would make that chunk
  too big. A chunk that holds a single token and still does not fit (only possible when the
  heading/breadcrumb alone is over the limit) is emitted with ``oversized=True`` rather than looping.

Modules, one job each: config (ChunkingConfig, ChunkingStats), chunker (chunk_document), sections
(blocks into sections by heading), units (the pieces packed and the drafts made of them), packer
(packing a section's units into chunks and emitting them), lead_ins (keeping a lead-in with what it
introduces), splitting (cutting oversized prose, code and tables), metadata (document fields every
chunk carries). build_index_text and the header budget are rag_assets.vocabulary.index_text (the
retrieval side rebuilds the same text from stored metadata).
"""

from rag_assets.ingest.chunking.chunker import chunk_document
from rag_assets.ingest.chunking.config import ChunkingConfig, ChunkingStats
from rag_assets.vocabulary.index_text import (
    HEADER_ENTRY_MAX_CHARS, HEADER_MAX_CHARS, build_index_text, clip_heading)
from rag_assets.ingest.chunking.lead_ins import LEAD_IN_MAX_TOKENS

__all__ = [
    "HEADER_ENTRY_MAX_CHARS",
    "HEADER_MAX_CHARS",
    "LEAD_IN_MAX_TOKENS",
    "ChunkingConfig",
    "ChunkingStats",
    "build_index_text",
    "chunk_document",
    "clip_heading",
]
