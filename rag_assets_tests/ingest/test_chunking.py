"""chunk_document: heading-aware, token-sized chunks that never lose text."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

import pytest

from rag_assets.ingest.chunking import ChunkingConfig, ChunkingStats, build_index_text, chunk_document
from rag_assets.config import Settings
from rag_assets.ingest.markdown import split_markdown
from rag_assets.ingest.mdx import render_mdx
from rag_assets.vocabulary.markup import indexable_text
from rag_assets.models import Chunk, ParsedDocument
from rag_assets.ingest.tokens import TokenCounter
from rag_assets_tests.support import real_pages

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
        ("Guide", ["Guide"]),  # the page intro is filed under the page title
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


def test_code_and_table_fit_whole_or_are_split_into_valid_pieces(counter: TokenCounter) -> None:
    big_code = "```python\n" + "\n".join(f"value_{i} = compute({i}, 'x')" for i in range(120)) + "\n```"
    small_code = "```bash\npip install rag\n```"
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {prose(3, i)} |" for i in range(80))
    body = f"# Code\n\n{prose(20)}\n\n{small_code}\n\n{big_code}\n\n{prose(20, 2)}\n\n## Table\n\n{table}\n"
    chunks = chunk(body, counter)
    assert not any(c.oversized for c in chunks)
    assert all(c.token_count <= ChunkingConfig().max_tokens for c in chunks)
    assert sum(small_code in c.text for c in chunks) == 1  # a block that fits stays whole
    code = [c for c in chunks if "value_" in c.text]
    assert len(code) > 2 and all(c.block_types == ["code"] for c in code)
    assert all(c.text.startswith("```python\n") and c.text.endswith("\n```") for c in code)
    assert [line for c in code for line in c.text.split("\n")[1:-1]] == big_code.split("\n")[1:-1]
    tab = [c for c in chunks if c.section == "Table"]
    assert len(tab) > 2 and tab[0].text.startswith("## Table\n\n| a | b |\n|---|---|\n")
    assert tab[0].block_types == ["heading", "table"]
    assert all(c.text.startswith("| a | b |\n|---|---|\n") for c in tab[1:])


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
    assert all(fits(c.index_text) and not c.oversized for c in chunks)
    prose_words = [w for c in chunks if "code" not in c.block_types for w in words(c.text)]
    # the H1 has no body of its own: the first chunk under "Part" says both headings, as the page shows them
    assert prose_words[:4] == ["#", "Title", "##", "Part"] and prose_words[4:] == words(prose(300, 3))
    # The code block fits max_tokens but not `fits`: cut (its one line at words), each piece fenced.
    code = [c for c in chunks if "code" in c.block_types]
    assert len(code) > 1 and all(c.text.startswith("```\n") and c.text.endswith("\n```") for c in code)
    assert [w for c in code for w in words(c.text) if w != "```"] == words("code line " * 50)


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
    assert chunks[0].block_types == ["heading", "table"] and not any(c.oversized for c in chunks)
    assert chunks[0].text.startswith("# Big\n\n| a | b | c |\n|---|---|---|\n| row 0 |")
    assert len(chunks) > 1000


def test_sections_after_a_ten_level_list_are_their_own_chunks(counter: TokenCounter) -> None:
    deep = "\n".join("  " * i + f"- level {i + 1}" for i in range(10))
    body = f"# Setup guide\n\n{deep}\n\n## Installation\n\nRun the installer.\n\n## Uninstall\n\nRemove it.\n"
    chunks = chunk(body, counter)
    assert [c.section for c in chunks] == ["Setup guide", "Installation", "Uninstall"]
    assert "## Installation" not in chunks[0].text and "level 10" in chunks[0].text
    assert chunks[1].heading_breadcrumb == ["Setup guide", "Installation"]
    assert "Run the installer." in chunks[1].text and "Remove it." in chunks[2].text


def test_the_chunker_defaults_are_the_settings_defaults() -> None:
    assert ChunkingConfig.from_settings(Settings.from_env({}).chunking) == ChunkingConfig()
    assert ChunkingConfig.from_settings(Settings.from_env({"RAG_CHUNK_MAX_TOKENS": "180"}).chunking).max_tokens == 180


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


# -- boundaries a reader would draw --------------------------------------------------------------


def code_block(n: int, lang: str = "python") -> str:
    return f"```{lang}\n" + "\n".join(f"value_{i} = compute({i}, 'x')" for i in range(n)) + "\n```"


def holding(chunks: list[Chunk], text: str) -> Chunk:
    (found,) = [c for c in chunks if text in c.text]
    return found


def test_a_lead_in_stays_with_the_code_it_introduces(counter: TokenCounter) -> None:
    lead_in = "Pin a specific version, e.g., with:"
    code = "```bash\n" + "\n".join(f"pip install tool-{i}==1.2.{i}" for i in range(4)) + "\n```"
    chunks = chunk(f"## Install\n\n{prose(20, 1)}\n\n{lead_in}\n\n{code}\n", counter)
    # before: the prose and the lead-in filled the first chunk (ending in ":"), the code was the next
    assert holding(chunks, code).text == f"{lead_in}\n\n{code}"
    assert not any(c.text.endswith(":") for c in chunks)


def test_a_lead_in_stays_with_the_table_it_introduces(counter: TokenCounter) -> None:
    lead_in = "Applies seven ranking rules in this order by default:"
    table = "| rule | meaning |\n|---|---|\n" + "\n".join(f"| r{i} | {prose(2, i)} |" for i in range(4))
    chunks = chunk(f"## Ranking\n\n{prose(20, 1)}\n\n{lead_in}\n\n{table}\n", counter)
    assert holding(chunks, table).text == f"{lead_in}\n\n{table}"
    assert holding(chunks, table).block_types == ["prose", "table"]


def test_a_lead_in_stays_with_the_list_it_introduces_inside_prose(counter: TokenCounter) -> None:
    items = "\n".join(f"- option {i}: {prose(5, i)}" for i in range(3))
    body = f"{prose(20, 1)}\n\nThe options are as follows\n\n{items}\n"
    chunks = chunk(body, counter)
    assert holding(chunks, items).text.startswith("The options are as follows\n\n- option 0")
    # A lead-in line inside one paragraph that has to be cut stays with the line after it.
    lines = "\n".join([prose(20, 2), "Run these steps:", *(f"- step {i} {prose(6, i)}" for i in range(6))])
    chunks = chunk(lines, counter)
    assert len(chunks) > 1 and not any(c.text.endswith(":") for c in chunks)
    assert "Run these steps:\n- step 0" in holding(chunks, "Run these steps:").text


def test_a_lead_in_goes_with_the_first_piece_of_an_oversized_code_block(counter: TokenCounter) -> None:
    big = code_block(40)
    chunks = chunk(f"## Run\n\n{prose(20, 1)}\n\nRun this:\n\n{big}\n", counter)
    first = holding(chunks, "value_0 =")
    assert first.text.startswith("Run this:\n\n```python\nvalue_0 =") and not first.oversized
    assert not any(c.text.endswith(":") for c in chunks)
    assert all(c.token_count <= ChunkingConfig().max_tokens for c in chunks)


def test_a_lead_in_paragraph_lends_its_last_sentence_to_a_code_block_that_fits_alone(counter: TokenCounter) -> None:
    code = code_block(10)  # ~114 tokens: no room for the whole paragraph before it
    chunks = chunk(f"## About\n\n{prose(12, 1)} It looks like this:\n\n{code}\n", counter)
    assert holding(chunks, code).text == f"It looks like this:\n\n{code}"  # the block is not cut
    assert holding(chunks, prose(12, 1)).text.endswith(prose(12, 1))


# FastAPI's docs (MkDocs): the sections of fa-043 and fa-052 of data/samples/fastapi/eval.jsonl.
CALLBACK_ROUTER = """### Add the callback router { #add-the-callback-router }

