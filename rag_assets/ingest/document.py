"""One document's road, from its reference to its chunks: the one place every road takes it.

read + frontmatter -> MDX/snippet rendering -> metadata completed by the policy (``parse_document``)
-> markdown blocks (``split_document``) -> heading-aware chunks with their ids (``chunk_blocks``).
``document_chunks`` runs the three in order; ``document_blocks`` stops before chunking (the synthetic
eval set asks about blocks). Each step also returns the per-document record the Dagster stages show
as metadata, so the per-document stages (rag_assets.ingest.stages: one step each, records between
them), the direct folder index (rag_assets.ingest.folder_index) and the synthetic set's folder road
(rag_assets.evaluation.synthetic.folder) run the same code and make the same chunk ids.

Errors: reading and parsing fail with a DocumentError naming the file (rag_assets.ingest.frontmatter,
document_metadata); no Dagster, no settings lookup here: what shapes the road is passed in.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

from rag_assets.config import DEFAULTS
from rag_assets.errors import DocumentError, RagError
from rag_assets.ingest import document_metadata, frontmatter, ids, markdown, reader_text, snippets
from rag_assets.ingest.chunking import ChunkingConfig, ChunkingStats, chunk_document
from rag_assets.ingest.document_metadata import MetadataPolicy
from rag_assets.ingest.site_text import SiteText
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.models import Block, Chunk, DocumentRef, ParsedDocument


@dataclass(frozen=True)
class ParseSettings:
    """What shapes a parsed document: the metadata policy and the largest file (and snippet) read; and
    what its site renders (`site_text`: the sites of the docs folder, looked at once per settings)."""

    policy: MetadataPolicy = field(default_factory=MetadataPolicy)
    max_file_bytes: int = DEFAULTS["max_file_bytes"]
    site_text: SiteText = field(default_factory=SiteText, compare=False, repr=False)

    @classmethod
    def from_settings(cls, ingest) -> "ParseSettings":
        """From the settings' ingest group (rag_assets.config.IngestSettings)."""
        return cls(MetadataPolicy.from_settings(ingest), ingest.max_file_bytes)


@dataclass(frozen=True)
class ChunkSettings:
    """What shapes a document's chunks, besides its blocks: token counting, sizes, the embedder's limit."""

    counter: TokenCounter
    config: ChunkingConfig
    fits: Callable[[str], bool] | None = None


@dataclass
class DocumentChunks:
    """A document taken the whole road: each step's output and its per-document record."""

    document: ParsedDocument
    blocks: list[Block]
    chunks: list[Chunk]
    records: dict[str, dict]  # "parsed" | "blocks" | "chunks" -> that stage's per-document metadata


def parse_document(ref: DocumentRef, parse: ParseSettings = ParseSettings()) -> tuple[ParsedDocument, dict]:
    """The file behind ``ref`` read, its frontmatter parsed, its MDX rendered with imported snippets
    expanded (rag_assets.ingest.snippets) and its guaranteed metadata filled in
    (rag_assets.ingest.document_metadata); a document missing required metadata fails by name
    (InvalidDocumentError). Returns the document and the parse stage's record of it."""
    doc, mdx_stats = snippets.render_page(frontmatter.read_document(ref), ref, parse.max_file_bytes)
    emoji = parse.site_text.emoji_style(snippets.docs_root(ref), ref.doc_path)
    if emoji and ":" in doc.body:
        doc = replace(doc, body=reader_text.emojize(doc.body, emoji))
    warnings: list[str] = []  # logged where they arise, counted here
    doc = document_metadata.complete(doc, ref, parse.policy, warnings)
    return doc, {"title": doc.title, "tags": len(doc.tags), "body_chars": len(doc.body), **mdx_stats,
                 "metadata_warnings": len(warnings)}


def split_document(body: str) -> tuple[list[Block], dict]:
    """A document body's structural blocks, as a reader of the page reads them
    (rag_assets.ingest.reader_text), and the split stage's record of them (blocks per type, the
    blocks that never closed)."""
    blocks = reader_text.readable_blocks(markdown.split_markdown(body))
    by_type = Counter(b.type.value for b in blocks)
    return blocks, {**{f"blocks_{k}": v for k, v in by_type.items()}, "unclosed_blocks": sum(1 for b in blocks if b.unclosed)}


def chunk_blocks(doc: ParsedDocument, blocks: list[Block], setup: ChunkSettings) -> tuple[list[Chunk], dict]:
    """Heading-aware chunks of a parsed document's blocks with their deterministic ids (ids.py; repeated
    texts dropped), and the chunk stage's record of them (sizes in tokens, oversized atomic blocks,
    code blocks and tables split to fit)."""
    stats = ChunkingStats()
    chunks = ids.distinct_chunks(ids.assign_ids(
        chunk_document(doc, blocks, setup.counter, setup.config, fits=setup.fits, stats=stats)))
    return chunks, {"chunks": len(chunks), **token_stats([c.token_count for c in chunks]),
                    "oversized_chunks": sum(c.oversized for c in chunks), "blocks_split": stats.blocks_split}


def token_stats(counts: list[int]) -> dict[str, int]:
    """Smallest, median and largest token count (zeros for none)."""
    if not counts:
        return {"tokens_min": 0, "tokens_median": 0, "tokens_max": 0}
    return {"tokens_min": min(counts), "tokens_median": int(statistics.median(counts)), "tokens_max": max(counts)}


def document_blocks(ref: DocumentRef, parse: ParseSettings = ParseSettings()) -> tuple[ParsedDocument, list[Block]]:
    """The parsed document and its blocks: the road up to chunking."""
    doc, _ = parse_document(ref, parse)
    return doc, split_document(doc.body)[0]


def document_chunks(ref: DocumentRef, parse: ParseSettings, setup: ChunkSettings) -> DocumentChunks:
    """THE road from a document reference to its chunks (the module docstring). Any failure is a
    DocumentError naming the file (one bad document never stops the others: the caller records it
    and goes on), an unexpected one with its exception's type as the per-document stages report it."""
    try:
        doc, parsed = parse_document(ref, parse)
        blocks, split = split_document(doc.body)
        chunks, chunked = chunk_blocks(doc, blocks, setup)
    except RagError:
        raise
    except Exception as exc:  # noqa: BLE001 - named by the file, as the stages name it
        raise DocumentError(ref.doc_path, f"{type(exc).__name__}: {exc}") from exc
    return DocumentChunks(doc, blocks, chunks, {"parsed": parsed, "blocks": split, "chunks": chunked})
