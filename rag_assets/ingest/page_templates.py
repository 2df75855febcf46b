"""The page templates of an MkDocs site that show none of a page's markdown (read from its theme; nothing
here reads a page).

An MkDocs page may name its template (``template: home.html`` in its frontmatter). Two kinds never show
the page's markdown to a reader, so the page is not a docs page whatever its text says
(rag_assets.ingest.page_facts turns them into the page's reason):

- ``redirect``: a template that only sends the reader on: Material for MkDocs' own ``redirect.html``
  (``template: redirect.html`` with ``location: <url>``), and a template of the site's ``custom_dir`` that
  refreshes or replaces ``window.location`` without rendering the page;
- ``no_content``: a template of the site's ``custom_dir`` that renders no content: it overrides Jinja's
  ``{% block content %}`` with nothing (a landing page such as Material's own ``home.html``:
  ``{% block content %}{% endblock %}``), or stands alone (extends no template) without
  ``page.content``; a template extending one of the same folder inherits what that one does.

A template that names ``page.content`` (or ``page.markdown``, Material's ``partials/content.html``, or
``super()`` in its content block) shows the page. A template the site's folder does not hold is the
theme's, which shows it (but Material's ``redirect.html``).
"""

from __future__ import annotations

import re
from pathlib import Path

REDIRECT = "redirect"
NO_CONTENT = "no_content"

_MAX_TEMPLATES = 500  # a custom_dir holding more is a theme's source: its first 500 templates are read
_MAX_TEMPLATE_BYTES = 256_000
_SKIPPED_FOLDERS = {"partials", ".icons", "assets", "hooks", "node_modules"}
_RENDERS = re.compile(r"page\.content|page\.markdown|partials/content\.html")
_BLOCK_TAG = re.compile(r"{%-?\s*(?:block\s+(?P<name>\w+)|endblock(?:\s+\w+)?)\s*-?%}")
_EXTENDS = re.compile(r"""{%-?\s*extends\s+["']([^"']+)["']""")
_COMMENT = re.compile(r"{#.*?#}", re.S)
_REDIRECTS = re.compile(r"""http-equiv=["']?refresh|location\.replace|window\.location\s*=""", re.I)


def mkdocs_templates(site_dir: Path, config: dict) -> dict[str, str]:
    """Template name (relative to the theme's folder) -> REDIRECT or NO_CONTENT, for the templates that
    show no page; the others are not listed."""
    theme = config.get("theme")
    name = theme.get("name") if isinstance(theme, dict) else theme
    custom = theme.get("custom_dir") if isinstance(theme, dict) else None
    out = {"redirect.html": REDIRECT} if name == "material" else {}
    folder = _inside(site_dir, custom) if isinstance(custom, str) and custom.strip() else None
    if folder is None:
        return out
    texts = _templates(folder)
    for template in texts:
        kind = _kind(template, texts, set())
        if kind:
            out[template] = kind
        else:
            out.pop(template, None)  # the site's own redirect.html that renders the page
    return out


def _inside(site_dir: Path, custom: str) -> Path | None:
    """The custom_dir folder, when it is a folder inside the site's folder."""
    try:
        site = site_dir.resolve()
        folder = (site / custom).resolve()
    except OSError:
        return None
    return folder if folder.is_dir() and (folder == site or site in folder.parents) else None


def _templates(folder: Path) -> dict[str, str]:
    """Template name -> its text (comments taken out), the folder's HTML templates but partials and assets."""
    texts: dict[str, str] = {}
    for path in sorted(folder.rglob("*.html")):
        name = path.relative_to(folder).as_posix()
        if set(name.split("/")[:-1]) & _SKIPPED_FOLDERS:
            continue
        if len(texts) >= _MAX_TEMPLATES:
            break
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                texts[name] = _COMMENT.sub("", handle.read(_MAX_TEMPLATE_BYTES))
        except OSError:
            continue
    return texts


def _kind(template: str, texts: dict[str, str], seen: set[str]) -> str | None:
    text = texts[template]
    if _RENDERS.search(text):
        return None
    block = _block_body(text, "content")
    parent = _EXTENDS.search(text)
    if block is not None:  # overridden: what it holds instead of the page (nothing, or the site's own words)
        return None if "super()" in block else NO_CONTENT
    if parent is None:
        return REDIRECT if _REDIRECTS.search(text) else NO_CONTENT
    name = parent.group(1).strip("/")
    if name in texts and name not in seen:  # the site's own template: it decides
        return _kind(name, texts, seen | {template})
    return None  # the theme's template renders the content


def _block_body(text: str, wanted: str) -> str | None:
    """The text of the Jinja block named `wanted` (blocks nested inside it included), None when the
    template does not define it."""
    stack: list[tuple[str, int]] = []
    for tag in _BLOCK_TAG.finditer(text):
        if tag.group("name"):
            stack.append((tag.group("name"), tag.end()))
        elif stack:
            name, start = stack.pop()
            if name == wanted:
                return text[start:tag.start()]
    return None