At this point you have the *callback path operation(s)* needed (the one(s) that the *external developer*  should implement in the *external API*) in the callback router you created above.

Now use the parameter `callbacks` in *your API's path operation decorator* to pass the attribute `.routes` from that callback router:

{* ../../docs_src/openapi_callbacks/tutorial001_py310.py hl[33] *}

/// tip

Notice that you are not passing the router itself (`invoices_callback_router`) to `callbacks=`, but its `.routes`, as in `invoices_callback_router.routes`. FastAPI will use those routes to generate the callback OpenAPI documentation.

///
"""

SAME_DEPENDENCY = """## Using the same dependency multiple times { #using-the-same-dependency-multiple-times }

If one of your dependencies is declared multiple times for the same *path operation*, for example, multiple dependencies have a common sub-dependency, **FastAPI** will know to call that sub-dependency only once per request.

And it will save the returned value in a "cache" and pass it to all the "dependants" that need it in that specific request, instead of calling the dependency multiple times for the same request.

In an advanced scenario where you know you need the dependency to be called at every step (possibly multiple times) in the same request instead of using the "cached" value, you can set the parameter `use_cache=False` when using `Depends`:

//// tab | Python 3.10+

```Python hl_lines="1"
async def needy_dependency(fresh_value: Annotated[str, Depends(get_value, use_cache=False)]):
    return {"fresh_value": fresh_value}
```

