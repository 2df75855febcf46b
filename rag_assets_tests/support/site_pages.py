"""A small docs site's repository, its pages carrying what the parse stage gives each page of a site
(rag_assets.vocabulary.site: `version`, `url`, `route`, `site_path`), and an index over it.

The facts are written as frontmatter: from the parsed document's metadata on, that is the road the
parse stage's own values take (rag_assets.ingest.frontmatter puts both in ParsedDocument.metadata), so
what these pages prove of the chunks, the store, the snapshot and the results holds for them.
Two versions of the install page (the current 2.x, the older 1.x) and a `plugin/` section: the
repository root is what is indexed, so every doc_path starts `handbook/` while its site_path does not
(folder names no generator's rules know, so the values written here are the ones that count).
"""

from __future__ import annotations

from pathlib import Path

from rag_assets.config import Settings
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index

BASE_URL = "https://zephyr.example.dev"


def _page(version: str, route: str, site_path: str, body: str) -> str:
    return (f"---\nversion: \"{version}\"\nurl: {BASE_URL}{route}\nroute: {route}\nsite_path: {site_path}\n---\n\n"
            + body)


INSTALL_2 = "handbook/pages/guides/install.md"
INSTALL_1 = "handbook/previous/guides/install.md"
SEARCH_PLUGIN = "handbook/pages/plugin/search.md"
THEMES = "handbook/pages/guides/themes.md"

SITE_DOCS = {
    INSTALL_2: _page("2.x", "/docs/guides/install/", "guides/install.md", """# Installing Zephyr

## With a package manager

Install the Zephyr site builder with `npm install zephyr-docs` and start the preview server with
`npx zephyr dev`. Zephyr 2 needs Node 20 or later.
"""),
    INSTALL_1: _page("1.x", "/docs/1.x/guides/install/", "guides/install.md", """# Installing Zephyr

## With a package manager

Install the Zephyr site builder with `npm install zephyr-docs@1` and start the preview server with
`npx zephyr serve`. Zephyr 1 runs on Node 16.
"""),
    SEARCH_PLUGIN: _page("2.x", "/docs/plugin/search/", "plugin/search.md", """# Search plugin

## Indexing pages

The search plugin builds a full-text index of every page at build time; readers search it from the
header without a server. Leave a page out of the index with `search: false` in its frontmatter.
"""),
    THEMES: _page("2.x", "/docs/guides/themes/", "guides/themes.md", """# Themes

## Colour schemes

A theme sets the colour scheme, the fonts and the layout of every page. Switch between the light and
dark schemes from the header; a custom theme overrides the accent colour.
"""),
}


def write_site(root: Path) -> Path:
    """The site's repository under root (returned)."""
    return write_corpus(Path(root), SITE_DOCS)


def build_site_index(root: Path) -> tuple[dict[str, str], Settings]:
    """The site's repository under root/site, indexed: (env vars, settings), as build_sample_index gives."""
    root = Path(root)
    docs = write_site(root / "site")
    env = {"RAG_DOCS_DIR": str(docs), "RAG_CHROMA_PATH": str(root / "chroma"), "RAG_STATE_DIR": str(root / "state"),
           "RAG_CACHE_DIR": str(root / "cache"), "RAG_EVAL_DIR": str(root / "eval")}
    settings = Settings.from_env(env)
    build_index(settings.docs_dir, settings)
    return env, settings
