"""chunk_document: heading-aware, token-sized chunks that never lose text."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

import pytest

from rag_assets.ingest.chunking import ChunkingConfig, build_index_text, chunk_document
from rag_assets.config import Settings
from rag_assets.ingest.markdown import split_markdown
from rag_assets.models import Chunk, ParsedDocument
from rag_assets.ingest.tokens import TokenCounter

WORDS = (
    "robots perceive their surroundings through cameras and lidar while planners turn goals into "
    "trajectories that controllers follow under noise delay and uncertainty in the real world"
).split()


def prose(n_words: int, seed: int = 0, sentence_every: int = 12) -> str:
    """Deterministic prose with sentence breaks and numbered words, so every word is unique."""
    out = []
    for i in range(n_words):
        word = f"{WORDS[(i + seed) % len(WORDS)]}{seed}x{i}"
        out.append(word + ("." if (i + 1) % sentence_every == 0 else ""))
    return " ".join(out)


@pytest.fixture(scope="session")
def counter(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    return TokenCounter.for_name("cl100k_base", cache_dir=tmp_path_factory.mktemp("tiktoken"))


def make_doc(body: str, title: str = "Guide", metadata: dict[str, Any] | None = None, **kw: Any) -> ParsedDocument:
    return ParsedDocument(
        doc_path="guide/page.md",
        content_hash="h",
        title=title,
        description=kw.get("description", "A page"),
        tags=kw.get("tags", ["a", "b"]),
        metadata=metadata or {},
        body=body,
        body_start_line=1,
    )


def chunk(body: str, counter: TokenCounter, config: ChunkingConfig | None = None, **kw: Any) -> list[Chunk]:
    fits = kw.pop("fits", None)
    doc = make_doc(body, **kw)
    chunks = chunk_document(doc, split_markdown(body), counter, config or ChunkingConfig(), fits=fits)
    check_common(chunks, doc, counter, config or ChunkingConfig())
    return chunks


def check_common(chunks: list[Chunk], doc: ParsedDocument, counter: TokenCounter, cfg: ChunkingConfig) -> None:
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.doc_path == doc.doc_path
        assert c.token_count == counter.count(c.text)
        assert c.token_count <= cfg.max_tokens or c.oversized
        assert c.index_text == build_index_text(doc.title, c.heading_breadcrumb, c.text)
        assert c.section == (c.heading_breadcrumb[-1] if c.heading_breadcrumb else "")
        assert len(c.block_types) == len(set(c.block_types))
        assert c.chunk_id == "" and c.content_hash == ""


def words(text: str) -> list[str]:
    return re.findall(r"\S+", text)


# -- build_index_text ----------------------------------------------------------------------------


def test_build_index_text_header() -> None:
    assert build_index_text("Guide", ["Setup", "Install"], "body") == "Guide > Setup > Install\n\nbody"
    # An H1 repeating the title is not said twice.
    assert build_index_text("Tool Use", [" tool use ", "Examples"], "b") == "Tool Use > Examples\n\nb"
    assert build_index_text("", ["A", "B"], "b") == "A > B\n\nb"
    assert build_index_text("", [], "b") == "b"
    assert build_index_text("T", [], "b") == "T\n\nb"


# -- headings ------------------------------------------------------------------------------------


def test_chunks_never_cross_headings_and_breadcrumbs(counter: TokenCounter) -> None:
    body = (
        f"Preface {prose(20, 1)}\n\n# Top\n\n{prose(30, 2)}\n\n### Deep\n\n{prose(30, 3)}\n\n"
        f"## Middle\n\n{prose(30, 4)}\n\n# Other\n\n{prose(30, 5)}\n"
    )
    chunks = chunk(body, counter)
    crumbs = [(c.section, c.heading_breadcrumb) for c in chunks]
    assert crumbs == [
        ("", []),
        ("Top", ["Top"]),
        ("Deep", ["Top", "Deep"]),
        ("Middle", ["Top", "Middle"]),  # ## pops the ###
        ("Other", ["Other"]),
    ]
    for c, seed in zip(chunks, [1, 2, 3, 4, 5]):
        # Each chunk holds only its own section's words.
        assert all(f"{seed}x" in w for w in words(c.text) if "x" in w and not w.startswith("#"))
    assert chunks[0].text.startswith("Preface")
    assert chunks[1].text.startswith("# Top\n\n")
    assert chunks[2].text.startswith("### Deep\n\n")
    assert chunks[1].block_types == ["heading", "prose"]


def test_first_chunk_of_section_has_heading_line_continuations_do_not(counter: TokenCounter) -> None:
    body = f"## Creating Test Cases\n\n{prose(400, 7)}\n"
    chunks = chunk(body, counter)
    assert len(chunks) > 2
    assert chunks[0].text.startswith("## Creating Test Cases\n\n")
    assert all("Creating Test Cases" not in c.text for c in chunks[1:])
    assert all(c.section == "Creating Test Cases" for c in chunks)


def test_heading_without_body_has_no_chunk(counter: TokenCounter) -> None:
    chunks = chunk(f"# Title\n\n## Empty\n\n## Full\n\n{prose(20)}\n", counter)
    assert [c.section for c in chunks] == ["Full"]
    assert chunks[0].heading_breadcrumb == ["Title", "Full"]


def test_only_headings_still_yields_one_chunk(counter: TokenCounter) -> None:
    chunks = chunk("# Title\n\n## Sub\n", counter)
    assert len(chunks) == 1
    assert chunks[0].text == "# Title\n\n## Sub"
    assert chunks[0].heading_breadcrumb == ["Title", "Sub"]


def test_empty_document(counter: TokenCounter) -> None:
    assert chunk("", counter) == []


# -- sizes ---------------------------------------------------------------------------------------


def test_long_prose_split_without_losing_words(counter: TokenCounter) -> None:
    paragraphs = [prose(n, seed) for seed, n in enumerate([30, 400, 5, 90, 250])]
    one_huge_sentence = prose(600, 9, sentence_every=10_000)
    body = "## Section\n\n" + "\n\n".join(paragraphs + [one_huge_sentence]) + "\n"
    cfg = ChunkingConfig()
    chunks = chunk(body, counter, cfg)
    assert all(c.token_count <= cfg.max_tokens and not c.oversized for c in chunks)
    rebuilt = [w for c in chunks for w in words(c.text)]
    assert rebuilt[:2] == ["##", "Section"]
    assert rebuilt[2:] == words("\n\n".join(paragraphs + [one_huge_sentence]))


def test_word_without_spaces_is_cut_into_token_slices(counter: TokenCounter) -> None:
    blob = "ä€" * 3000 + "robotics" * 500  # no whitespace at all, multi-byte characters
    chunks = chunk(blob, counter)
    assert len(chunks) > 1
    assert "".join(c.text for c in chunks) == blob
    assert all(c.token_count <= ChunkingConfig().max_tokens for c in chunks)


def test_code_and_table_never_split_oversized_flagged(counter: TokenCounter) -> None:
    big_code = "```python\n" + "\n".join(f"value_{i} = compute({i}, 'x')" for i in range(120)) + "\n```"
    small_code = "```bash\npip install rag\n```"
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {prose(3, i)} |" for i in range(80))
    body = f"# Code\n\n{prose(20)}\n\n{small_code}\n\n{big_code}\n\n{prose(20, 2)}\n\n## Table\n\n{table}\n"
    chunks = chunk(body, counter)
    big = [c for c in chunks if big_code in c.text]
    assert len(big) == 1 and big[0].oversized and big[0].block_types == ["code"]
    assert big[0].text == big_code  # alone, never merged with the prose around it
    assert sum(small_code in c.text for c in chunks) == 1
    tab = [c for c in chunks if table in c.text]
    assert len(tab) == 1 and tab[0].oversized and tab[0].text == f"## Table\n\n{table}"
    assert tab[0].block_types == ["heading", "table"]
    for c in chunks:
        assert c.token_count <= ChunkingConfig().max_tokens or (c.oversized and {"code", "table"} & set(c.block_types))


def test_big_admonition_is_split_as_prose(counter: TokenCounter) -> None:
    adm = ":::note\n" + "\n\n".join(prose(60, s) for s in range(6)) + "\n:::"
    chunks = chunk(f"# Notes\n\n{adm}\n", counter)
    assert len(chunks) > 1 and not any(c.oversized for c in chunks)
    assert all("admonition" in c.block_types for c in chunks)
    assert [w for c in chunks for w in words(c.text)][2:] == words(adm)


def test_small_trailing_piece_is_merged(counter: TokenCounter) -> None:
    cfg = ChunkingConfig(min_tokens=40, target_tokens=100, max_tokens=200)
    # Two paragraphs: the second alone would be a runt after the first fills the target.
    body = f"{prose(22, 1)}\n\n{prose(3, 2)}\n"  # ~91 and ~12 tokens
    chunks = chunk(body, counter, cfg)
    assert len(chunks) == 1


def test_small_trailing_piece_is_rebalanced_when_merge_too_big(counter: TokenCounter) -> None:
    cfg = ChunkingConfig(min_tokens=40, target_tokens=100, max_tokens=120)
    paragraphs = [prose(7, s) for s in range(7)]  # ~28 tokens each: greedy gives 3 + 3 + a runt of 1
    chunks = chunk("\n\n".join(paragraphs), counter, cfg)
    assert len(chunks) == 3
    assert all(c.token_count >= cfg.min_tokens for c in chunks)


def test_target_is_the_aim(counter: TokenCounter) -> None:
    cfg = ChunkingConfig()
    chunks = chunk("\n\n".join(prose(10, s) for s in range(60)), counter, cfg)  # ~41 tokens each
    sizes = [c.token_count for c in chunks]
    assert max(sizes) <= cfg.max_tokens
    assert sum(s >= cfg.min_tokens for s in sizes) == len(sizes)
    assert sum(sizes) / len(sizes) > cfg.target_tokens * 0.6


# -- overlap -------------------------------------------------------------------------------------


def test_overlap_within_section_only(counter: TokenCounter) -> None:
    cfg = ChunkingConfig(overlap_tokens=20)
    body = f"# One\n\n{prose(300, 1)}\n\n# Two\n\n{prose(300, 2)}\n"
    chunks = chunk(body, counter, cfg)
    by_section: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_section.setdefault(c.section, []).append(c)
    assert set(by_section) == {"One", "Two"}
    for section, group in by_section.items():
        assert group[0].text.startswith(f"# {section}\n\n")  # a section's first chunk has no overlap
        for prev, cur in zip(group, group[1:]):
            overlap = cur.text.split("\n\n", 1)[0]
            assert overlap and prev.text.endswith(overlap)
            assert 0 < counter.count(overlap) <= cfg.overlap_tokens
            assert words(overlap)[0] in words(prev.text)  # starts on a whole word
    # Without the overlap prefixes the section's words come back exactly once, in order.
    for seed, group in zip((1, 2), (by_section["One"], by_section["Two"])):
        rebuilt = words(group[0].text)[2:] + [w for c in group[1:] for w in words(c.text.split("\n\n", 1)[1])]
        assert rebuilt == words(prose(300, seed))
    assert all(c.token_count <= cfg.max_tokens for c in chunks)


# -- fits ----------------------------------------------------------------------------------------


def test_fits_callback_is_honoured(counter: TokenCounter) -> None:
    def fits(text: str) -> bool:
        return len(text) < 300

    body = f"# Title\n\n## Part\n\n{prose(300, 3)}\n\n```\n{'code line ' * 50}\n```\n"
    chunks = chunk(body, counter, fits=fits)
    for c in chunks:
        assert fits(c.index_text) or (c.oversized and c.block_types[-1] == "code")
    assert any(c.oversized for c in chunks)
    prose_words = [w for c in chunks if "code" not in c.block_types for w in words(c.text)]
    assert prose_words[:2] == ["##", "Part"] and prose_words[2:] == words(prose(300, 3))


def test_fits_with_overlap(counter: TokenCounter) -> None:
    chunks = chunk(prose(400, 4), counter, ChunkingConfig(overlap_tokens=10), fits=lambda t: len(t) < 400)
    assert len(chunks) > 3 and all(len(c.index_text) < 400 for c in chunks)


# -- metadata ------------------------------------------------------------------------------------


def test_metadata_copying_rules(counter: TokenCounter) -> None:
    metadata = {
        "module": "module-1",
        "sidebar_position": 3,
        "weight": 0.5,
        "draft": False,
        "authors": ["ann", "bob"],
        "updated": datetime.date(2024, 5, 1),
        "nested": {"a": 1},
        "mixed": ["ok", {"no": 1}],
        "nothing": None,
        "title": "raw frontmatter title",
    }
    chunks = chunk(f"# H\n\n{prose(300)}", counter, title="My Page", metadata=metadata, tags=["x", "y"])
    assert len(chunks) > 1
    expected = {
        "title": "My Page",
        "description": "A page",
        "tags": "x, y",
        "module": "module-1",
        "sidebar_position": 3,
        "weight": 0.5,
        "draft": False,
        "authors": "ann, bob",
        "updated": "2024-05-01",
    }
    assert all(c.metadata == expected for c in chunks)
    chunks[0].metadata["title"] = "changed"
    assert chunks[1].metadata["title"] == "My Page"  # each chunk has its own copy


# -- robustness ----------------------------------------------------------------------------------


def test_special_token_text_does_not_raise(counter: TokenCounter) -> None:
    chunks = chunk("# <|endoftext|>\n\nsome <|endoftext|> text <|fim_prefix|>\n", counter)
    assert "<|endoftext|>" in chunks[0].text and chunks[0].section == "<|endoftext|>"


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        ChunkingConfig(min_tokens=300)
    with pytest.raises(ValueError):
        ChunkingConfig(overlap_tokens=200)


def test_big_document_chunks_fast(counter: TokenCounter) -> None:
    rows = "\n".join(f"| row {i} | value {i * 3} | note |" for i in range(10_000))
    sections = [f"## S{i}\n\n{prose(150, i)}\n\n```\ncode {i}\n```\n" for i in range(600)]
    body = "# Big\n\n| a | b | c |\n|---|---|---|\n" + rows + "\n\n" + "\n".join(sections)
    blocks = split_markdown(body)
    started = time.process_time()  # CPU time: other work on the machine does not count
    chunks = chunk_document(make_doc(body), blocks, counter, ChunkingConfig(overlap_tokens=20))
    assert time.process_time() - started < 10
    assert chunks[0].oversized and chunks[0].block_types == ["heading", "table"]
    assert len(chunks) > 600


def test_sections_after_a_ten_level_list_are_their_own_chunks(counter: TokenCounter) -> None:
    deep = "\n".join("  " * i + f"- level {i + 1}" for i in range(10))
    body = f"# Setup guide\n\n{deep}\n\n## Installation\n\nRun the installer.\n\n## Uninstall\n\nRemove it.\n"
    chunks = chunk(body, counter)
    assert [c.section for c in chunks] == ["Setup guide", "Installation", "Uninstall"]
    assert "## Installation" not in chunks[0].text and "level 10" in chunks[0].text
    assert chunks[1].heading_breadcrumb == ["Setup guide", "Installation"]
    assert "Run the installer." in chunks[1].text and "Remove it." in chunks[2].text


def test_the_chunker_defaults_are_the_settings_defaults() -> None:
    assert ChunkingConfig.from_settings(Settings.from_env({})) == ChunkingConfig()
    assert ChunkingConfig.from_settings(Settings.from_env({"RAG_CHUNK_MAX_TOKENS": "180"})).max_tokens == 180


def test_a_long_title_or_h1_has_a_header_budget_and_does_not_shred_its_page(caplog):
    import logging
    import time

    from rag_assets.ingest.chunking import HEADER_MAX_CHARS, build_index_text
    from rag_assets.models import ParsedDocument

    counter = TokenCounter.for_name("cl100k_base", None)
    h1 = ("Operating the reactor coolant pumps safely under every plant condition " * 20)[:1200]
    body = f"# {h1}\n\n" + "\n\n".join(
        f"Paragraph {j} explains step {j} of the procedure: " + " ".join(f"detail{j}w{i}" for i in range(44))
        for j in range(10))
    doc = ParsedDocument("long.md", "h", "Long", "", [], {}, body, 1)
    with caplog.at_level(logging.WARNING, logger="rag_assets.ingest.chunking"):
        chunks = chunk_document(doc, split_markdown(body), counter, ChunkingConfig())
    assert 5 <= len(chunks) <= 25  # was 641 with the whole H1 in every chunk's budget
    for chunk in chunks:
        header = chunk.index_text.split("\n\n", 1)[0]
        assert len(header) <= HEADER_MAX_CHARS and header.endswith("…")
        assert chunk.heading_breadcrumb == [h1]  # the metadata keeps the heading whole
    assert any("long.md" in r.getMessage() and "1200 characters" in r.getMessage() for r in caplog.records)
    assert build_index_text("T", ["x" * 5000], "body").startswith("T > " + "x" * 100)

    huge = ParsedDocument("huge.md", "h", "T" * 1_000_000, "", [], {}, "# Also huge " + "H" * 200_000 + "\n\nBody.\n", 1)
    started = time.perf_counter()
    chunk_document(huge, split_markdown(huge.body), counter, ChunkingConfig())
    assert time.perf_counter() - started < 5  # was past 600 s with a 1 MB frontmatter title
