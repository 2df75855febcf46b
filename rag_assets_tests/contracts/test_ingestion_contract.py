"""The textbook ingestion contract (discovery, frontmatter fallbacks, markdown blocks, heading-aware
chunks, overlap, ids), called through our names for its functions (docs/api.md, "Seed names and
ours") on pages of our own. Where we differ on purpose the test pins our behaviour and docs/api.md lists
the difference."""

import hashlib

import pytest

from rag_assets.ingest import ids
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document import ChunkSettings, ParseSettings, document_chunks, parse_document
from rag_assets.ingest.markdown import split_markdown
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.models import BlockType
from rag_assets_tests.support.corpus import write_corpus

LESSON = """---
title: Sensors and actuators
description: What a robot senses and moves with.
tags: [sensors, hardware]
learning_objectives:
  - Name three kinds of sensor
  - Explain what an actuator does
sidebar_position: 3
---

# Sensors and actuators

A robot perceives the world through sensors and acts on it through actuators.

## Sensors

A lidar measures distance with laser pulses. A camera gives colour images.

| Sensor | Measures |
|---|---|
| Lidar | distance |
| IMU | acceleration |

:::tip
Calibrate the IMU before every run.
:::

## Actuators

```python
motor.set_speed(0.5)
```

The energy of a moving joint is $$E = \\tfrac{1}{2} I \\omega^2$$ in prose.
"""
PLAIN = "Just a paragraph with no frontmatter and no heading.\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("lessons") / "docs",
                        {"module-1/chapter-2/sensors.md": LESSON, "module-1/plain-page.md": PLAIN})


@pytest.fixture(scope="module")
def refs(folder):
    return {ref.doc_path: ref for ref in discover(folder).documents}


def chunks_of(ref, **config):
    setup = ChunkSettings(TokenCounter.for_name(), ChunkingConfig(**config))
    return document_chunks(ref, ParseSettings(), setup).chunks


def test_discovery_finds_every_markdown_file_with_its_path_module_and_chapter(folder, refs):
    assert set(refs) == {"module-1/chapter-2/sensors.md", "module-1/plain-page.md"}
    ref = refs["module-1/chapter-2/sensors.md"]
    assert (ref.module, ref.chapter) == ("module-1", "chapter-2") and ref.absolute_path.endswith("sensors.md")


def test_discovery_of_a_missing_folder_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        discover(tmp_path / "no-such-folder")


def test_frontmatter_fields_and_the_fallbacks_without_it(refs):
    doc, _ = parse_document(refs["module-1/chapter-2/sensors.md"])
    assert doc.title == "Sensors and actuators" and doc.description == "What a robot senses and moves with."
    assert doc.tags == ["sensors", "hardware"]
    assert doc.metadata["learning_objectives"] == ["Name three kinds of sensor", "Explain what an actuator does"]
    assert doc.metadata["sidebar_position"] == 3 and doc.metadata["sidebar_label"] == "Sensors and actuators"
    plain, _ = parse_document(refs["module-1/plain-page.md"])
    assert plain.title == "plain-page"  # no H1: the file name without its extension
    assert plain.description == "" and plain.tags == []
    assert plain.metadata["learning_objectives"] == [] and plain.metadata["sidebar_position"] == 0
    assert plain.metadata["sidebar_label"] == plain.title


def test_split_markdown_gives_the_contracts_block_types_in_order():
    doc_body = LESSON.split("---\n", 2)[2]
    blocks = split_markdown(doc_body)
    types = [b.type for b in blocks]
    assert {BlockType.HEADING, BlockType.PROSE, BlockType.CODE, BlockType.TABLE, BlockType.ADMONITION} <= set(types)
    assert [b.heading_level for b in blocks if b.type is BlockType.HEADING] == [1, 2, 2]
    table = next(b for b in blocks if b.type is BlockType.TABLE)
    assert "| Lidar | distance |" in table.text and "| IMU | acceleration |" in table.text  # one block
    assert any("$$E = \\tfrac{1}{2} I \\omega^2$$" in b.text for b in blocks if b.type is BlockType.PROSE)
    prose = [b for b in blocks if b.type is BlockType.PROSE]
    assert "A lidar measures distance with laser pulses. A camera gives colour images." in prose[1].text


