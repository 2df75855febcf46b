"""rag_assets.ingest.reader_text: blocks read as the reader of the rendered page reads them (entities,
escapes, admonition titles, heading anchors) and emoji shortcodes where the site renders them."""

from __future__ import annotations

import pytest

from rag_assets.ingest.document import split_document
from rag_assets.ingest.reader_text import GITHUB, MATERIAL, emojize
from rag_assets.models import BlockType


def texts(body: str) -> list[tuple[str, str | None, str]]:
    return [(b.type.value, b.label, b.text) for b in split_document(body)[0]]


def test_entities_and_escapes_read_as_the_reader_sees_them_but_not_in_code():
    """Issue 42, item 8: HTML entities (&lt;, &nbsp;) sat in the text of 76 pages of a real site."""
    body = ("Use &lt;Tabs&gt; with 5&nbsp;GB, it&#x27;s &copy; &amp; \\*not emphasis\\* in `&lt;T&gt; \\*`, "
            "a&b and &unknown; stay.\n\n"
            "```html\n&lt;div&gt; \\*\n```\n\n"
            "    indented &amp; code\n")
    (prose, code, indented) = texts(body)
    assert prose[2] == "Use <Tabs> with 5 GB, it's © & *not emphasis* in `&lt;T&gt; \\*`, a&b and &unknown; stay."
    assert code[2] == "```html\n&lt;div&gt; \\*\n```"
    assert indented[2] == "    indented &amp; code"


def test_a_table_keeps_an_escaped_pipe_inside_its_cell():
    body = "| a | b |\n|---|---|\n| x \\| y | &#124; &lt;z&gt; |\n"
    assert texts(body) == [("table", None, "| a | b |\n|---|---|\n| x \\| y | \\| <z> |")]


def test_a_heading_loses_its_attribute_block():
    assert texts("## Use StaticFiles { #use-staticfiles }\n\nText.\n")[0] == ("heading", None, "Use StaticFiles")


@pytest.mark.parametrize("source, label, expected", [
    (":::note[My title]\nBody.\n:::\n", "note", "My title\nBody."),
    (":::tip My title {#anchor}\nBody.\n:::\n", "tip", "My title\nBody."),
    (":::caution\nBody.\n:::\n", "caution", "Caution\nBody."),
    ("::: code-group\n```js\nx\n```\n:::\n", "code-group", "```js\nx\n```"),
    ('!!! note "My title"\n    Body.\n\n    ```py\n    x = 1\n    ```\n', "note", "My title\nBody.\n\n```py\nx = 1\n```"),
    ('!!! warning ""\n    Body.\n', "warning", "Body."),
    ("??? example\n    Body.\n", "example", "Example\nBody."),
    ("/// note | My title\nBody.\n///\n", "note", "My title\nBody."),
    ("/// tab\nBody.\n///\n", "tab", "Body."),
    ('=== "Linux"\n    Body.\n', "tab", "Linux\nBody."),
    ("> [!WARNING]\n> Body.\n", "warning", "> Warning\n> Body."),
])
def test_an_admonition_reads_as_the_title_the_site_shows_then_its_body(source, label, expected):
    """Issue 42, item 8: an admonition's keyword was kept where the reader sees its custom title."""
    assert texts(source) == [("admonition", label, expected)]


def test_nested_admonitions_each_read_their_title():
    body = ":::note[Outer]\nA.\n\n:::tip\nB &amp; C.\n:::\n\n:::\n"
    assert texts(body) == [("admonition", "note", "Outer\nA.\n\nTip\nB & C.")]
    body = '!!! note "Outer"\n    A.\n\n    !!! tip "Inner"\n        B.\n'
    assert texts(body) == [("admonition", "note", "Outer\nA.\n\nInner\nB.")]


def test_emoji_shortcodes_render_as_the_site_renders_them():
    body = "Done :tada: :material-check-bold: at 10:30:45, not `:tada:` nor :no_such_emoji:\n```\n:tada:\n```"
    assert emojize(body, GITHUB) == ("Done 🎉 :material-check-bold: at 10:30:45, not `:tada:` nor :no_such_emoji:\n"
                                     "```\n:tada:\n```")
    assert emojize(body, MATERIAL).startswith("Done 🎉  at 10:30:45")  # an icon is a picture: no words
    assert emojize(body, None) == body


def test_split_blocks_keep_their_types_and_the_structure_the_source_had():
    # an entity or escape that reads as "#" or "|" never makes a heading or a column
    blocks, _ = split_document("&#35; not a heading\n\n\\# nor this\n\n1\\. not a list\n")
    assert [(b.type, b.text) for b in blocks] == [(BlockType.PROSE, "# not a heading\n\n# nor this\n\n1. not a list")]


def test_image_alt_text_and_attribute_lists_are_not_read():
    """Issue 42, item 8: image alt text no reader sees was indexed (a built page shows the picture; the
    alt only when it fails to load), and so were MkDocs attribute lists ({ .md-button })."""
    body = ("![Language selector preview](assets/lang.png){ width=\"300\" }\n\n"
            "[![CI status](https://ci/badge.svg)](https://ci) and ![Funding][funding].\n\n"
            "[Subscribe](#){ .md-button } to the list.\n\n"
            "Keep {item_id}, `![not an image](x)` and { #not-attached }.\n\n"
            "<figure markdown>\n  ![A chart](c.png)\n  <figcaption>Throughput per core</figcaption>\n</figure>\n")
    assert [t for _, _, t in texts(body)] == [
        "[](https://ci) and .\n\n[Subscribe](#) to the list.\n\n"
        "Keep {item_id}, `![not an image](x)` and { #not-attached }.\n\n"
        "<figure markdown>\n  \n  <figcaption>Throughput per core</figcaption>\n</figure>"]
    assert emojize(":octicons-heart-fill-24:{ .heart } Sponsor", MATERIAL) == " Sponsor"
