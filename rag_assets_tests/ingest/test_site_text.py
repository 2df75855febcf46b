"""rag_assets.ingest.site_text: emoji shortcodes become emoji where the page's site renders them."""

from __future__ import annotations

from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document import ParseSettings, parse_document
from rag_assets.ingest.reader_text import GITHUB, MATERIAL
from rag_assets.ingest.site_text import SiteText


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_each_site_renders_shortcodes_as_its_generator_does(tmp_path):
    write(tmp_path / "material/mkdocs.yml", "site_name: M\nmarkdown_extensions:\n  - admonition\n"
          "  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n")
    write(tmp_path / "material/docs/index.md", "# Home\n\nShipped :tada: :material-check:\n")
    write(tmp_path / "plain-mkdocs/mkdocs.yml", "site_name: P\n")
    write(tmp_path / "plain-mkdocs/docs/index.md", "# Home\n\nShipped :tada:\n")
    write(tmp_path / "docusaurus/docusaurus.config.js", "module.exports = {};\n")
    write(tmp_path / "docusaurus/docs/intro.md", "# Intro\n\nShipped :tada:\n")
    write(tmp_path / "vitepress/.vitepress/config.mts", "export default {}\n")
    write(tmp_path / "vitepress/guide.md", "# Guide\n\nShipped :tada:\n")
    write(tmp_path / "notes/readme.md", "# Notes\n\nShipped :tada:\n")
    site_text = SiteText()
    assert site_text.emoji_style(tmp_path, "material/docs/index.md") == MATERIAL
    assert site_text.emoji_style(tmp_path, "plain-mkdocs/docs/index.md") is None
    assert site_text.emoji_style(tmp_path, "docusaurus/docs/intro.md") is None
    assert site_text.emoji_style(tmp_path, "vitepress/guide.md") == GITHUB
    assert site_text.emoji_style(tmp_path, "notes/readme.md") == GITHUB  # no generator: read on GitHub
    bodies = {ref.doc_path: parse_document(ref, ParseSettings())[0].body for ref in discover(tmp_path).documents}
    assert bodies["material/docs/index.md"].split()[-2:] == ["Shipped", "🎉"]  # the icon is a picture: gone
    assert bodies["plain-mkdocs/docs/index.md"].split()[-2:] == ["Shipped", ":tada:"]
    assert bodies["docusaurus/docs/intro.md"].split()[-2:] == ["Shipped", ":tada:"]
    assert bodies["vitepress/guide.md"].split()[-2:] == ["Shipped", "🎉"]


def test_docusaurus_with_remark_emoji_renders_them(tmp_path):
    write(tmp_path / "docusaurus.config.ts", "import emoji from 'remark-emoji';\nexport default {remarkPlugins: [emoji]};\n")
    assert SiteText().emoji_style(tmp_path, "docs/a.md") == GITHUB
