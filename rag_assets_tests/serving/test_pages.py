"""Pages from stored chunks: anchors as docs sites make them, a page in chunk order, one section with
its subsections, the catalog rebuilt when the generation moves."""

from __future__ import annotations

from rag_assets.serving.pages import PageCatalog, anchor


def test_anchor_is_github_style():
    assert anchor("Server-sent events") == "server-sent-events"
    assert anchor("What's `stream: true`?") == "whats-stream-true"
    assert anchor("") == ""


CHUNKS = [
    ("b", "## Usage\n\nCall it.", {"doc_path": "a.md", "chunk_index": 1, "section": "Usage", "heading_breadcrumb": "A > Usage", "title": "A"}),
    ("a", "# A\n\nIntro.", {"doc_path": "a.md", "chunk_index": 0, "section": "A", "heading_breadcrumb": "A", "title": "A"}),
    ("c", "### Options\n\nFlags.", {"doc_path": "a.md", "chunk_index": 2, "section": "Options", "heading_breadcrumb": "A > Usage > Options", "title": "A"}),
    ("d", "## Other\n\nElse.", {"doc_path": "a.md", "chunk_index": 3, "section": "Other", "heading_breadcrumb": "A > Other", "title": "A"}),
]


def test_page_text_in_chunk_order_and_a_section_with_its_subsections():
    catalog = PageCatalog(lambda: "g1", lambda: CHUNKS)
    page = catalog.page("a.md")
    assert page.text() == "# A\n\nIntro.\n\n## Usage\n\nCall it.\n\n### Options\n\nFlags.\n\n## Other\n\nElse."
    assert page.section_text("usage") == "## Usage\n\nCall it.\n\n### Options\n\nFlags."
    assert page.section_text("#options") == "### Options\n\nFlags."
    assert page.section_text("A > Other") == "## Other\n\nElse."
    assert page.section_text("missing") is None
    assert catalog.page("a") is page  # without the extension


def test_the_catalog_follows_the_generation():
    generation = ["g1"]
    chunks = [CHUNKS]
    catalog = PageCatalog(lambda: generation[0], lambda: chunks[0])
    assert list(catalog.pages()) == ["a.md"]
    chunks[0] = [("x", "# B", {"doc_path": "b.md", "chunk_index": 0, "section": "B", "heading_breadcrumb": "B"})]
    assert list(catalog.pages()) == ["a.md"]  # same generation: the pages it built
    generation[0] = "g2"
    assert list(catalog.pages()) == ["b.md"]
