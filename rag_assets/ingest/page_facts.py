"""What a page says of itself, read when it is fingerprinted and kept in the catalog beside its hash (a page
whose stats did not move is not read again to decide its scope), and what its generator does with it.

Read from the page's first MiB (discovery reads it anyway), whatever its frontmatter's format (YAML,
TOML, JSON, a BOM: rag_assets.ingest.frontmatter):

- its declared language: ``lang`` or ``locale`` when it is a language code; ``language`` only when it
  is a code with a region (``pt-BR``): ``language: ts`` names a programming language far more often than
  Tsonga, so a bare code there is kept apart (`named`) and counts only where the site lists that locale;
- its text's language (rag_assets.ingest.text_language): when sure, and the likeliest as a hint;
- the keys it sets true (``draft``, ``noindex``… and up to 32 others: a setting may name any), the
  generators' own keys always first, so no number of other keys hides a ``draft: true``;
- what the generators' keys say, false included (``pagefind: false``, ``build.render: never``, dates).

`exclusion` turns those into the reason a page's generator does not publish it, or its site's search
leaves it out (what a search index should leave out too), by the generators' documented rules:

========================  =================================================  ==================
frontmatter               generator                                          reason
========================  =================================================  ==================
``unlisted: true``        Docusaurus (published, hidden from search)         ``unlisted``
``pagefind: false``       Starlight (left out of the site's search)          ``search_excluded``
``search: false``         VitePress local search                             ``search_excluded``
``search.exclude: true``  Material for MkDocs                                ``search_excluded``
``headless: true``        Hugo (a bundle never rendered)                     ``headless``
``build.render: never``   Hugo (``link`` too; ``false`` in older Hugo)       ``not_rendered``
``build.list: never``     Hugo (rendered, in no list)                        ``unlisted``
future publish date       Hugo (``publishDate``, else ``pubdate``,           ``scheduled``
                          ``published``, ``date``)
past expiry date          Hugo (``expiryDate``, else ``unpublishdate``)      ``expired``
``template: X``           MkDocs, when X only redirects (Material's          ``redirect``
                          ``redirect.html``, or such a template of the
                          site's ``custom_dir``)
``template: X``           MkDocs, when X renders none of the page's          ``not_rendered``
                          markdown (a landing page's ``home.html`` with
                          ``{% block content %}{% endblock %}``)
========================  =================================================  ==================

The key names are the generators' own and mean nothing else, so they apply to every page; the dates only
to a Hugo site's pages (or pages with Hugo's TOML/JSON frontmatter): a Docusaurus blog post dated
tomorrow is published; ``template`` only to an MkDocs site's pages, by what its theme's templates do
(rag_assets.ingest.page_templates: read once per site, given here). ``draft``, ``noindex`` and ``hidden`` are the corpus's RAG_SKIP_FRONTMATTER_KEYS.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Mapping

from rag_assets.errors import DocumentError
from rag_assets.ingest import frontmatter, page_templates, text_language
from rag_assets.models import FACTS_VERSION
from rag_assets.vocabulary.languages import normalise

UNLISTED = "unlisted"
SEARCH_EXCLUDED = "search_excluded"
HEADLESS = "headless"
NOT_RENDERED = "not_rendered"
REDIRECT = "redirect"
SCHEDULED = "scheduled"
EXPIRED = "expired"

# keys whose truth is always recorded, before any other: the skip keys' defaults and the generators'
_OWN_FLAGS = ("draft", "noindex", "hidden", "unlisted", "headless")
MAX_OTHER_FLAGS = 32
# frontmatter paths (lower case) recorded with the value they have, whatever it is
_SAID = ("unlisted", "pagefind", "search", "search.exclude", "headless", "build.render", "build.list",
         "publishdate", "pubdate", "published", "date", "expirydate", "unpublishdate", "template")
_PUBLISH_KEYS = ("publishdate", "pubdate", "published", "date")  # Hugo's default order
_EXPIRY_KEYS = ("expirydate", "unpublishdate")
_TRUE = {"true", "yes", "on", "1"}
_KEY = re.compile(r"^[a-z0-9_.-]{1,40}$")
_VALUE_CHARS = re.compile(r"[^0-9A-Za-z:+._/ -]")


@dataclass(frozen=True)
class PageFacts:
    declared: str = ""  # lang / locale (a code), or a region-qualified `language`
    named: str = ""  # `language:` as a bare code (ts, py, cs…): a language only where the site lists it
    detected: str = ""  # the text's language, when it can tell
    # the text's likeliest language, sure or not (no letter count: an edit of a page's text leaves its facts
    # as they were, and the no-op check reads a moved page's facts to see whether its scope may have moved)
    hint: str = ""
    flags: tuple[str, ...] = ()  # keys set true (lower case); "noindex" also from robots
    said: tuple[tuple[str, str], ...] = ()  # what the generators' keys say, false included
    header: str = ""  # the frontmatter's format: yaml | toml | json | ""

    def format(self) -> str:
        """As the catalog stores it: ``v3|lang=|named=|text=en|hint=en|flags=draft|said=pagefind=false|fm=yaml``."""
        said = ";".join(f"{k}={v}" for k, v in self.said)
        return (f"{FACTS_VERSION}|lang={self.declared}|named={self.named}|text={self.detected}|hint={self.hint}"
                f"|flags={','.join(self.flags)}|said={said}|fm={self.header}")

    @classmethod
    def parse(cls, raw: str) -> "PageFacts":
        """Facts as stored (any version: an older one lacks what it did not record, and is re-read once)."""
        parts = dict(p.split("=", 1) for p in (raw or "").split("|")[1:] if "=" in p)
        said = tuple(tuple(pair.split("=", 1)) for pair in parts.get("said", "").split(";") if "=" in pair)
        return cls(parts.get("lang", ""), parts.get("named", ""), parts.get("text", ""), parts.get("hint", ""),
                   tuple(f for f in parts.get("flags", "").split(",") if f), said,  # type: ignore[arg-type]
                   parts.get("fm", ""))

    def says(self, key: str) -> str:
        return next((v for k, v in self.said if k == key), "")


# what is read first: a frontmatter longer than this is read from the whole head (a draft flag after
# 64 KB of keys is still seen), without copying a large page's text for the usual short header
FIRST_READ = 64_000


def facts_of(head: str) -> PageFacts:
    """The facts of a page from its start (its first MiB: the frontmatter, and the prose of its text)."""
    text = head[:FIRST_READ].replace("\r\n", "\n")
    try:
        try:
            front = frontmatter.split_frontmatter(text, "")
        except DocumentError:
            if len(head) <= FIRST_READ:
                raise
            front = frontmatter.split_frontmatter(head.replace("\r\n", "\n"), "")
        meta, body, kind = front.meta, front.body, front.format
    except DocumentError:  # the parse stage reports it by name; nothing is decided from it here
        meta, body, kind = {}, text.lstrip("\ufeff"), ""
    lowered = {str(k).lower(): v for k, v in meta.items()}
    language = text_language.read(body)
    return PageFacts(*_declared(lowered), language.sure, language.hint, _flags(lowered), _said(lowered), kind)


def _declared(meta: dict[str, Any]) -> tuple[str, str]:
    for key in ("lang", "locale"):
        code = normalise(meta.get(key))
        if code:
            return code, ""
    value = meta.get("language")
    code = normalise(value)
    if not code:
        return "", ""
    return (code, "") if "-" in code else ("", code)


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE)


def _flags(meta: dict[str, Any]) -> tuple[str, ...]:
    own = [k for k in _OWN_FLAGS if _true(meta.get(k))]
    others = [k for k, v in meta.items() if k not in _OWN_FLAGS and _KEY.match(k) and _true(v)][:MAX_OTHER_FLAGS]
    robots = meta.get("robots")
    if isinstance(robots, str) and "noindex" in robots.lower() and "noindex" not in own:
        own.append("noindex")
    return tuple(sorted(set(own + others)))


def _said(meta: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    said = []
    for path in _SAID:
        value: Any = meta
        for part in path.split("."):
            value = {str(k).lower(): v for k, v in value.items()}.get(part) if isinstance(value, dict) else None
        if value is None or isinstance(value, (dict, list)):
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (dt.date, dt.datetime)):
            text = value.isoformat()
        else:
            text = str(value).strip()
        said.append((path, _VALUE_CHARS.sub("", text)[:40]))
    return tuple(said)


def exclusion(facts: PageFacts, generator: str, now: dt.datetime | None = None,
              templates: Mapping[str, str] | None = None) -> str | None:
    """Why the page's generator does not publish it or its site's search leaves it out; None when neither.
    `templates`: an MkDocs site's templates that show no page (rag_assets.ingest.page_templates)."""
    template = facts.says("template").strip("/")
    if template and templates and generator == "mkdocs":
        kind = templates.get(template)
        if kind == page_templates.REDIRECT:
            return REDIRECT
        if kind == page_templates.NO_CONTENT:
            return NOT_RENDERED
    if facts.says("unlisted") == "true" or facts.says("build.list") in ("never", "false"):
        return UNLISTED
    if facts.says("pagefind") == "false" or facts.says("search") == "false" or facts.says("search.exclude") == "true":
        return SEARCH_EXCLUDED
    if facts.says("headless") == "true":
        return HEADLESS
    if facts.says("build.render") in ("never", "link", "false"):
        return NOT_RENDERED
    if generator == "hugo" or facts.header in ("toml", "json"):
        now = now or dt.datetime.now(dt.timezone.utc)
        published = next((_moment(facts.says(k)) for k in _PUBLISH_KEYS if facts.says(k)), None)
        if published is not None and published > now:
            return SCHEDULED
        expires = next((_moment(facts.says(k)) for k in _EXPIRY_KEYS if facts.says(k)), None)
        if expires is not None and expires <= now:
            return EXPIRED
    return None


def _moment(text: str) -> dt.datetime | None:
    """A frontmatter date as an aware datetime (a date alone is its midnight UTC); None when it is not one."""
    try:
        moment = dt.datetime.fromisoformat(text.replace(" ", "T", 1) if " " in text.strip() else text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)
