"""Heading attributes and include directives: left out of section names and the indexed text."""

import pytest

from rag_assets.ingest.chunking import ChunkingConfig, build_index_text, chunk_document
from rag_assets.evaluation.matching import normalize_heading
from rag_assets.ingest.markdown import split_markdown
from rag_assets.vocabulary.markup import clean_heading_lines, drop_include_directives, indexable_text, strip_heading_attributes
from rag_assets.models import ParsedDocument
from rag_assets.ingest.tokens import TokenCounter


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return TokenCounter.for_name("cl100k_base", cache_dir=tmp_path_factory.mktemp("tiktoken"))


@pytest.mark.parametrize(
    "heading, expected",
    [
        ("Use StaticFiles { #use-staticfiles }", "Use StaticFiles"),  # MkDocs
        ("Use `StaticFiles` {#use-staticfiles}", "Use `StaticFiles`"),  # Docusaurus
        ("Install {: #install .section }", "Install"),  # kramdown / Pandoc
        ("Options {#opts .wide data-x=\"1 2\"}", "Options"),
        ("Additional status codes { #additional-status-codes_1 }", "Additional status codes"),
        ("Path parameters {item_id}", "Path parameters {item_id}"),  # a placeholder, not attributes
        ("Sets {a, b}", "Sets {a, b}"),
        ("No attributes", "No attributes"),
        ("{ #only-an-anchor }", ""),
    ],
)
def test_strip_heading_attributes(heading, expected):
    assert strip_heading_attributes(heading) == expected


def test_include_directive_lines_are_dropped_but_inline_braces_stay():
    text = "Mount it:\n\n{* ../../docs_src/static_files/tutorial001_py310.py hl[2,6] *}\n\nThen `{*x*}` inline.\n{!../x.md!}\n"
    assert drop_include_directives(text) == "Mount it:\n\n\nThen `{*x*}` inline.\n"
    assert indexable_text(text) == "Mount it:\n\nThen `{*x*}` inline."
    assert indexable_text("plain text\n\n\n\nstays as it is  ") == "plain text\n\n\n\nstays as it is  "


def test_heading_lines_cleaned_outside_code_fences_only():
    text = "## Use StaticFiles { #use-staticfiles }\n\n```python\n# keep {#this}\n```\n### Mounting {#mounting}"
    assert clean_heading_lines(text) == "## Use StaticFiles\n\n```python\n# keep {#this}\n```\n### Mounting"


def test_chunks_carry_clean_sections_and_index_text_but_keep_the_source(counter):
    body = (
        "# Static Files { #static-files }\n\nServe files from a directory.\n\n"
        "## Use StaticFiles { #use-staticfiles }\n\nMount a StaticFiles instance on a path.\n\n"
        "{* ../../docs_src/static_files/tutorial001_py310.py hl[2,6] *}\n"
    )
    doc = ParsedDocument("tutorial/static-files.md", "h", "Static Files { #static-files }", "", [], {}, body, 1)
    chunks = chunk_document(doc, split_markdown(body), counter, ChunkingConfig())
    last = chunks[-1]
    assert last.section == "Use StaticFiles"
    assert last.heading_breadcrumb == ["Static Files", "Use StaticFiles"]
    assert last.metadata["title"] == "Static Files"
    assert "{* ../../docs_src" in last.text and "{ #use-staticfiles }" in last.text  # stored verbatim
    assert last.index_text == "Static Files > Use StaticFiles\n\n## Use StaticFiles\n\nMount a StaticFiles instance on a path."
    assert build_index_text(last.metadata["title"], last.heading_breadcrumb, last.text) == last.index_text
    assert "{" not in "".join(c.index_text for c in chunks)
    assert build_index_text("T", ["Section"], "{* ../x.py *}") == "T > Section"  # nothing but a directive


def test_eval_section_rule_ignores_heading_attributes():
    assert normalize_heading("Use `StaticFiles` { #use-staticfiles }") == normalize_heading("Use StaticFiles")
