"""Experiment (not shipped): a page's own summary in every chunk's embedded text, on all three corpora.

    python benchmarks/page_context.py --workdir /tmp/rag-page-context-12 --words 12
        [--lead intro|first-prose] [--bm25] [--seed-cache /tmp/rag-chunk-sizes/40-100-140/embeddings.sqlite]

The summary is the page's frontmatter ``description`` or, without one, its lead paragraph: with
``--lead intro`` the first prose block before the page's first subheading (pages that open straight
with a ``##`` section get none), with ``--lead first-prose`` the first prose block anywhere. Its first
``--words`` words are added under the ``title > h1 > h2`` header of every chunk that does not already
hold them. By default only the embedded text changes (BM25 indexes what it indexes today); ``--bm25``
adds the summary to the keyword text too. Each variant needs its own --workdir: every chunk with a
summary is embedded again (about 4 minutes for the three corpora here; ``--seed-cache`` copies an
embedding cache in first so the unchanged chunks are not). The production code is patched in this
process only. Results: benchmarks/retrieval_corpora.md ("The static-files question").
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, open_corpus  # noqa: E402
from retrieval_corpora import COLUMNS, markdown_table, probe_line, score_corpus  # noqa: E402

PROBE = ("fastapi", "How do I serve images and CSS files?", "tutorial/static-files.md")


def page_summary(doc, blocks, words: int, lead: str) -> str:
    from rag_assets.vocabulary.markup import indexable_text
    from rag_assets.models import BlockType

    text = doc.description or ""
    if not text.strip():
        for block in blocks:
            if lead == "intro" and block.type is BlockType.HEADING and (block.heading_level or 1) >= 2:
                break
            if block.type is BlockType.PROSE and indexable_text(block.text).strip():
                text = block.text
                break
    return " ".join(indexable_text(text).split()[:words])


def with_summary(index_text: str, summary: str, chunk_text: str) -> str:
    from rag_assets.vocabulary.markup import indexable_text

    if not summary or summary in " ".join(indexable_text(chunk_text).split()):
        return index_text
    header, sep, body = index_text.partition("\n\n")
    return f"{header}\n{summary}{sep}{body}"


def patch(words: int, lead: str, bm25: bool) -> None:
    """Chunking (and with bm25 the keyword text) as the variant has it, in this process."""
    import rag_assets.ingest.folder_index as folder_index
    import rag_assets.retrieval.snapshot_segments as keyword

    chunk_document = folder_index.chunk_document

    def chunk_with_summary(doc, blocks, counter, config, fits=None):
        chunks = chunk_document(doc, blocks, counter, config, fits)
        summary = page_summary(doc, blocks, words, lead)
        for chunk in chunks:
            text = with_summary(chunk.index_text, summary, chunk.text)
            if text != chunk.index_text:
                chunk.index_text = text
                chunk.metadata["page_summary"] = summary
        return chunks

    folder_index.chunk_document = chunk_with_summary
    if bm25:  # the variant's workdir is its own: its snapshot is committed with this text
        chunk_index_text = keyword.chunk_index_text

        def keyword_text(text, metadata):
            base = chunk_index_text(text, metadata)
            return with_summary(base, metadata.get("page_summary", ""), text)

        keyword.chunk_index_text = keyword_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True, help="a folder of this variant's own")
    parser.add_argument("--words", type=int, default=12)
    parser.add_argument("--lead", choices=("intro", "first-prose"), default="intro")
    parser.add_argument("--bm25", action="store_true", help="add the summary to the keyword text too")
    parser.add_argument("--seed-cache", help="an embeddings.sqlite to start the variant's embedding cache from")
    args = parser.parse_args(argv)

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.seed_cache and not (workdir / "embeddings.sqlite").exists():
        shutil.copy(args.seed_cache, workdir / "embeddings.sqlite")
    patch(args.words, args.lead, args.bm25)
    modes = ["vector", "keyword", "hybrid"]
    results = {}
    for name in CORPORA:
        retriever, built = open_corpus(name, workdir)
        if built:
            print(f"{name}: indexed {built}", file=sys.stderr)
        report = score_corpus(retriever, name, modes)
        results[name] = {m: {c: report.metrics[m][c] for c in COLUMNS} for m in modes}
        if name == PROBE[0]:
            print(probe_line(retriever, PROBE[1], PROBE[2], modes))
    print(markdown_table(results, modes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