////
"""


def test_an_include_directive_takes_no_room_toward_the_target(counter: TokenCounter) -> None:
    # The include line (22 tokens of path) is dropped from the indexed text; counted, it pushed the
    # lead-in and its include out of the chunk under the heading, which kept only the first paragraph.
    chunks = chunk(CALLBACK_ROUTER, counter)
    first = holding(chunks, "Now use the parameter `callbacks`")
    assert first.text.startswith("### Add the callback router") and "At this point" in first.text
    assert first.text.endswith("{* ../../docs_src/openapi_callbacks/tutorial001_py310.py hl[33] *}")
    assert holding(chunks, "/// tip").text.startswith("/// tip")
    assert not any(c.text.endswith(":") for c in chunks)  # the lead-in still shares its include's chunk


def test_a_heading_anchor_takes_no_room_toward_the_target(counter: TokenCounter) -> None:
    # `{ #using-the-same-dependency-multiple-times }` is not indexed: counted, it kept the second
    # paragraph out of the first chunk, and it stood alone (42 tokens) before the lead-in and its tab.
    chunks = chunk(SAME_DEPENDENCY, counter)
    assert holding(chunks, 'And it will save the returned value').text.startswith("## Using the same dependency")
    assert holding(chunks, "//// tab").text.startswith("In an advanced scenario")
    assert len(chunks) == 2


def test_boundaries_do_not_depend_on_markup_the_index_drops(counter: TokenCounter) -> None:
    paragraphs = [prose(7, i) for i in range(10)]
    include = "{* ../../docs_src/dependencies/tutorial008_an_py310.py hl[3:7,12] *}"
    plain = "## Settings\n\n" + "\n\n".join(paragraphs)
    marked = "## Settings { #settings-and-environment-variables }\n\n" + "\n\n".join(
        p + (f"\n\n{include}" if i in (1, 4) else "") for i, p in enumerate(paragraphs))
    indexed = [[indexable_text(c.text) for c in chunk(body, counter)] for body in (plain, marked)]
    assert indexed[0] == indexed[1] and len(indexed[0]) > 2


def test_a_long_paragraph_ending_in_a_lead_in_lends_its_last_line_to_the_list(counter: TokenCounter) -> None:
    # claude-docs' quickstart: a paragraph's last line introduces a list too big to share a chunk with
    # the whole paragraph; before, the paragraph ended its chunk in ":" and the list began the next.
    lead_in = "The ocean is salty due to several factors:"
    items = "\n".join(f"{i}. Factor {i}: {prose(14, i)}" for i in range(1, 6))
    body = f"## Start with the Workbench\n\n{prose(20, 7)}\n\n{prose(18, 8, 18)}\n{lead_in}\n\n{items}\n"
    chunks = chunk(body, counter)
    assert not any(c.text.endswith(":") for c in chunks)
    assert holding(chunks, lead_in).text.startswith(f"{lead_in}\n\n1. Factor 1:")
    assert holding(chunks, prose(18, 8, 18)).text.endswith(prose(18, 8, 18))  # the rest stays behind


def test_a_small_chunk_in_the_middle_of_a_section_joins_a_neighbour(counter: TokenCounter) -> None:
    note = "Both blocks print the same values."
    chunks = chunk(f"## Steps\n\n{code_block(20)}\n\n{note}\n\n{code_block(20, 'py')}\n", counter)
    # before: each oversized block alone, and the note alone (8 tokens) between them
    assert all(c.token_count >= ChunkingConfig().min_tokens for c in chunks)
    assert "code" in holding(chunks, note).block_types
    # A remainder left by the exact size check (here the embedder's `fits`) leads the next chunk.
    paragraphs = [prose(7, 1), prose(7, 2), prose(3, 3), prose(7, 4), prose(7, 5), prose(7, 6)]  # 30, 29, 14, ...
    chunks = chunk("\n\n".join(paragraphs), counter, fits=lambda text: counter.count(text) <= 70)
    assert [c.token_count for c in chunks] == [60, 44, 60]  # before: 60, 14, ...


def test_the_page_intro_is_filed_under_the_page_title(counter: TokenCounter) -> None:
    body = f"{prose(12, 1)}\n\n## Next\n\n{prose(12, 2)}\n"
    intro, nxt = chunk(body, counter, title="Pumps { #pumps }")
    assert (intro.section, intro.heading_breadcrumb) == ("Pumps", ["Pumps"])
    assert intro.index_text == f"Pumps\n\n{prose(12, 1)}"  # the title is said once
    # no H1 opens the body: the site shows the title as the page's H1, breadcrumbs start with it, and
    # the index text's header still says it once
    assert nxt.heading_breadcrumb == ["Pumps", "Next"] and nxt.section == "Next"
    assert nxt.index_text.startswith("Pumps > Next\n\n")
    untitled = chunk(body, counter, title="")[0]
    assert (untitled.section, untitled.heading_breadcrumb) == ("", [])


def test_a_heading_with_nothing_under_it_is_said_by_the_first_chunk_below_it(counter: TokenCounter) -> None:
    """Issue 42, item 8: on a real Docusaurus site "Requirements", "Design", "Appendix" were lost: a heading
    whose section holds only subsections (or only a picture) made no chunk, so its words were in no chunk."""
    body = f"## Requirements\n\n### Functional\n\n{prose(12, 1)}\n\n## Empty\n\n## Next\n\n{prose(12, 2)}\n"
    chunks = chunk(body, counter, title="Design")
    assert [c.text.split("\n\n")[:2] for c in chunks] == [["## Requirements", "### Functional"], ["## Empty", "## Next"]]
    assert chunks[0].heading_breadcrumb == ["Design", "Requirements", "Functional"]
    # the page's title as its H1 is in every chunk's header already: not repeated in the text
    titled = chunk(f"# Design\n\n## Part\n\n{prose(12, 1)}\n", counter, title="Design")
    assert titled[0].text.startswith("## Part\n\n")


def test_the_title_starts_the_breadcrumbs_unless_an_h1_opens_the_body(counter: TokenCounter) -> None:
    """Issue 42, item 8: a frontmatter title was missing from the breadcrumbs ("— Building" instead of
    "Build > Building"); a body whose first heading is an H1 keeps that H1 as the page's heading."""
    titled = chunk(f"## Building\n\n{prose(12, 1)}\n\n### Flags\n\n{prose(12, 2)}\n", counter, title="Build")
    assert [c.heading_breadcrumb for c in titled] == [["Build", "Building"], ["Build", "Building", "Flags"]]
    assert [c.index_text.split("\n")[0] for c in titled] == ["Build > Building", "Build > Building > Flags"]
    own_h1 = chunk(f"# Building things\n\n{prose(12, 1)}\n\n## Flags\n\n{prose(12, 2)}\n", counter, title="Build")
    assert [c.heading_breadcrumb for c in own_h1] == [["Building things"], ["Building things", "Flags"]]


