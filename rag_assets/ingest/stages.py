"""The document stages up to chunks (parse, split, chunk) run over a batch of documents, and the one
rule for what still needs work.

Each `run_*` function takes the documents of one run (possibly hundreds), does the stage's work
(parse, split and chunk: one step each of rag_assets.ingest.document, the road every other way of
ingesting a document takes too) only for documents whose input changed, records every failure against
the document without stopping the others, and returns a StageReport the Dagster layer turns into
metadata; the windows, the readiness rule and the report are rag_assets.ingest.stage_windows'. The later
stages live beside this one (embed_stage, index_stage, orphans) and are importable from here too.
`stale_documents` is the one rule for "what still needs work", used by the CLI, the sensor and
the assets alike. No Dagster import here: the same functions run under plain pytest.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Sequence

from rag_assets.config import DEFAULTS
from rag_assets.ingest import mdx
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.document import (ChunkSettings, ParseSettings, chunk_blocks, parse_document, split_document,
                                        token_stats)
from rag_assets.ingest.document_metadata import MetadataPolicy
# the later stages, importable from here as before (the Dagster layer, the CLI and the tests do)
from rag_assets.ingest.embed_stage import EMBED_CALL_TEXTS, EMBED_GROUP_CHUNKS, run_embed  # noqa: F401
from rag_assets.ingest.index_stage import (INDEX_GROUP_CHUNKS, REPLACING, SnapshotCommits,  # noqa: F401
                                           index_fingerprint, remove_documents, run_index, store_fingerprint)
from rag_assets.ingest.orphans import Orphans, delete_orphans, find_orphans  # noqa: F401
from rag_assets.ingest.stage_windows import WINDOW_DOCS, StageReport, run_each  # noqa: F401
from rag_assets.models import Block, BlockType, DocumentRef
from rag_assets.progress import Reporter, no_progress
from rag_assets.index.stage_store import (
    BLOCKS,
    CHUNKS,
    EMBEDDED,
    INDEXED,
    PARSED,
    StageStore,
    blocks_from_list,
    blocks_to_list,
    parsed_from_dict,
)
from rag_assets.ingest.tokens import TokenCounter

log = logging.getLogger(__name__)

# The splitter's version (and the MDX renderer's, whose output it splits): a new one re-splits every document.
SPLIT_FINGERPRINT = f"blocks-v3:{mdx.RENDER_VERSION}"


@dataclass(frozen=True)
class Fingerprints:
    """What each stage's record must carry to be current, besides the source hash."""

    chunks: str  # chunking_fingerprint(...)
    embedded: str  # the embedding model
    indexed: str  # index_fingerprint(...): the collection the vectors are in
    parsed: str = MetadataPolicy().fingerprint  # the metadata policy documents were completed with

    def of(self, stage: str) -> str:
        return {PARSED: self.parsed, BLOCKS: SPLIT_FINGERPRINT, CHUNKS: self.chunks, EMBEDDED: self.embedded, INDEXED: self.indexed}[stage]


STALE_ORDER = (PARSED, BLOCKS, CHUNKS, EMBEDDED, INDEXED)


def stale_documents(refs: Sequence[DocumentRef], stages: StageStore, fingerprints: Fingerprints) -> dict[str, str]:
    """THE rule for "this document still needs work": doc_path -> why, for every document a stage
    has to (re)do: a new or edited file, changed settings, a rebuilt collection, an index record
    left "replacing" by a crash, or a failure to retry. Headers only: no payload is read."""
    paths = [r.doc_path for r in refs]
    headers = stages.headers(paths)
    failed = stages.failures(paths)
    stale: dict[str, str] = {}
    for ref in refs:
        failure = failed.get(ref.doc_path)
        if failure and failure["source_hash"] == ref.content_hash:
            stale[ref.doc_path] = f"failed at {failure['stage']}: retried"
            continue
        head = headers.get(ref.doc_path, {})
        for stage in STALE_ORDER:
            record = head.get(stage)
            if record is None:
                stale[ref.doc_path] = f"{stage}: no record" if head else "new"
                break
            if record[0] != ref.content_hash:
                stale[ref.doc_path] = "file changed"
                break
            if record[1] != fingerprints.of(stage):
                stale[ref.doc_path] = "interrupted replace" if record[1] == REPLACING else f"{stage}: settings changed"
                break
    return stale


