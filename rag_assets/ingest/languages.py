"""Each page's language, and which one is a corpus's default.

Declared languages win. A page's language comes from, first to last:

1. the generator's configuration (rag_assets.ingest.locale_config): the locales Docusaurus, Starlight/Astro,
   VitePress, MkDocs' i18n plugin and Hugo declare, each where its generator puts its pages (Docusaurus
   ``i18n/<locale>/docusaurus-plugin-content-*/…``, a Starlight or VitePress locale's folder, Hugo's
   ``contentDir`` and ``page.<lang>.md``, mkdocs-static-i18n's folders or suffixes); Mintlify's docs.json
   ``navigation.languages`` (the pages each language lists, and its folder);
2. a folder named like a language that no configuration lists (``it/``, ``es/``, ``pt-BR/``, at any depth
   of the content) when its pages' text agrees: of its pages whose text reads as a language, more than
   half read as that one (a page sure of its language counts three times), one page at least being sure
   of it (or two reading as it). An ``it/`` folder of an IT department's English pages, ``es/`` notes on ECMAScript, a
   ``de/`` Delaware office are folders of pages. In a folder that does not agree, a page whose own text is
   sure of the folder's language is still of it; and ``page.<code>.md`` beside ``page.md``, unless its
   text is sure of another language;
3. the frontmatter: ``lang`` or ``locale`` (a language code); ``language`` only with a region
   (``pt-BR``) or when the site lists that locale (``language: ts`` is TypeScript);
4. where a configuration declares the languages, or locale folders were found: the default language.
   The text (rag_assets.ingest.text_language) decides only where nothing of that says;
5. the corpus's default language.

The default language: RAG_DEFAULT_LANGUAGE, else the generator's declared default, else the most common
language of the pages outside locale folders, else of all pages (a tie goes to English, then to the first
code alphabetically). Two codes name one language when their first parts agree (``pt-BR`` is Portuguese,
``zh-CN`` and ``zh`` are Chinese). `Layout.how` says where the languages came from, for the summary.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag_assets.ingest import locale_config
from rag_assets.ingest.page_facts import PageFacts
from rag_assets.ingest.sites import Site
from rag_assets.ingest.text_language import detect, prose  # noqa: F401 - callers import them from here
from rag_assets.vocabulary.languages import (  # noqa: F401 - the codes' rules, shared by every layer
    ISO_639_1, UNDETERMINED, language_code, normalise, primary, same_language,
)

_SUFFIX = re.compile(r"^(?P<stem>.+)\.(?P<code>[a-zA-Z]{2}(?:[-_][A-Za-z]{2,4})?)\.(?:md|mdx)$", re.IGNORECASE)
_ANY_SUFFIX = re.compile(r"^(?P<stem>.+)\.(?P<code>[^./]+)\.(?:md|mdx)$", re.IGNORECASE)
_DOCUSAURUS_CONTENT = "docusaurus-plugin-content-"


@dataclass
class Layout:
    """What the generators' configuration and the locale folders say: doc path -> language, the declared
    default, the codes the configurations list, and where all that came from."""

    languages: dict[str, str] = field(default_factory=dict)
    declared_default: str = ""
    # the pages outside every locale folder are of the default language (a configuration declares the
    # languages, or locale folders were found): their text does not decide
    fixes_default: bool = False
    locales: set[str] = field(default_factory=set)
    how: str = ""  # where the layout was read from (for the summary)
    sites: list[Site] = field(default_factory=list)

    def language_of(self, doc_path: str) -> str:
        return self.languages.get(doc_path, "")

    def site_of(self, doc_path: str) -> Site | None:
        """The site a page belongs to (the deepest whose folder holds it; None outside every site)."""
        best = None
        for site in self.sites:
            if _under(doc_path, site.root) is not None and (best is None or len(site.root) > len(best.root)):
                best = site
        return best

    def generator_of(self, doc_path: str) -> str:
        """The generator of the site a page belongs to ("" outside every site)."""
        site = self.site_of(doc_path)
        return site.generator if site else ""

    def lists(self, code: str) -> bool:
        return any(same_language(code, listed) for listed in self.locales)


def detect_layout(doc_paths: list[str], sites: list[Site], facts: dict[str, PageFacts] | None = None) -> Layout:
    """The languages the configuration and the layout give the pages (doc paths relative to the docs
    folder); `facts`: what the pages say of themselves (their text votes for a folder named like a locale)."""
    layout = Layout(sites=list(sites))
    facts = facts or {}
    paths = set(doc_paths)
    hows: list[str] = []
    for site in sites:
        if site.generator == "mintlify":
            found = _mintlify(site, paths, layout)
            if found:
                hows.append(found.describe())
            continue
        declared = locale_config.declared(site)
        if declared is not None:
            layout.fixes_default = layout.fixes_default or bool(declared.default)
            layout.declared_default = layout.declared_default or declared.default
            layout.locales.update(declared.codes)
            hows.append(declared.describe())
        _place(site, declared, doc_paths, layout)
    contents = [c for s in sites for c in s.content] or [""]
    agreed = _agreed_folders(contents, [p for p in doc_paths if p not in layout.languages], facts, layout)
    if agreed:
        layout.fixes_default = True
        hows.append(f"{', '.join(f + '/' for f in agreed)} by {'their' if len(agreed) > 1 else 'its'} pages' text")
    if _suffixes([p for p in doc_paths if p not in layout.languages], paths, facts, layout):
        layout.fixes_default = True
        hows.append("page.<lang>.md names")
    layout.how = "; ".join(dict.fromkeys(hows))
    return layout


def _under(rel: str, base: str) -> str | None:
    if not base:
        return rel
    return rel[len(base) + 1:] if rel.startswith(base + "/") else None


def _place(site: Site, declared: locale_config.Declared | None, doc_paths: list[str], layout: Layout) -> None:
    """The pages a site's configuration (or its generator's fixed layout) places in a locale."""
    folders = sorted((declared.folders if declared else {}).items(), key=lambda kv: -len(kv[0]))
    suffixes = declared.suffixes if declared else {}
    for path in doc_paths:
        below = _under(path, site.root)
        if below is None or path in layout.languages:
            continue
        code = None
        if site.generator == "docusaurus" and below.startswith(locale_config.DOCUSAURUS_I18N + "/"):
            # i18n/<locale>/docusaurus-plugin-content-*/: a listed locale's, or (not built) the one its folder names
            parts = below.split("/")
            if len(parts) > 3 and parts[2].startswith(_DOCUSAURUS_CONTENT):
                code = (declared.docusaurus_i18n.get(parts[1]) if declared else None) or language_code(parts[1])
        if code is None:
            code = next((c for folder, c in folders if path.startswith(folder + "/")), None)
        if code is None and suffixes and declared and any(_under(path, r) is not None for r in declared.suffix_roots):
            match = _ANY_SUFFIX.match(path.rpartition("/")[2])
            code = suffixes.get(match.group("code")) if match else None
        if code:
            layout.languages[path] = code


def _mintlify(site: Site, paths: set[str], layout: Layout) -> locale_config.Declared | None:
    navigation = site.config.get("navigation") if isinstance(site.config.get("navigation"), dict) else {}
    languages = navigation.get("languages") or []
    found = locale_config.Declared(f"{site.root + '/' if site.root else ''}{site.config_file or 'docs.json'} "
                                   "navigation.languages")
    explicit = False
    for entry in languages if isinstance(languages, list) else []:
        code = normalise(entry.get("language")) if isinstance(entry, dict) else ""
        if not code:
            continue
        found.codes += (code,)
        # the language marked default, else the first
        if entry.get("default") is True and not explicit:
            found.default, explicit = code, True
        elif not found.default:
            found.default = code
        for page in _strings(entry):
            for ext in (".mdx", ".md"):
                path = f"{site.root}/{page.strip('/')}{ext}" if site.root else f"{page.strip('/')}{ext}"
                if path in paths:
                    layout.languages[path] = code
        # a page of the language's folder that its navigation does not list (hidden) is of it too
        folder = _rel_folder(site.root, entry.get("language"))
        for path in paths:
            if folder and path.startswith(folder + "/") and path not in layout.languages:
                layout.languages[path] = code
    if not found.codes:
        return None
    layout.declared_default = layout.declared_default or found.default
    layout.fixes_default = True
    layout.locales.update(found.codes)
    return found


def _rel_folder(root: str, name) -> str:
    if not isinstance(name, str) or not name:
        return ""
    return f"{root}/{name}" if root else name


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("pages", "page", "groups", "tabs", "anchors", "dropdowns", "versions", "products", "menu"):
                yield from _strings(value)


SURE_VOTE = 3  # a page sure of its language (its text or its frontmatter) counts as this many hints


def _evidence(facts: PageFacts | None) -> tuple[str, int, bool]:
    """What a page's own words say of its language: (code, votes, sure)."""
    if facts is None:
        return "", 0, False
    if facts.declared or facts.detected:
        return facts.declared or facts.detected, SURE_VOTE, True
    return facts.hint, 1 if facts.hint else 0, False