@pytest.mark.parametrize("closing", ["\n```", ""])
def test_an_oversized_python_block_is_split_into_fenced_pieces(counter: TokenCounter, closing: str) -> None:
    lines = ["def handle(event):"]
    for i in range(40):
        lines += [f"    if event == {i}:", f"        return compute_value({i}, label='case {i}')"]
    code = "```python title=\"handler.py\"\n" + "\n".join(lines) + closing
    body = f"## Listing\n\n{code}\n\n## After\n\n{prose(10)}\n"
    stats = ChunkingStats()
    doc = make_doc(body)
    chunks = chunk_document(doc, split_markdown(body), counter, ChunkingConfig(), stats=stats)
    check_common(chunks, doc, counter, ChunkingConfig())
    pieces = [c for c in chunks if c.section == "Listing"]
    assert len(pieces) > 2 and stats.blocks_split == 1
    assert pieces[0].text.startswith("## Listing\n\n```python title=\"handler.py\"\n")
    bodies = [p.text.removeprefix("## Listing\n\n") for p in pieces]
    for k, (text, piece) in enumerate(zip(bodies, pieces)):
        # every piece is closed, even when the source's fence is not; the title is read once, above the
        # first piece (issue 42: a split code block repeated its title as text in every piece)
        opening = "```python title=\"handler.py\"\n" if k == 0 else "```python\n"
        assert text.startswith(opening) and text.endswith("\n```")
        assert piece.token_count <= ChunkingConfig().max_tokens and not piece.oversized
    assert [line for text in bodies for line in text.split("\n")[1:-1]] == lines  # indentation kept, nothing lost
    again = chunk_document(doc, split_markdown(body), counter, ChunkingConfig())
    assert [c.text for c in again] == [c.text for c in chunks]  # deterministic


