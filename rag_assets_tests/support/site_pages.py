"""A small docs site's repository and an index over it whose pages carry what the parse stage gives
each page of a site (rag_assets.vocabulary.site: `version`, `url`, `route`, `site_path`).

The facts are put on each page's parsed document (ParsedDocument.metadata, after the parse stage's
own metadata is complete), and the rest of the road is the product's: the file read and parsed
(rag_assets.ingest.document.parse_document), split, chunked, embedded, written to the store and
committed to the search snapshot, as rag_assets.ingest.folder_index does. What these pages prove of
the chunks, the store, the snapshot and the results holds however the parse stage decides the facts.
Two versions of the install page (the current 2.x, the older 1.x) and a `plugin/` section: the
repository root is what is indexed, so every doc_path starts `handbook/` while its site_path does not.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document import ChunkSettings, ParseSettings, chunk_blocks, parse_document, split_document
from rag_assets.ingest.folder_index import embed_chunks
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.retrieval.snapshot_writer import SnapshotWriter
from rag_assets_tests.support.corpus import write_corpus

BASE_URL = "https://zephyr.example.dev"

INSTALL_2 = "handbook/pages/guides/install.md"
INSTALL_1 = "handbook/previous/guides/install.md"
SEARCH_PLUGIN = "handbook/pages/plugin/search.md"
THEMES = "handbook/pages/guides/themes.md"

SITE_DOCS = {
    INSTALL_2: """# Installing Zephyr

## With a package manager

Install the Zephyr site builder with `npm install zephyr-docs` and start the preview server with
`npx zephyr dev`. Zephyr 2 needs Node 20 or later.
""",
    INSTALL_1: """# Installing Zephyr

## With a package manager

Install the Zephyr site builder with `npm install zephyr-docs@1` and start the preview server with
`npx zephyr serve`. Zephyr 1 runs on Node 16.
""",
    SEARCH_PLUGIN: """# Search plugin

## Indexing pages

The search plugin builds a full-text index of every page at build time; readers search it from the
header without a server. Leave a page out of the index with `search: false` in its frontmatter.
""",
    THEMES: """# Themes

## Colour schemes

A theme sets the colour scheme, the fonts and the layout of every page. Switch between the light and
dark schemes from the header; a custom theme overrides the accent colour.
""",
}


def _facts(version: str, route: str, site_path: str) -> dict[str, str]:
    return {"version": version, "url": BASE_URL + route, "route": route, "site_path": site_path}


# what the parse stage gives each page of the site
SITE_FACTS = {
    INSTALL_2: _facts("2.x", "/docs/guides/install/", "guides/install.md"),
    INSTALL_1: _facts("1.x", "/docs/1.x/guides/install/", "guides/install.md"),
    SEARCH_PLUGIN: _facts("2.x", "/docs/plugin/search/", "plugin/search.md"),
    THEMES: _facts("2.x", "/docs/guides/themes/", "guides/themes.md"),
}


def build_site_index(root: Path) -> tuple[dict[str, str], Settings]:
    """The site's repository under root/site, indexed with its pages' facts: (env vars, settings), as
    index_builder.build_sample_index gives."""
    root = Path(root)
    docs = write_corpus(root / "site", SITE_DOCS)
    env = {"RAG_DOCS_DIR": str(docs), "RAG_CHROMA_PATH": str(root / "chroma"), "RAG_STATE_DIR": str(root / "state"),
           "RAG_CACHE_DIR": str(root / "cache"), "RAG_EVAL_DIR": str(root / "eval")}
    settings = Settings.from_env(env)
    embedder = load_embedder(settings.embedding)
    parse = ParseSettings.from_settings(settings.ingest)
    setup = ChunkSettings(TokenCounter.for_name(settings.chunking.tiktoken_encoding, settings.chunking.tiktoken_dir),
                          ChunkingConfig.from_settings(settings.chunking), embedder.fits)
    store = ChromaStore.for_settings(settings.paths, embedder)
    written = []
    for ref in discover(docs, scope=ScopeSettings.from_settings(settings.ingest)).documents:
        doc, _ = parse_document(ref, parse)
        doc = dataclasses.replace(doc, metadata={**doc.metadata, **SITE_FACTS[ref.doc_path]})
        chunks, _ = chunk_blocks(doc, split_document(doc.body)[0], setup)
        vectors = embed_chunks(embedder, None, chunks)
        store.replace_document(ref.doc_path, chunks, vectors)
        written.append((ref.doc_path, chunks, vectors))
    assert {path for path, _, _ in written} == set(SITE_DOCS), "every page of the site is indexed"
    SnapshotWriter(settings, store).replace(written)
    return env, settings
