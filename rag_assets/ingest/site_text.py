"""What of a page's text depends on the generator of the site it belongs to: whether ``:tada:`` shortcodes
render as emoji (rag_assets.ingest.reader_text.emojize). The sites of a docs folder are found once
(rag_assets.ingest.site_rules.find_sites) and their configuration read once, per `SiteText` (one
per parse run, so a run sees the configuration as it was when it started).

A page belongs to the deepest site whose folder holds it; a page of no site is read as GitHub renders
markdown. Rules, from each generator's documentation: VitePress renders shortcodes (markdown-it-emoji,
built in); MkDocs when ``pymdownx.emoji`` is among its ``markdown_extensions`` (Material's icons, too);
Hugo when ``enableEmoji`` is true; Docusaurus and Starlight only through ``remark-emoji``, so when their
configuration names it; Mintlify does not.
"""

from __future__ import annotations

from pathlib import Path

from rag_assets.ingest.reader_text import GITHUB, MATERIAL
from rag_assets.ingest.site_rules import Site, find_sites

_JS_CONFIGS = {"docusaurus": "docusaurus.config.", "starlight": "astro.config."}
_MAX_CONFIG_BYTES = 1_000_000


class SiteText:
    """The emoji style of each page of a docs folder, its sites looked at once."""

    def __init__(self) -> None:
        self._sites: dict[Path, list[tuple[str, str | None]]] = {}  # root -> (site folder, style), deepest first

    def emoji_style(self, root: Path, doc_path: str) -> str | None:
        """GITHUB, MATERIAL or None (shortcodes stay as written) for the page at `doc_path`."""
        if root not in self._sites:
            sites = find_sites(root)
            self._sites[root] = sorted(((s.root, _emoji_style(root, s)) for s in sites), key=lambda s: -len(s[0]))
        for folder, style in self._sites[root]:
            if not folder or doc_path.startswith(folder + "/"):
                return style
        return GITHUB  # no generator claims it: markdown read on GitHub


def _emoji_style(root: Path, site: Site) -> str | None:
    if site.generator == "vitepress":
        return GITHUB
    if site.generator == "mkdocs":
        extensions = site.config.get("markdown_extensions") or []
        if isinstance(extensions, dict):  # {name: options}
            names = set(extensions)
        else:  # [name, {name: options}, …]
            names = {str(next(iter(e), "")) if isinstance(e, dict) else str(e) for e in extensions}
        return MATERIAL if "pymdownx.emoji" in names else None
    if site.generator == "hugo":
        return GITHUB if site.config.get("enableEmoji") is True or site.config.get("enableemoji") is True else None
    prefix = _JS_CONFIGS.get(site.generator)
    if prefix is None:
        return None
    folder = root / site.root if site.root else root
    try:
        configs = [p for p in folder.iterdir() if p.name.startswith(prefix) and p.is_file()]
        return GITHUB if any("remark-emoji" in p.read_text(encoding="utf-8", errors="replace")[:_MAX_CONFIG_BYTES]
                             for p in configs) else None
    except OSError:
        return None