def test_an_oversized_table_is_split_with_its_header_repeated(counter: TokenCounter) -> None:
    header = "| name | value | note |\n|:-----|------:|------|"
    rows = [f"| n{i} | {i * 7} | {prose(4, i)} |" for i in range(60)]
    stats = ChunkingStats()
    body = f"## Limits\n\n" + header + "\n" + "\n".join(rows) + "\n"
    chunks = chunk_document(make_doc(body), split_markdown(body), counter, ChunkingConfig(), stats=stats)
    assert len(chunks) > 2 and stats.blocks_split == 1 and not any(c.oversized for c in chunks)
    bodies = [c.text.removeprefix("## Limits\n\n") for c in chunks]
    assert chunks[0].text.startswith("## Limits\n\n")
    assert all(b.startswith(header + "\n| n") for b in bodies)
    assert [line for b in bodies for line in b.split("\n")[2:]] == rows


def test_a_table_is_split_between_rows_never_inside_one(counter: TokenCounter) -> None:
    """Issue 42, item 8: a table row longer than a chunk was cut in two; a reader needs a row whole.
    It stays whole under the repeated header row, a piece of its own over the limit if it must."""
    header = "| option | meaning |\n|---|---|"
    rows = [f"| o{i} | {prose(6, i)} |" for i in range(12)]
    rows[5] = f"| long | {prose(170, 99)} |"  # ~200 tokens: more than a whole chunk
    body = "## Options\n\n" + header + "\n" + "\n".join(rows) + "\n"
    chunks = chunk(body, counter)
    bodies = [c.text.removeprefix("## Options\n\n") for c in chunks]
    assert all(b.startswith(header + "\n") for b in bodies)  # each piece reads alone
    assert [line for b in bodies for line in b.split("\n")[2:]] == rows  # every row whole, in order
    assert [c.oversized for c in chunks].count(True) == 1


def test_a_code_line_longer_than_a_chunk_is_cut_at_words_inside_fences(counter: TokenCounter) -> None:
    line = " ".join(f"arg{i}=value{i}" for i in range(150))
    chunks = chunk(f"```sh\ncommand {line}\n```\n", counter)
    assert len(chunks) > 2 and all(c.text.startswith("```sh\n") and c.text.endswith("\n```") for c in chunks)
    assert [w for c in chunks for w in words(c.text)[1:-1]] == words(f"command {line}")