# 1-2. frontmatter -----------------------------------------------------------------------------
def run_parse(refs: Sequence[DocumentRef], stages: StageStore, progress: Reporter = no_progress,
              policy: MetadataPolicy = MetadataPolicy(), max_file_bytes: int = DEFAULTS["max_file_bytes"]) -> StageReport:
    """Frontmatter parsed, MDX rendered with imported snippets expanded (rag_assets.ingest.snippets),
    and the guaranteed metadata filled in (rag_assets.ingest.document_metadata); a document that
    misses required metadata fails by name (InvalidDocumentError)."""
    parse = ParseSettings(policy, max_file_bytes)

    def work(ref: DocumentRef, _):
        doc, record = parse_document(ref, parse)
        return asdict(doc), record

    report = run_each(PARSED, refs, stages, policy.fingerprint, [], work, progress)
    report.stats = {
        "documents_parsed": len(report.processed),
        "snippets_expanded": sum(d.get("snippets_expanded", 0) for d in report.per_document.values()),
        "mdx_warnings": sum(d.get("mdx_warnings", 0) for d in report.per_document.values()),
        "metadata_warnings": sum(d.get("metadata_warnings", 0) for d in report.per_document.values()),
        **unrendered_stats(report.per_document.values()),
    }
    return report


def unrendered_stats(records: Iterable[dict]) -> dict:
    """The components (and MDX expressions) whose text comes from the site's code, over the parsed
    documents' records: how many, and how many of each name (the most frequent first)."""
    by_name: Counter[str] = Counter()
    for record in records:
        by_name.update(record.get("unrendered_by_name") or {})
    return {"unrendered_components": sum(by_name.values()), "unrendered_by_name": dict(by_name.most_common())}


# 3. markdown splitting ------------------------------------------------------------------------
def run_split(refs: Sequence[DocumentRef], stages: StageStore, progress: Reporter = no_progress) -> StageReport:
    totals: Counter[str] = Counter()
    unclosed = 0

    def work(ref: DocumentRef, inputs: list[dict]):
        nonlocal unclosed
        blocks, record = split_document(inputs[0]["body"])
        totals.update(b.type.value for b in blocks)
        unclosed += record["unclosed_blocks"]
        for warning in unclosed_warnings(ref.doc_path, blocks, inputs[0].get("body_start_line", 1)):
            log.warning("%s", warning)  # the ingestion contract: a WARNING for ambiguous markdown structure
        return blocks_to_list(blocks), record

    report = run_each(BLOCKS, refs, stages, SPLIT_FINGERPRINT, [(PARSED, "")], work, progress)
    report.stats = {f"blocks_{k}": v for k, v in sorted(totals.items())}
    report.stats["blocks_total"] = sum(totals.values())
    report.stats["unclosed_blocks"] = unclosed
    return report


def unclosed_warnings(doc_path: str, blocks: Iterable[Block], body_start_line: int = 1) -> list[str]:
    """One line per block that never closed (a code fence or a ::: admonition without its end),
    naming the file and the line it opens on."""
    out = []
    for b in blocks:
        if b.unclosed:
            what = "code fence" if b.type is BlockType.CODE else f"{b.type.value} block"
            line = body_start_line + (b.start_line or 0)
            out.append(f"{doc_path}:{line}: ambiguous markdown: a {what} that never closes; "
                       "kept as one block up to the next heading")
    return out


# 4-5. chunking and ids ------------------------------------------------------------------------
def chunking_fingerprint(config: ChunkingConfig, encoding: str, model_name: str, max_input_tokens: int,
                         metadata: str = MetadataPolicy().fingerprint) -> str:
    # chunks carry the document's metadata: a new metadata policy re-makes them (the embedding cache,
    # keyed by text, keeps the vectors)
    return (
        f"chunks-v7:{encoding}:{config.min_tokens}:{config.target_tokens}:{config.max_tokens}:"
        f"{config.overlap_tokens}:{model_name}:{max_input_tokens}:{metadata}"
    )


def run_chunk(
    refs: Sequence[DocumentRef],
    stages: StageStore,
    counter: TokenCounter,
    config: ChunkingConfig,
    fits: Callable[[str], bool] | None,
    fingerprint: str,
    progress: Reporter = no_progress,
) -> StageReport:
    token_counts: list[int] = []
    oversized = blocks_split = 0  # over all documents: code blocks and tables cut into pieces that fit
    setup = ChunkSettings(counter, config, fits)

    def work(ref: DocumentRef, inputs: list):
        nonlocal oversized, blocks_split
        blocks_payload, parsed_payload = inputs
        chunks, record = chunk_blocks(parsed_from_dict(parsed_payload), blocks_from_list(blocks_payload), setup)
        token_counts.extend(c.token_count for c in chunks)
        oversized += record["oversized_chunks"]
        blocks_split += record["blocks_split"]
        return [asdict(c) for c in chunks], record

    report = run_each(CHUNKS, refs, stages, fingerprint, [(BLOCKS, SPLIT_FINGERPRINT), (PARSED, "")], work, progress)
    report.stats = {"chunks": len(token_counts), **token_stats(token_counts), "oversized_chunks": oversized,
                    "blocks_split": blocks_split}
    return report
