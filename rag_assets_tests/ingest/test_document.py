"""One document's road (rag_assets.ingest.document): the per-document stages, the direct folder index
and the synthetic set's folder road take it, so the same file gives the same chunks on each."""

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import MiniLMOnnxEmbedder
from rag_assets.errors import DocumentError
from rag_assets.evaluation.synthetic.folder import folder_documents
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.index.stage_store import BLOCKS, CHUNKS, PARSED, StageStore, blocks_from_list
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document import ChunkSettings, ParseSettings, document_blocks, document_chunks
from rag_assets.ingest.folder_index import index_folder
from rag_assets.ingest.stages import chunking_fingerprint, run_chunk, run_parse, run_split
from rag_assets.ingest.tokens import TokenCounter
from rag_assets_tests.support.corpus import SAMPLE_DOCS, write_corpus

# an MDX page with an imported snippet and a long code block: the rendering and the splitting of
# atomic blocks are on every road too
MDX = {
    "guide/setup.mdx": """---
title: Setup
---
import Note from '/snippets/note.mdx';

# Setup

<Note />

## Install

```bash
""" + "\n".join(f"pip install package-{i}  # the dependency number {i} of the project" for i in range(60)) + """
```
""",
    "snippets/note.mdx": "Install the client before you configure retries.\n",
}


@pytest.fixture(scope="module")
def embedder():
    return MiniLMOnnxEmbedder()


@pytest.fixture
def folder(tmp_path):
    docs = write_corpus(tmp_path / "docs", {**SAMPLE_DOCS, **MDX})
    settings = Settings.from_env({"RAG_DOCS_DIR": str(docs), "RAG_CHROMA_PATH": str(tmp_path / "chroma"),
                                  "RAG_STATE_DIR": str(tmp_path / "state"), "RAG_CACHE_DIR": str(tmp_path / "cache")})
    return docs, settings


def test_the_three_roads_give_the_same_chunk_ids_for_the_same_file(folder, embedder, tmp_path):
    docs, settings = folder
    refs = discover(docs, index_snippets=settings.index_snippets).documents
    parse = ParseSettings.from_settings(settings.ingest)
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    config = ChunkingConfig.from_settings(settings.chunking)

    # the per-document stages (what the Dagster assets run), records between the steps
    stages = StageStore(tmp_path / "stage-road")
    fingerprint = chunking_fingerprint(config, settings.tiktoken_encoding, embedder.model_name,
                                       embedder.max_input_tokens, parse.policy.fingerprint)
    parsed = run_parse(refs, stages, policy=parse.policy, max_file_bytes=parse.max_file_bytes)
    assert not parsed.failed and parsed.stats["snippets_expanded"] >= 1  # the MDX page's <Note /> rendered
    assert not run_split(refs, stages).failed
    report = run_chunk(refs, stages, counter, config, embedder.fits, fingerprint)
    assert not report.failed and report.stats["blocks_split"] >= 1  # the long code block was cut to fit
    recorded = {p: [c["chunk_id"] for c in r["payload"]] for p, r in stages.read_many(CHUNKS, [r.doc_path for r in refs]).items()}

    # the road itself, and the direct folder index (RAGPipeline / benchmarks) into a real Chroma store
    setup = ChunkSettings(counter, config, embedder.fits)
    direct = {ref.doc_path: document_chunks(ref, parse, setup) for ref in refs}
    assert {p: [c.chunk_id for c in d.chunks] for p, d in direct.items()} == recorded
    stats = index_folder(docs, settings, embedder)
    assert not stats["errors"]
    assert set(ChromaStore.for_settings(settings.paths, embedder).ids()) == {cid for ids in recorded.values() for cid in ids}
    # each step's record is the one the stage reported for that document
    assert {p: d.records["chunks"] for p, d in direct.items()} == report.per_document

    # the synthetic set's road: the same title and blocks, from the file and from the stage records
    sources, errors = folder_documents(settings)
    from_records, _ = folder_documents(settings, records=stages)
    assert not errors and {s.doc_path for s in sources} == set(recorded) == {s.doc_path for s in from_records}
    blocks = {p: blocks_from_list(r["payload"]) for p, r in stages.read_many(BLOCKS, list(recorded)).items()}
    titles = {p: r["payload"]["title"] for p, r in stages.read_many(PARSED, list(recorded)).items()}
    for source, recorded_source in zip(sources, from_records):
        assert source.read() == recorded_source.read() == (titles[source.doc_path], blocks[source.doc_path])
        assert direct[source.doc_path].blocks == blocks[source.doc_path]


def test_a_bad_document_fails_by_name_on_the_road(folder, tmp_path):
    docs, settings = folder
    (docs / "broken.md").write_text("---\ntitle: [unclosed\n---\n# Broken\n", encoding="utf-8")
    ref = next(r for r in discover(docs).documents if r.doc_path == "broken.md")
    with pytest.raises(DocumentError, match="broken.md"):
        document_blocks(ref, ParseSettings.from_settings(settings.ingest))


def test_an_unexpected_failure_on_the_road_is_named_by_its_file(folder):
    docs, settings = folder
    ref = next(r for r in discover(docs).documents if r.doc_path == "rate-limits.md")
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")

    def broken_limit(text: str) -> bool:  # an embedder whose limit check itself fails
        raise ZeroDivisionError("division by zero")

    setup = ChunkSettings(counter, ChunkingConfig.from_settings(settings.chunking), broken_limit)
    with pytest.raises(DocumentError, match=r"^rate-limits.md: ZeroDivisionError: division by zero$"):
        document_chunks(ref, ParseSettings.from_settings(settings.ingest), setup)