def _agreed_folders(contents: list[str], doc_paths: list[str], facts: dict[str, PageFacts], layout: Layout) -> list[str]:
    """Folders named like a language (the outermost such folder of a page below a content folder) that no
    configuration places, whose pages' text agrees with their name; the folders agreed."""
    groups: dict[str, list[str]] = {}
    grouped: set[str] = set()
    for content in contents:
        for path in doc_paths:
            below = _under(path, content)
            if below is None or path in grouped:
                continue
            parts = below.split("/")[:-1]
            for i, part in enumerate(parts):
                if language_code(part):
                    groups.setdefault("/".join([*([content] if content else []), *parts[: i + 1]]), []).append(path)
                    grouped.add(path)
                    break
    agreed = []
    for folder, pages in sorted(groups.items()):
        code = language_code(folder.rsplit("/", 1)[-1]) or ""
        votes_for = votes_all = 0
        sure = False
        for path in pages:
            language, weight, certain = _evidence(facts.get(path))
            if not language:
                continue
            votes_all += weight
            if same_language(language, code):
                votes_for += weight
                sure = sure or certain
        if votes_for * 2 > votes_all and (sure or votes_for >= 2):
            for path in pages:
                layout.languages[path] = code
            agreed.append(folder)
            continue
        for path in pages:  # a folder of pages: only a page sure of the folder's language is of it
            language, _, certain = _evidence(facts.get(path))
            if certain and same_language(language, code):
                layout.languages[path] = code
    return agreed


