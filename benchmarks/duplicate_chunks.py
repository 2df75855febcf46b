"""How many chunks `ids.distinct_chunks` (chunk fingerprint v4) drops on each development corpus.

A corpus where it drops none gets exactly the chunks, ids and vectors it had before, so its retrieval
scores cannot move; only pages that repeat a text within themselves change. Chunking only (the
project's default settings and the local model's tokenizer limit), no embedding: seconds.

    .venv/bin/python benchmarks/duplicate_chunks.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

from rag_assets.config import Settings  # noqa: E402
from rag_assets.embedding import load_embedder  # noqa: E402
from rag_assets.errors import RagError  # noqa: E402
from rag_assets.ingest.chunking import ChunkingConfig, chunk_document  # noqa: E402
from rag_assets.ingest.discovery import discover  # noqa: E402
from rag_assets.ingest.document_metadata import MetadataPolicy, complete  # noqa: E402
from rag_assets.ingest.frontmatter import read_document  # noqa: E402
from rag_assets.ingest.ids import assign_ids, distinct_chunks  # noqa: E402
from rag_assets.ingest.markdown import split_markdown  # noqa: E402
from rag_assets.ingest.tokens import TokenCounter  # noqa: E402

CORPORA = {
    "claude-docs": ROOT / "data" / "docs",
    "fastapi": ROOT / "data" / "samples" / "fastapi" / "docs",
    "textbook": SHARED / "corpora" / "physical-ai-textbook" / "docs",
    "covid-qa-dev": SHARED / "datasets" / "covid-qa-dev" / "docs",
}


def main() -> None:
    settings = Settings.from_env()
    embedder = load_embedder(settings.embedding)
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    config, policy = ChunkingConfig.from_settings(settings.chunking), MetadataPolicy.from_settings(settings.ingest)
    print("| corpus | pages | chunks before | chunks after | dropped | pages changed |")
    print("|---|---|---|---|---|---|")
    for name, docs in CORPORA.items():
        if not docs.is_dir():
            print(f"| {name} | (not found: {docs}) | | | | |")
            continue
        totals: Counter = Counter()
        for ref in discover(docs).documents:
            try:
                doc = complete(read_document(ref), ref, policy)
            except RagError:
                continue
            chunks = assign_ids(chunk_document(doc, split_markdown(doc.body), counter, config, fits=embedder.fits))
            kept = len(distinct_chunks(list(chunks)))
            totals.update(pages=1, before=len(chunks), after=kept, changed=int(kept < len(chunks)))
        print(f"| {name} | {totals['pages']} | {totals['before']} | {totals['after']} | "
              f"{totals['before'] - totals['after']} | {totals['changed']} |")


if __name__ == "__main__":
    main()
