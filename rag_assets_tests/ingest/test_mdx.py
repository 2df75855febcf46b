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
    assert "An image:  here." in out  # an image's alt text is not seen (issue 42, item 8)
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
    out = render_mdx(body, "page.md")
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


def test_command_tabs_keep_each_tools_command_as_a_labelled_code_block():
    """Issue 42, item 2: <CommandTabs npm=… yarn=… cargo=…/> kept none of its values: every plugin page's
    install step was empty."""
    body = ('Install the plugin:\n\n<CommandTabs npm="npm run tauri add autostart" yarn="yarn run tauri add autostart"\n'
            '  cargo="cargo tauri add autostart" />\n\nThen configure it.\n')
    out = render(body)
    assert out.body == ("Install the plugin:\n\nnpm\n\n```sh\nnpm run tauri add autostart\n```\n\n"
                        "yarn\n\n```sh\nyarn run tauri add autostart\n```\n\ncargo\n\n```sh\ncargo tauri add autostart\n```\n\n"
                        "Then configure it.")
    assert not out.unrendered
    # a tab of a package manager's commands, given as a slot of the tabs component, shows its label
    slots = render('<PackageManagerTabs>\n  <Fragment slot="npm">\n  ```sh\n  npm i x\n  ```\n  </Fragment>\n'
                   '</PackageManagerTabs>\n')
    assert slots.body == "npm\n\n```sh\nnpm i x\n```"
    frameworks = render('<UIFrameworkTabs>\n  <Fragment slot="react">\n  Hooks.\n  </Fragment>\n</UIFrameworkTabs>\n\n'
                        '<Card>\n  <Fragment slot="icon">x</Fragment>\n</Card>\n')
    assert frameworks.body == "react\n\nHooks.\n\nx"  # a slot of a tabs component is a tab: its name shows


def test_jsx_expressions_read_as_the_reader_sees_them():
    """Issue 42, item 2: a `{' '}` was left in the text."""
    body = ("Run it{' '}\n<a href=\"/x\">now</a>{\" \"}and{' '}{\"see\"} {frontmatter.title} {/* a note */}.\n\n"
            "Math stays: $x^{2}$ and\n\n$$\n\\frac{a}{b}\n$$\n")
    out = render(body)
    assert out.body == "Run it \nnow and see  .\n\nMath stays: $x^{2}$ and\n\n$$\n\\frac{a}{b}\n$$"
    assert out.unrendered == {"{expression}": 1}
    # in a plain markdown page braces are text; only a string literal is an expression there
    assert render_mdx("Path {item_id} and {' '}.\n", "page.md").body == "Path {item_id} and  ."


def test_code_components_become_fenced_code():
    body = ('<Code code={`const site = "x";\\nexport default site;`} lang="js" title="astro.config.mjs" />\n\n'
            '<CodeBlock language="py" title="app.py">\n  {`print("hi")`}\n</CodeBlock>\n\n'
            '<CodeBlock language="sh">\n  npm run build\n</CodeBlock>\n\n'
            '<Code code={source} lang="ts" />\n')
    out = render("import source from './example.ts?raw';\n\n" + body)
    assert out.body == ('```js title="astro.config.mjs"\nconst site = "x";\nexport default site;\n```\n\n'
                        '```py title="app.py"\nprint("hi")\n```\n\n```sh\nnpm run build\n```')
    assert out.unrendered == {"Code": 1}  # its code is the site's own file, not the page's text


def test_cards_tabs_and_badges_keep_their_text_attributes_as_paragraphs():
    body = ('<CardGrid>\n  <LinkCard title="Deploy" description="Ship your site to a host." href="/deploy/" />\n'
            '  <Card title="Themes" icon="star">\n    Pick one.\n  </Card>\n</CardGrid>\n\n'
            '<Tabs items={["npm", "yarn"]}>\n<Tab>A</Tab>\n</Tabs>\n\n'
            '<Tabs>\n  <TabItem label="macOS">\n    Use brew.\n  </TabItem>\n</Tabs>\n\n'
            'A <Badge text="New" variant="tip" /> feature and <img src="x.png" alt="A diagram"/>.\n')
    out = render(body)
    assert out.body == ("Deploy\n\nShip your site to a host.\n\nThemes\n\nPick one.\n\nnpm · yarn\n\nA\n\n"
                        "macOS\n\nUse brew.\n\nA  New  feature and .")
    assert not out.unrendered


def test_components_whose_text_comes_from_the_sites_code_are_counted_not_indexed():
    body = ("import Since from '~/components/Since.astro';\nimport sites from '../data/showcase.json';\n"
            "import { Image } from 'astro:assets';\nimport shot from './shot.png';\n\n"
            "## Config\n\n<Since v=\"4.0.0\" />\n\nThe option.\n\n<Showcase sites={sites} />\n\n"
            "<Showcase sites={sites}>\n  Featured sites.\n</Showcase>\n\n<Image src={shot} alt=\"A screenshot\" />\n")
    out = render(body)
    assert out.body == "## Config\n\nThe option.\n\nFeatured sites."
    assert out.unrendered == {"Since": 1, "Showcase": 2}  # a picture shows no text: not counted


def test_an_asides_custom_title_replaces_its_type():
    from rag_assets.ingest.document import split_document

    body = '<Aside type="caution" title="Heads up">\n  Back up first.\n</Aside>\n\n<Aside>\n  Plain.\n</Aside>\n'
    blocks, _ = split_document(render(body).body)
    assert [(b.label, b.text) for b in blocks] == [("caution", "Heads up\n\nBack up first."), ("note", "Note\n\nPlain.")]


def test_an_mdx_fence_closes_at_any_indentation_as_mdx_reads_it():
    """A real Starlight page closed a fence 4 columns deeper than it opened: MDX (no indented code) closes
    it there; read as markdown the fence ran on and swallowed the next tab's <Fragment slot="vue"> tags."""
    body = ('<Tabs>\n  <Fragment slot="svelte">\n    ```svelte\n    <form on:submit={submit}></form>\n        ```\n'
            '  </Fragment>\n  <Fragment slot="vue">\n    ```vue\n    <template></template>\n    ```\n  </Fragment>\n</Tabs>\n')
    out = render(body).body
    assert out == ("svelte\n\n```svelte\n<form on:submit={submit}></form>\n```\n\nvue\n\n```vue\n<template></template>\n```")
    assert render_mdx(body, "page.md").body.count("```") == 4  # markdown's own rule is kept for .md