def test_run_chunk_counts_the_blocks_it_split(tmp_path, counter: TokenCounter) -> None:
    from rag_assets.index.stage_store import StageStore
    from rag_assets.ingest.discovery import discover
    from rag_assets.ingest.stages import chunking_fingerprint, run_chunk, run_parse, run_split

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.md").write_text(f"# Big\n\n{code_block(40)}\n\n## Table\n\n| a | b |\n|---|---|\n"
                                 + "\n".join(f"| {i} | {prose(4, i)} |" for i in range(40)) + "\n")
    (docs / "small.md").write_text(f"# Small\n\n{code_block(3)}\n")
    refs = discover(docs).documents
    stages = StageStore(tmp_path / "state")
    run_parse(refs, stages)
    run_split(refs, stages)
    fingerprint = chunking_fingerprint(ChunkingConfig(), "cl100k_base", "m", 256)
    report = run_chunk(refs, stages, counter, ChunkingConfig(), None, fingerprint)
    assert report.stats["blocks_split"] == 2 and report.stats["oversized_chunks"] == 0
    assert report.per_document["big.md"]["blocks_split"] == 2 and report.per_document["small.md"]["blocks_split"] == 0


# -- code inside lists, quotes and tabs keeps its fences (issue 34, item 7) -----------------------------
def _page_fences(text: str) -> list[list[str]]:
    """The raw lines of every fenced code block of a page, as markdown-it parses it."""
    from markdown_it import MarkdownIt

    lines = text.split("\n")
    return [lines[t.map[0] : t.map[1]] for t in MarkdownIt("commonmark").parse(text) if t.type == "fence"]


_UNTITLED = re.compile(r"^((?:[ \t]*>)*[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(?:`{3,}|~{3,})[\w+#.-]*).*$")


def _code_regions(text: str, page: list[list[str]]) -> tuple[list[tuple[list[str], bool]], list[str]]:
    """(code regions, lines outside them) of a chunk or context: a region opens at a line that is a page
    fence's opening line, verbatim (indentation, list marker and "> " included), and closes at that
    fence's closing line. A chunk cut in a code block without its fence, or a fence line re-indented,
    leaves code outside every region."""
    closers: dict[str, set[str]] = {}
    for raw in page:
        closers.setdefault(raw[0], set()).add(raw[-1])
        # a later piece of a split block opens without the block's title (the language stays)
        closers.setdefault(_UNTITLED.sub(r"\1", raw[0]), set()).add(raw[-1])
    regions: list[tuple[list[str], bool]] = []
    outside: list[str] = []
    current: list[str] | None = None
    for line in text.split("\n"):
        if current is None:
            if line in closers:
                current = [line]
            else:
                outside.append(line)
        else:
            current.append(line)
            if line in closers[current[0]]:
                regions.append((current, True))
                current = None
    if current is not None:
        regions.append((current, False))
    return regions, outside


@pytest.mark.parametrize("config", [ChunkingConfig(), ChunkingConfig(min_tokens=10, target_tokens=30, max_tokens=45)],
                         ids=["default", "small"])
@pytest.mark.parametrize("name", sorted(real_pages.PAGES))
def test_chunks_and_contexts_of_real_pages_keep_code_inside_its_fences(name, config, counter) -> None:
    """A chunk never starts mid-code without its fence, no fence in a chunk is left open, and a chunk's
    (and a context's) code keeps the page's indentation under the page's own opening fence line."""
    from rag_assets.retrieval.windows import join_texts

    body = render_mdx(real_pages.PAGES[name], name).body
    page = _page_fences(body)
    code = [line for raw in page for line in raw[1:-1] if line.strip(" >")]
    long_code = {line.strip(" >") for line in code if len(line.strip(" >")) > 12}
    chunks = chunk_document(make_doc(body), split_markdown(body), counter, config)
    assert page and len(chunks) > 1
    sections: dict[str, list[str]] = {}
    for chunk in chunks:
        sections.setdefault(chunk.section, []).append(chunk.text)
    for text in [c.text for c in chunks] + [join_texts(texts) for texts in sections.values()]:
        regions, outside = _code_regions(text, page)
        assert not [line for line in outside if line.strip(" >") in long_code], (name, text)
        for lines, closed in regions:
            assert closed, (name, text)
            # each line of code is the page's line, or a piece of one too long for a chunk
            assert all(any(line in page_line for page_line in code) for line in lines[1:-1] if line), (name, lines)
