"""The pure parts of benchmarks/site_fidelity.py and site_words.py: what a reader sees in built HTML, the words of our
chunks (and what is discounted), and the comparison. The script is run by hand on built sites."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return sys.modules[name]


sw = _load("site_words")  # the words a reader sees (pure)
sf = _load("site_fidelity")  # the build's published pages (reads files)


def test_visible_text_keeps_every_tab_and_drops_chrome():
    html = """<html><body><main><div class="sl-markdown-content">
      <h2 id="x">Install<a class="sl-anchor-link" href="#x"><span class="sr-only">Section titled Install</span></a></h2>
      <p>Run <code>npm</code>i<b>t</b>:</p><script>var hidden = 1</script>
      <div role="tabpanel">npm install foo</div><div role="tabpanel" hidden>pnpm add foo</div>
      <div hidden>never shown</div><span aria-hidden="true">icon</span><button>Copy</button>
      <table><tr><td>a</td><td>b</td></tr></table></div></main></body></html>"""
    root = sw.parse_html(html)
    body = sw.find_all(root, "div", cls="sl-markdown-content")[0]
    assert sw.words(sw.visible_text(body)) == ["install", "run", "npmit", "npm", "install", "foo", "pnpm", "add", "foo", "a", "b"]


def test_chunk_words_are_what_a_reader_reads_of_the_markdown():
    text = ('See [the guide](https://example.com/guide-page) and ![a diagram](img/d.png).\n\n'
            '```js title="astro.config.mjs"\nexport default {}\n```\n\n[ref]: https://example.com/x\n_emphasis_ &lt;tag&gt;')
    assert sw.words(sw.reader_markdown(text)) == ["see", "the", "guide", "and", "a", "diagram", "astro", "config", "mjs",
                                                   "export", "default", "emphasis", "lt", "tag", "gt"]


def test_repeated_table_header_overlap_and_title_are_discounted():
    meta = {"heading_breadcrumb": "Page > Options"}
    chunks = [{"text": "## Options\n\n| Name | Type |\n| - | -- |\n| alpha | string |", "meta": {**meta, "chunk_index": 0}},
              {"text": "| Name | Type |\n| --- | --- |\n| beta | number |", "meta": {**meta, "chunk_index": 1}},
              {"text": "beta number one two three\nmore words", "meta": {**meta, "chunk_index": 2}}]
    got = sw.indexed_words(chunks, "Page")
    # the title once (no chunk holds it as "# Page"), the header row once, no word counted twice
    assert got == ["page", "options", "name", "type", "alpha", "string", "beta", "number",
                   "beta", "number", "one", "two", "three", "more", "words"]
    chunks[2]["text"] = "| beta | number |\none two three four five six"
    chunks[1]["text"] = "| Name | Type |\n| --- | --- |\n| beta | number |\none two three four five"
    assert sw.indexed_words(chunks, "# ignored")[-3:] == ["four", "five", "six"]  # a 5-word overlap is dropped


def test_compare_counts_multisets_and_names_lost_and_extra_runs():
    built = sw.words("Install it with npm install foo then run foo")
    ours = sw.words("Install it with then run foo import Tabs from starlight")
    result = sw.compare(built, ours)
    assert result["recall"] == 6 / 9 and result["precision"] == 6 / 10
    assert result["lost"] == ["npm install foo"]
    assert result["extra"] == ["import tabs from starlight"]


def test_docusaurus_pages_of_another_version_are_not_published(tmp_path):
    page = ('<html class="docs-wrapper docs-doc-page docs-version-{v}"><body><article>{banner}'
            '<div class="theme-doc-markdown markdown"><h1>Intro</h1><p>Hello</p></div>'
            '<footer class="theme-doc-footer"><a href="https://x/edit/main/docs/intro.md">Edit this page</a></footer>'
            '</article></body></html>')
    (tmp_path / "docs" / "next" / "intro").mkdir(parents=True)
    (tmp_path / "docs" / "intro").mkdir(parents=True)
    (tmp_path / "docs" / "intro" / "index.html").write_text(page.format(v="1.0", banner=""))
    (tmp_path / "docs" / "next" / "intro" / "index.html").write_text(
        page.format(v="current", banner='<div class="theme-doc-version-banner">unreleased</div>'))
    pages, skipped, _ = sf.built_pages(tmp_path, "docusaurus")
    assert [(p.route, p.text.split(), p.source) for p in pages] == [("/docs/intro", ["Intro", "Hello"], "docs/intro.md")]
    assert skipped == {"other-version": 1}
    assert sf.normalize_route("https://site.dev/docs/intro/index.html") == "/docs/intro"
    # measuring RAG_VERSIONS=all: every version the build holds is published
    pages, skipped, _ = sf.built_pages(tmp_path, "docusaurus", all_versions=True)
    assert sorted((p.route, p.kind) for p in pages) == [("/docs/intro", "docs"), ("/docs/next/intro", "other-version")]


def test_a_fence_shown_inside_a_longer_fence_is_code_not_an_info_string():
    text = '````markdown\n``` mermaid\ngraph LR\n```\n````\nafter'
    assert sw.words(sw.reader_markdown(text)) == ["mermaid", "graph", "lr", "after"]


def test_a_table_shown_as_code_does_not_make_the_real_table_a_repeat():
    code = {"text": "```markdown\n| Method | Description |\n| --- | --- |\n```", "meta": {"chunk_index": 0}}
    table = {"text": "| Method | Description |\n| --- | --- |\n| GET | Fetch |", "meta": {"chunk_index": 1}}
    assert sw.indexed_words([code, table], "") == ["method", "description", "method", "description", "get", "fetch"]


def test_ordered_list_numbers_are_markup_but_numbers_in_text_are_words():
    assert sw.words(sw.reader_markdown("1. Install\n2) Run it 3 times\n> 3. quoted")) == ["install", "run", "it", "3", "times", "quoted"]


def test_an_indented_fence_inside_a_fence_is_code_and_a_tab_fence_is_a_fence():
    shown = '``` title="Tabs"\n=== "C"\n\n    ``` c\n    int main\n    ```\n```\nafter'
    assert sw.words(sw.reader_markdown(shown)) == ["tabs", "c", "c", "int", "main", "after"]
    tab = '=== "C"\n\n    ``` c\n    int main\n    ```\ntext'
    assert sw.words(sw.reader_markdown(tab)) == ["c", "int", "main", "text"]


def test_another_table_with_the_same_header_is_not_a_repeat():
    first = {"text": "| Method | Description |\n| --- | --- |\n| GET | Fetch |\n\nThen centered:", "meta": {"chunk_index": 0}}
    second = {"text": "| Method | Description |\n| :-: | :-: |\n| GET | Fetch |", "meta": {"chunk_index": 1}}
    assert sw.indexed_words([first, second], "") == ["method", "description", "get", "fetch", "then", "centered",
                                                     "method", "description", "get", "fetch"]


MKDOCS_PAGE = ('<html><head>{canonical}</head><body><article class="md-content__inner md-typeset">'
               '<a href="https://github.com/o/r/edit/master/docs/{source}" class="md-content__button">Edit</a>'
               '<h1>{title}</h1><p>Text</p></article></body></html>')


def _mkdocs_build(tmp_path, canonical_origin):
    for folder, source in (("", "index.md"), ("setup", "setup.md")):
        (tmp_path / "site" / folder).mkdir(parents=True, exist_ok=True)
        link = f'<link href={canonical_origin}{folder + "/" if folder else ""} rel=canonical>' if canonical_origin else ""
        (tmp_path / "site" / folder / "index.html").write_text(MKDOCS_PAGE.format(canonical=link, source=source, title=source))
    return tmp_path / "site"


def test_a_build_written_at_its_root_is_published_under_the_base_path_its_canonical_links_name(tmp_path):
    """mkdocs build writes the site at the output folder's root; site_url's path is where it is published."""
    built = _mkdocs_build(tmp_path, "https://o.github.io/proj/")
    pages, _, base = sf.built_pages(built, "mkdocs")
    assert base == "/proj"
    assert sorted((p.route, p.file_route) for p in pages) == [("/proj", "/"), ("/proj/setup", "/setup")]
    # our url (the published one) equals the route; the base path said outright wins
    (tmp_path / "repo" / "docs").mkdir(parents=True)
    for name in ("index.md", "setup.md"):
        (tmp_path / "repo" / "docs" / name).write_text("# " + name + "\n\nText\n")
    chunks = [{"text": "Text", "meta": {"doc_path": "docs/setup.md", "title": "setup.md", "chunk_index": 0,
                                         "url": "https://o.github.io/proj/setup/"}}]
    report = sf.measure(pages, {}, chunks, tmp_path / "repo", "docs", base)
    assert report["summary"]["url_equals_route"] == 1.0 and report["summary"]["base_path"] == "/proj"
    assert [p.route for p in sf.built_pages(built, "mkdocs", base_path="")[0]] == ["/", "/setup"]


def test_without_canonical_links_the_base_path_comes_from_our_urls_of_the_same_sources(tmp_path):
    built = _mkdocs_build(tmp_path, "")
    pages, _, base = sf.built_pages(built, "mkdocs")
    assert base is None and sorted(p.route for p in pages) == ["/", "/setup"]
    (tmp_path / "repo" / "docs").mkdir(parents=True)
    chunks = []
    for name, url in (("index.md", "https://o.github.io/proj/"), ("setup.md", "https://o.github.io/proj/setup/")):
        (tmp_path / "repo" / "docs" / name).write_text("# " + name + "\n\nText\n")
        chunks.append({"text": "Text", "meta": {"doc_path": "docs/" + name, "title": name, "chunk_index": 0, "url": url}})
    summary = sf.measure(pages, {}, chunks, tmp_path / "repo", "docs", base)["summary"]
    assert (summary["base_path"], summary["base_path_from"], summary["url_equals_route"]) == ("/proj", "our urls", 1.0)
    assert summary["page_precision"] == summary["page_recall"] == 1.0


def test_a_footnote_is_text_and_a_code_block_shows_its_links_whole():
    text = ("Numbers[^1] grew.\n\n[^1]:\n    We collected feedback.\n[^2]: Also this.\n[ref]: https://x.dev/y\n\n"
            "``` markdown\n[![Badge](https://img.shields.io/badge/x)](https://x.dev/)\n```")
    assert sw.words(sw.reader_markdown(text)) == ["numbers", "1", "grew", "we", "collected", "feedback", "also", "this",
                                                   "badge", "https", "img", "shields", "io", "badge", "x",
                                                   "https", "x", "dev"]