def _suffixes(doc_paths: list[str], paths: set[str], facts: dict[str, PageFacts], layout: Layout) -> bool:
    """``page.<code>.md`` beside ``page.md`` (no configuration says), unless its text is sure of another."""
    found = False
    for path in doc_paths:
        parent, _, name = path.rpartition("/")
        match = _SUFFIX.match(name)
        code = language_code(match.group("code")) if match else None
        if not code:
            continue
        stem = match.group("stem")
        base = [f"{parent}/{stem}{ext}" if parent else f"{stem}{ext}" for ext in (".md", ".mdx")]
        language, _, certain = _evidence(facts.get(path))
        if any(b in paths for b in base) and not (certain and not same_language(language, code)):
            layout.languages[path] = code
            found = True
    return found


def choose_default(counts: Counter) -> str:
    """The most common language; a tie goes to English, then to the first code alphabetically."""
    if not counts:
        return ""
    by_language = Counter()
    for code, n in counts.items():
        by_language[primary(code)] += n
    top = max(by_language.values())
    tied = sorted(code for code, n in by_language.items() if n == top)
    lang = "en" if "en" in tied else tied[0]
    # the spelling the corpus uses most for that language
    return max((c for c in counts if primary(c) == lang), key=lambda c: (counts[c], c == lang))


def path_parts(doc_path: str) -> tuple[str, ...]:
    return PurePosixPath(doc_path).parts
