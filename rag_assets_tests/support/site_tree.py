"""Small site repositories written file by file, and what discovery and the parse stage make of their pages
(the pages in scope, what is left out and why, each page's site metadata)."""

from __future__ import annotations

import json
from pathlib import Path

from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document_metadata import MetadataPolicy, complete
from rag_assets.ingest.frontmatter import read_document
from rag_assets.ingest.scope import ScopeSettings

# a Docusaurus site with two released versions and the unreleased docs/: one page each, the same question
# answered with a different number in each
VERSIONED_SITE = {
    "docusaurus.config.js": "module.exports = { url: 'https://example.org', baseUrl: '/',\n"
                            "  presets: [['classic', { docs: { routeBasePath: 'docs' } }]] };\n",
    "versions.json": json.dumps(["2.0", "1.0"]),
    "versioned_docs/version-2.0/guides/01-rate-limits.md": (
        "# Rate limits\n\nEach organisation may send 600 requests per minute; a request over the limit is answered "
        "with status 429 and a retry-after header saying how long to wait.\n"),
    "versioned_docs/version-1.0/guides/01-rate-limits.md": (
        "# Rate limits\n\nEach organisation may send 60 requests per minute; a request over the limit is answered "
        "with status 429 and a retry-after header saying how long to wait.\n"),
    "docs/guides/01-rate-limits.md": (
        "# Rate limits\n\nEach organisation may send 6000 requests per minute; a request over the limit is answered "
        "with status 429 and a retry-after header saying how long to wait.\n"),
}

SITE_KEYS = ("site_path", "route", "url", "version", "module", "chapter", "doc_type")


def write(root: Path, rel: str, text: str = "# Page\n\nSome text.\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_all(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        write(root, rel, text)
    return root


def pages(root: Path, scope: ScopeSettings | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """doc path -> the site metadata its parsed document carries (SITE_KEYS it has), for every page in scope;
    and the pages left out (doc path -> reason)."""
    catalog = discover(root, scope=scope)
    out = {}
    for ref in catalog.documents:
        meta = complete(read_document(ref), ref, MetadataPolicy(), undated="2024-01-01").metadata
        out[ref.doc_path] = {key: meta[key] for key in SITE_KEYS if meta.get(key) is not None}
    return out, catalog.left_out


def routes(root: Path, scope: ScopeSettings | None = None) -> dict[str, str | None]:
    """doc path -> route of every page in scope."""
    return {path: meta.get("route") for path, meta in pages(root, scope)[0].items()}
