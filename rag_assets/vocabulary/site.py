"""Where a page of a docs site is published: the document-level keys the parse stage gives each page
of a folder that is a site (absent for a plain folder), and that every layer reads by these names.

- ``version``: the docs version the page belongs to, as the site names it (``2.x``, ``next``).
- ``url``: the absolute URL the page is published at when the site's config gives its address, else
  its route; what a reader cites.
- ``route``: the URL path the page is published at (``/docs/guides/intro/``).
- ``site_path``: the page's path under its site's content root, locale and version folders removed
  (``plugin/foo.mdx``); ``path_prefix`` filters match it as well as ``doc_path``.

They ride in the chunk metadata (and so the vector store, the search snapshot and every result) like
``module`` or ``language``. None is embedded or keyword-indexed: a chunk's index text is its title,
headings and text only (rag_assets.vocabulary.index_text), so an address never pulls a page up a ranking.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VERSION = "version"
URL = "url"
ROUTE = "route"
SITE_PATH = "site_path"
SITE_KEYS = (VERSION, URL, ROUTE, SITE_PATH)


def url_of(metadata: Mapping[str, Any] | None) -> str:
    """The URL a page is published at, "" when its folder is not a site."""
    return str((metadata or {}).get(URL) or "").strip()


def site_path_of(metadata: Mapping[str, Any] | None) -> str:
    """The page's path under its site's content root, "" when its folder is not a site."""
    return str((metadata or {}).get(SITE_PATH) or "").strip()
