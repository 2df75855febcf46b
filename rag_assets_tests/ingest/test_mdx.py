"""rag_assets.ingest.mdx: MDX rendered to the markdown a reader of the page sees."""

from __future__ import annotations

import time

from rag_assets.ingest.markdown import split_markdown
from rag_assets.ingest.mdx import find_imports, lex_tag, render_mdx
from rag_assets.models import BlockType


def render(body: str, snippets: dict[str, str] | None = None):
    snippets = snippets or {}

    def load(source: str, importer: str):
        path = source.lstrip("/")
        return (path, snippets[path]) if path in snippets else None

    return render_mdx(body, "page.mdx", load)


def test_import_and_export_statements_are_dropped_and_bind_snippets():
    body = (
        "import Tabs from '@theme/Tabs';\n"
        "import {\n  Alpha,\n  Beta as B,\n} from '../components';\n"
        "import Example from '/snippets/example.mdx'\n"
        "export const meta = {\n  title: 'x',\n}\n\n"
        "Text.\n"
    )
    assert [(i.source, i.default_name) for i in find_imports(body)] == [
        ("@theme/Tabs", "Tabs"), ("../components", None), ("/snippets/example.mdx", "Example")]
    assert render(body).body == "Text."


def test_prose_starting_with_import_and_code_are_left_alone():
    body = (
        "import the data first, then index it.\n\n"
        "```python\nimport json\nfrom x import y\nexport = 1\n<Card>\n```\n\n"
        "export your settings with the dump route.\n"
    )
    assert render(body).body == body
    assert not render(body).changed


def test_components_are_unwrapped_children_and_prose_attributes_kept():
    body = (
        '<CardGroup cols={2}>\n'
        '  <Card title="Search" icon="magnifying-glass" href="/learn/search">\n'
        '    Learn how to search.\n'
        '  </Card>\n'
        '  <Card\n    title="Indexing"\n    href={`/learn/${x > 1 ? "a" : "b"}`}\n  >\n'
        '    Add documents.\n'
        '  </Card>\n'
        '</CardGroup>\n'
    )
    out = render(body)
    assert out.body == "Search\n\nLearn how to search.\n\nIndexing\n\nAdd documents."
    assert out.warnings == []


def test_children_are_dedented_so_they_do_not_become_indented_code():
    body = '<Tabs>\n  <TabItem value="a" label="Apple" default>\n    ```js\n    const x = 1;\n      nested();\n    ```\n  </TabItem>\n</Tabs>\n'
    out = render(body).body
    assert out == "Apple\n\n```js\nconst x = 1;\n  nested();\n```"
    assert [b.type for b in split_markdown(out)] == [BlockType.PROSE, BlockType.CODE]


def test_callouts_become_labelled_admonitions():
    body = "<Warning>\n  Keys are secret.\n</Warning>\n\n<Admonition type=\"tip\" title=\"Faster\">\nBatch it.\n</Admonition>\n"
    blocks = split_markdown(render(body).body)
    assert [(b.type, b.label) for b in blocks] == [(BlockType.ADMONITION, "warning"), (BlockType.ADMONITION, "tip")]
    assert "Keys are secret." in blocks[0].text and "Faster" in blocks[1].text and "Batch it." in blocks[1].text


def test_inline_tags_code_spans_comments_and_non_tags():
    body = (
        "Use <Tooltip tip=\"full-text search\">FTS</Tooltip> with `<Card>` literally, a < b, x<y, "
        "and <https://example.com> or <me@example.com>.\n\n"
        "{/* hidden */}<!-- also hidden -->\n"
        "An image: <img src=\"a.png\" alt=\"Search results page\"> here.<br/>\n"
    )
    out = render(body).body
    assert out.startswith("Use FTS with `<Card>` literally, a < b, x<y, and <https://example.com> or <me@example.com>.")
    assert "hidden" not in out
    assert "An image:  Search results page  here." in out
    assert "<" not in out.split("\n")[-1]


def test_a_gt_inside_an_attribute_expression_does_not_end_the_tag():
    tag = lex_tag('<Card href={a > b ? "x>" : `y>`} title="T">', 0)
    assert tag is not None and tag.kind == "open" and tag.attrs["title"] == "T"
    assert lex_tag("<not a tag because=", 0) is None
    assert lex_tag("</Close>", 0).kind == "close"
    assert lex_tag("<Self />", 0).kind == "self"


def test_snippets_are_expanded_in_place_recursively():
    snippets = {
        "snippets/a.mdx": "---\ntitle: ignored\n---\nimport B from '/snippets/b.mdx';\n\nSnippet A.\n\n<B />\n",
        "snippets/b.mdx": "<CodeGroup>\n\n```bash cURL\ncurl x\n```\n\n```python Python\nclient.x()\n```\n\n</CodeGroup>\n",
    }
    out = render("import A from '/snippets/a.mdx';\n\nBefore.\n\n<A />\n\nAfter.\n", snippets)
    assert out.body == "Before.\n\nSnippet A.\n\n```bash cURL\ncurl x\n```\n\n```python Python\nclient.x()\n```\n\nAfter."
    assert out.snippets == ["snippets/a.mdx", "snippets/b.mdx"]
    assert out.body.count("curl x") == 1


def test_malformed_mdx_degrades_to_text_with_warnings_naming_the_file():
    out = render("import Missing from '/snippets/missing.mdx';\n\n<Missing />\n\n</Stray>\n\n<Open>\nText stays.\n")
    assert "Text stays." in out.body and "<" not in out.body
    assert out.warnings == [
        "page.mdx: snippet /snippets/missing.mdx not found under the docs folder",
        "page.mdx: stray closing tag </Stray>",
        "page.mdx: <Open> is never closed",
    ]
    # an unterminated attribute string is not a tag: the text is kept as it was
    assert render('<Card title="never closed\n\nText.\n').body == '<Card title="never closed\n\nText.\n'


def test_a_snippet_that_imports_itself_is_not_expanded_forever():
    snippets = {"snippets/loop.mdx": "import L from '/snippets/loop.mdx';\n\nLoop.\n\n<L />\n"}
    out = render("import L from '/snippets/loop.mdx';\n\n<L />\n", snippets)
    assert out.body == "Loop."
    assert any("imports itself" in w for w in out.warnings)


def test_plain_markdown_is_returned_unchanged():
    body = "# Title\n\nJust text with {braces} and a -> arrow.\n"
    out = render(body)
    assert out.body == body and not out.changed


def test_time_is_linear_on_hostile_input():
    body = "<A " * 20_000 + "\n" + "`" * 5_000 + "\n" + "<B>" * 20_000
    start = time.perf_counter()
    render(body)
    assert time.perf_counter() - start < 10


def test_an_inline_component_keeps_its_title_and_a_tooltip_its_place():
    """Issue 36, item 10: an inline <Card title="…"> lost its title."""
    out = render('See <Card title="Quickstart guide" href="/q">the first steps</Card> and <Tooltip tip="hover">FTS</Tooltip>.\n')
    assert out.body == "See  Quickstart guide the first steps and FTS."


def test_prose_that_starts_lines_with_import_is_found_once_and_statements_still_parse():
    body = "import the data\n" * 2000 + "\nimport A from\n  './a.mdx';\nimport \n  './side-effect.css'\nimport B, { c } from \"./b.md\"\n\nText.\n"
    imports = find_imports(body)
    assert [(i.source, i.default_name) for i in imports] == [
        ("./a.mdx", "A"), ("./side-effect.css", None), ("./b.md", "B")]
    assert render(body).body.startswith("import the data\nimport the data")