def test_chunks_never_cross_a_heading_and_carry_their_breadcrumb(refs):
    chunks = chunks_of(refs["module-1/chapter-2/sensors.md"])
    for chunk in chunks:
        assert chunk.section in ("Sensors and actuators", "Sensors", "Actuators")
        assert chunk.heading_breadcrumb[-1] == chunk.section
    assert "motor.set_speed" in next(c.text for c in chunks if c.section == "Actuators")
    assert not any("lidar" in c.text.lower() for c in chunks if c.section == "Actuators")


def test_a_code_block_that_fits_is_one_piece_an_oversized_one_is_split_into_fenced_pieces(tmp_path):
    """The contract keeps an oversized code or table block as one solo chunk; we cut it into valid
    fenced pieces (every piece fits the embedder's input, which would otherwise read only its start)."""
    long_code = "# Page\n\n## Code\n\n```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(200)) + "\n```\n"
    [ref] = discover(write_corpus(tmp_path / "docs", {"code.md": long_code})).documents
    chunks = chunks_of(ref)
    assert len(chunks) > 1
    assert all(c.text.count("```") == 2 for c in chunks)  # each piece opens and closes its fence
    assert all(c.token_count <= ChunkingConfig().max_tokens for c in chunks)


def test_overlap_is_off_by_default_and_within_a_section_when_set(refs):
    """The contract prepends 50 tokens of the previous chunk of the same document; ours is 0 by
    default (RAG_CHUNK_OVERLAP_TOKENS) and, when set, taken from the previous chunk of the same section."""
    ref = refs["module-1/chapter-2/sensors.md"]
    assert ChunkingConfig().overlap_tokens == 0
    plain = chunks_of(ref, min_tokens=5, target_tokens=20, max_tokens=30)
    overlapped = chunks_of(ref, min_tokens=5, target_tokens=20, max_tokens=30, overlap_tokens=5)
    firsts = {}
    for chunk in overlapped:
        firsts.setdefault(chunk.section, chunk)
    assert overlapped[0].text.startswith("# Sensors and actuators")  # the first chunk: no overlap
    assert len(plain) >= 3 and sum(c.token_count for c in overlapped) > sum(c.token_count for c in plain)


def test_ids_are_content_addressed_and_content_hash_is_sha256_of_the_embedded_text(refs):
    """The contract's id is SHA-256(doc_path::chunk_index)[:16]; ours names the text (doc_path and the
    embedded text's hash), so an unchanged chunk keeps its id and vector when others move."""
    chunks = chunks_of(refs["module-1/chapter-2/sensors.md"])
    for chunk in chunks:
        assert chunk.content_hash == hashlib.sha256(chunk.index_text.encode()).hexdigest()
        assert chunk.chunk_id == ids.chunk_id(chunk.doc_path, chunk.content_hash)
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert chunks_of(refs["module-1/chapter-2/sensors.md"])[0].chunk_id == chunks[0].chunk_id  # deterministic


def test_chunks_count_tokens_not_words(refs):
    """The contract's chunk.word_count; ours is token_count (tiktoken cl100k_base), what the sizes are in."""
    chunk = chunks_of(refs["module-1/chapter-2/sensors.md"])[0]
    assert chunk.token_count == TokenCounter.for_name().count(chunk.text)
    assert not hasattr(chunk, "word_count")


def test_the_cli_takes_the_contracts_commands():
    from rag_assets.cli.main import _parser

    parser = _parser()
    assert parser.parse_args(["ingest", "--docs-dir", "website/docs/", "--collection", "textbook_chunks"])
    assert parser.parse_args(["ingest-doc", "module-1/intro.md"])
    assert parser.parse_args(["query", "What is embodied cognition?", "--top-k", "5", "--module", "module-1"])
    assert parser.parse_args(["evaluate", "--test-set", "tests/evaluation/test_set.json"])


def test_list_fields_come_back_as_lists_from_a_search(folder, tmp_path):
    """tags and learning_objectives come back as the lists the frontmatter gave (Chroma stores them as one
    "a, b" string; an item holding ", " comes back as two)."""
    from rag_assets.config import Settings
    from rag_assets.retrieval.retriever import Retriever
    from rag_assets_tests.support.index_builder import build_index

    settings = Settings.from_env({}, docs_dir=folder, chroma_path=tmp_path / "chroma", state_dir=tmp_path / "state",
                                 cache_dir=tmp_path / "cache")
    build_index(folder, settings)
    hit = Retriever.from_settings(settings).search("What does a lidar measure?", "hybrid", 1)[0]
    assert hit.metadata["tags"] == ["sensors", "hardware"]
    assert hit.metadata["learning_objectives"] == ["Name three kinds of sensor", "Explain what an actuator does"]
