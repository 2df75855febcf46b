"""Plain dataclasses passed between the pipeline stages (no Dagster, no I/O)."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# the version of what a page says of itself as the catalog keeps it (rag_assets.ingest.page_facts): facts
# of another version are read again, once, from the page
FACTS_VERSION = "v3"


@dataclass(frozen=True)
class DocumentRef:
    """A markdown file found by discovery; enough to decide whether it changed."""

    doc_path: str  # relative to the docs folder, "/" separators
    partition_key: str  # the Dagster partition key (== doc_path unless it had to be mapped)
    absolute_path: str
    module: str | None  # first folder level, e.g. "module-1"
    chapter: str | None  # second folder level
    size_bytes: int
    mtime: float
    # sha-256 of the file's bytes; for a page that imports snippet files, a hash over its own bytes
    # and theirs (rag_assets.ingest.snippets), so editing a snippet re-ingests the pages that show it
    content_hash: str
    # what the file looked like when hashed: a later stat that matches needs no re-hash
    mtime_ns: int = 0
    inode: int = 0
    file_hash: str = ""  # sha-256 of the file's own bytes ("" = content_hash)
    imports: str = ""  # local markdown files it imports, as written in the file, "\n"-separated
    # the page's language as its corpus's scope resolved it (rag_assets.ingest.scope), and what the
    # page says of itself (frontmatter flags, declared and detected language: page_facts.PageFacts)
    language: str = ""
    facts: str = ""
    # where the page sits in its site and what its address is made of (rag_assets.ingest.site_urls: JSON
    # with its site_path, version, route parts), decided over the whole folder like its language
    place: str = ""

    def stat_matches(self, st) -> bool:
        """The file behind this ref is (as far as a stat can tell) the version that was hashed."""
        # a ref recorded before file_hash/imports existed is read again once, to learn them
        return (st.st_size, st.st_mtime_ns, st.st_ino) == (self.size_bytes, self.mtime_ns, self.inode) and self.mtime_ns != 0 \
            and self.file_hash != "" and self.facts.startswith(FACTS_VERSION + "|")


@dataclass(frozen=True)
class DiscoveryError:
    path: str
    reason: str


@dataclass
class Catalog:
    """Everything discovery found under one docs folder."""

    docs_dir: str
    documents: list[DocumentRef]
    errors: list[DiscoveryError] = field(default_factory=list)
    # files found but not pages (snippets shown inside the pages that import them): their removal
    # from the index is a setting's effect, not a folder emptying, so the deletion guard ignores it
    excluded: list[str] = field(default_factory=list)
    # pages found but out of the corpus's scope (rag_assets.ingest.scope): doc path -> reason. Those
    # in `left_out_read` were read to decide (frontmatter, language); the others by their path alone
    left_out: dict[str, str] = field(default_factory=dict)
    left_out_languages: dict[str, str] = field(default_factory=dict)  # doc path -> language, for translations
    left_out_read: list[str] = field(default_factory=list)
    # the fingerprints of the pages read and left out: a later look whose stat matches does not read them again
    left_out_refs: list[DocumentRef] = field(default_factory=list)
    default_language: str = ""
    languages: dict[str, int] = field(default_factory=dict)  # pages found per language
    languages_from: str = ""  # where the languages came from ("docusaurus.config.js i18n (default en; fr)")

    def by_partition_key(self) -> dict[str, DocumentRef]:
        return {d.partition_key: d for d in self.documents}


@dataclass
class ParsedDocument:
    """A document after frontmatter parsing: metadata plus the markdown body."""

    doc_path: str
    content_hash: str
    title: str
    description: str
    tags: list[str]
    metadata: dict[str, Any]  # every other frontmatter key, plus module/chapter
    body: str  # markdown after the frontmatter
    body_start_line: int  # 1-based line of the file where the body starts


class BlockType(str, enum.Enum):
    HEADING = "heading"
    PROSE = "prose"
    CODE = "code"
    TABLE = "table"
    ADMONITION = "admonition"


@dataclass(frozen=True)
class Block:
    """One structural block of a markdown body, in document order."""

    type: BlockType
    text: str  # the block's markdown source (for headings: the heading text without '#')
    heading_level: int | None = None  # 1-6 for headings
    start_line: int | None = None  # 0-based line within the body
    unclosed: bool = False  # a code fence that never closed (kept, flagged)
    # what kind of admonition or tab this is: "note", "warning", "tab" … (None for other blocks)
    label: str | None = None


@dataclass
class Chunk:
    """A unit of retrieval: text under one heading path, sized in tokens."""

    doc_path: str
    chunk_index: int
    text: str  # the chunk's markdown, overlap included
    section: str  # the nearest heading's text ("" before the first heading)
    heading_breadcrumb: list[str]  # headings from the top down to `section`
    token_count: int  # tiktoken tokens of `text`
    block_types: list[str]  # BlockType values present, in order, de-duplicated
    oversized: bool = False  # an atomic block larger than the maximum, kept whole
    chunk_id: str = ""  # see ids.py
    content_hash: str = ""  # sha-256 of index_text (what is embedded), see ids.py
    index_text: str = ""  # what is embedded and keyword-indexed: title/breadcrumb header + text
    metadata: dict[str, Any] = field(default_factory=dict)  # document-level metadata copied in


@dataclass
class IngestSummary:
    """What one `rag ingest` did: the counts the CLI prints (and --json returns)."""

    documents_discovered: int = 0
    documents_processed: int = 0
    documents_unchanged: int = 0
    documents_failed: int = 0
    documents_deleted: int = 0
    chunks_written: int = 0
    embeddings_computed: int = 0
    embeddings_reused: int = 0
    # seconds the embedder spent computing, summed over the runs (runs of `--workers` overlap): what
    # of duration_seconds was the model, and what was everything beside it
    embedding_seconds: float = 0.0
    vectors_deleted: int = 0
    chunks_truncated: int = 0  # chunks longer than the model's input: embedded from their start only
    blocks_split: int = 0  # code/table blocks over the chunk limit, split at line boundaries into pieces that fit
    # components (and MDX expressions) of the pages parsed whose text comes from the site's own code, so
    # it is not in the index, by name (rag_assets.ingest.mdx_components): the most frequent first
    unrendered_components: dict[str, int] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0
    lock_wait_seconds: float = 0.0  # time spent waiting for another ingest to finish (included in duration)
    removal_refused: str = ""  # the deletion guard kept vanished documents: why (new ones were indexed)
    # pages found but out of the corpus's scope, by reason (rag_assets.ingest.scope), and its default language
    left_out: dict[str, int] = field(default_factory=dict)
    default_language: str = ""
    languages_from: str = ""  # where the languages came from (the configuration read, or the pages' text)
    translations_left_out: list[str] = field(default_factory=list)  # named when few (scope.NAMED_TRANSLATIONS)
    # stopped by Ctrl-C / SIGTERM ("SIGINT" / "SIGTERM"; "" = it ran to its end): the documents it did
    # not index and that did not fail are not started (not failed); the next `rag ingest` does them
    interrupted: str = ""
    documents_not_started: int = 0

    def count_unrendered(self, by_name: Mapping[str, int] | None) -> None:
        """Add a run's unrendered components (name -> count) to the summary's, most frequent first."""
        if not isinstance(by_name, Mapping) or not by_name:
            return
        merged = Counter(self.unrendered_components)
        merged.update({str(name): int(n) for name, n in by_name.items()})
        self.unrendered_components = dict(merged.most_common())


@dataclass
class IngestionResult:
    """What RAGPipeline.ingest(documents) did (the rules-bot contract's shape)."""

    # a UUID string: the first Dagster run of this ingest (look it up in the UI), or a new one when
    # no run was needed (every document already indexed with this content, or none could be)
    job_id: str
    documents_processed: int
    documents_failed: int
    embedding_count: int  # embeddings computed (reused ones are not counted)
    # one line per failed document: the name the caller gave it (its filename, else its id), then why
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0
    doc_paths: list[str] = field(default_factory=list)  # where the documents live in the docs folder
    run_ids: list[str] = field(default_factory=list)
    document_ids: list[str] = field(default_factory=list)  # the documents' ids, in order (a UUID as its text)
    failed_ids: list[str] = field(default_factory=list)  # the ids of the documents that failed

    @property
    def success(self) -> bool:
        return self.documents_failed == 0
