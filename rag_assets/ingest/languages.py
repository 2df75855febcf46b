"""Each page's language, and which one is a corpus's default.

A page's language comes from, first to last:

1. the generator's layout: Docusaurus ``i18n/<locale>/docusaurus-plugin-content-*/…``; Mintlify's
   docs.json ``navigation.languages`` (the pages each language lists, and its folder); Hugo's
   ``languages.<code>.contentDir`` and ``page.<code>.md`` names; MkDocs' i18n plugin (``page.fr.md``
   or ``fr/`` folders, mkdocs.yml read); and locale folders (Starlight, VitePress, …): top-level folders
   of the content named like a language (``es``, ``pt-BR``, ``zh-cn``) whose pages mirror the tree beside
   them (at least half of their pages at the same relative path there, two at least), and
   ``page.<code>.md`` beside ``page.md``;
2. the frontmatter: ``lang``, ``locale`` or ``language``;
3. the text, by py3langid (a model it ships: no download), when it is sure (probability ≥ 0.9 over at
   least 200 letters of the page's first 1,200 characters of prose, code and markup removed); otherwise
4. the corpus's default language.

The default language: RAG_DEFAULT_LANGUAGE, else the generator's declared default (Mintlify's
``default: true`` language or its first, Hugo's ``defaultContentLanguage``, MkDocs i18n's ``default``),
else the most common language of the pages outside locale folders, else of all pages (a tie goes to
English, then to the first code alphabetically). Two codes name one language when their first parts
agree (``pt-BR`` is Portuguese, ``zh-CN`` and ``zh`` are Chinese).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag_assets.ingest.site_rules import Site
from rag_assets.vocabulary.languages import (  # noqa: F401 - the codes' rules, shared by every layer
    ISO_639_1, UNDETERMINED, language_code, normalise, primary, same_language,
)

_SUFFIX = re.compile(r"^(?P<stem>.+)\.(?P<code>[a-zA-Z]{2}(?:[-_][A-Za-z]{2,4})?)\.(?:md|mdx)$", re.IGNORECASE)
MIN_MIRRORED = 2  # pages a locale folder must share with the tree beside it
MIRROR_SHARE = 0.5


@dataclass
class Layout:
    """What the generator's layout says: doc path -> language, a declared default, and the pages
    that sit outside every locale folder of a site that has them."""

    languages: dict[str, str] = field(default_factory=dict)
    declared_default: str = ""
    how: str = ""  # where the layout was read from (for the summary)

    def language_of(self, doc_path: str) -> str:
        return self.languages.get(doc_path, "")


def detect_layout(doc_paths: list[str], sites: list[Site]) -> Layout:
    """The languages the layout gives the pages (doc paths relative to the docs folder)."""
    layout = Layout()
    paths = set(doc_paths)
    hows: list[str] = []
    for site in sites:
        if site.generator == "docusaurus":
            _docusaurus(site, doc_paths, layout) and hows.append("Docusaurus i18n/")
        elif site.generator == "mintlify":
            _mintlify(site, paths, layout) and hows.append("Mintlify docs.json languages")
        elif site.generator == "hugo":
            _hugo(site, doc_paths, layout) and hows.append("Hugo languages")
        elif site.generator == "mkdocs":
            _mkdocs(site, layout)
    # locale folders and suffixes, in every content folder (the docs folder when there is no site)
    contents = [c for s in sites for c in s.content] or [""]
    for content in contents:
        if _locale_folders(content, [p for p in doc_paths if p not in layout.languages], layout):
            hows.append("locale folders")
    if _suffixes([p for p in doc_paths if p not in layout.languages], paths, layout):
        hows.append("page.<lang>.md names")
    layout.how = ", ".join(dict.fromkeys(hows))
    return layout


def _under(rel: str, base: str) -> str | None:
    if not base:
        return rel
    return rel[len(base) + 1:] if rel.startswith(base + "/") else None


def _docusaurus(site: Site, doc_paths: list[str], layout: Layout) -> bool:
    found = False
    for path in doc_paths:
        below = _under(path, site.root)
        if below is None or not below.startswith("i18n/"):
            continue
        parts = below.split("/")
        code = language_code(parts[1]) if len(parts) > 2 else None
        if code and parts[2].startswith("docusaurus-plugin-content-"):
            layout.languages[path] = code
            found = True
    return found


def _mintlify(site: Site, paths: set[str], layout: Layout) -> bool:
    languages = ((site.config.get("navigation") or {}) if isinstance(site.config.get("navigation"), dict) else {}).get(
        "languages") or []
    found = explicit = False
    for entry in languages if isinstance(languages, list) else []:
        code = normalise(entry.get("language")) if isinstance(entry, dict) else ""
        if not code:
            continue
        if entry.get("default") is True or not layout.declared_default or not explicit:
            if entry.get("default") is True or not layout.declared_default:
                layout.declared_default = code
            explicit = explicit or entry.get("default") is True
        for page in _strings(entry):
            for ext in (".mdx", ".md"):
                path = f"{site.root}/{page.strip('/')}{ext}" if site.root else f"{page.strip('/')}{ext}"
                if path in paths:
                    layout.languages[path] = code
                    found = True
        # a page of the language's folder that its navigation does not list (hidden) is of it too
        folder = _rel_folder(site.root, entry.get("language"))
        for path in paths:
            if folder and path.startswith(folder + "/") and path not in layout.languages:
                layout.languages[path] = code
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


def _hugo(site: Site, doc_paths: list[str], layout: Layout) -> bool:
    config = site.config
    default = normalise(config.get("defaultContentLanguage") or config.get("defaultcontentlanguage") or "en")
    layout.declared_default = layout.declared_default or default
    found = False
    for code, lang in (config.get("languages") or {}).items():
        folder = lang.get("contentDir") if isinstance(lang, dict) else None
        code = normalise(code)
        if not code or not folder:
            continue
        folder = f"{site.root}/{folder.strip('/')}" if site.root else folder.strip("/")
        for path in doc_paths:
            if path.startswith(folder + "/"):
                layout.languages[path] = code
                found = True
    return found


def _mkdocs(site: Site, layout: Layout) -> None:
    for plugin in site.config.get("plugins") or []:
        if isinstance(plugin, dict) and isinstance(plugin.get("i18n"), dict):
            for lang in plugin["i18n"].get("languages") or []:
                if isinstance(lang, dict) and lang.get("default") is True and normalise(lang.get("locale")):
                    layout.declared_default = layout.declared_default or normalise(lang.get("locale"))


def _locale_folders(content: str, doc_paths: list[str], layout: Layout) -> bool:
    """Top-level folders of `content` named like a language whose pages mirror a tree beside them."""
    by_top: dict[str, set[str]] = {}
    rest: set[str] = set()
    for path in doc_paths:
        below = _under(path, content)
        if below is None:
            continue
        top, _, inside = below.partition("/")
        if inside and language_code(top):
            by_top.setdefault(top, set()).add(inside)
        else:
            rest.add(below)
    found = False
    for top, pages in by_top.items():
        trees = [rest] + [other for name, other in by_top.items() if name != top]
        best = max((len(pages & tree) for tree in trees), default=0)
        if best >= MIN_MIRRORED and best >= MIRROR_SHARE * len(pages):
            code = language_code(top)
            for inside in pages:
                layout.languages[f"{content}/{top}/{inside}" if content else f"{top}/{inside}"] = code
            found = True
    return found


def _suffixes(doc_paths: list[str], paths: set[str], layout: Layout) -> bool:
    found = False
    for path in doc_paths:
        parent, _, name = path.rpartition("/")
        match = _SUFFIX.match(name)
        code = language_code(match.group("code")) if match else None
        if not code:
            continue
        stem = match.group("stem")
        base = [f"{parent}/{stem}{ext}" if parent else f"{stem}{ext}" for ext in (".md", ".mdx")]
        if any(b in paths for b in base):
            layout.languages[path] = code
            found = True
    return found


# ----------------------------------------------------------------------------------------------
# the text


_IDENTIFIER = None
MIN_LETTERS = 200
MIN_PROBABILITY = 0.9
# what of a page's prose the text is identified from: plenty for py3langid (it costs ~2 ms per 1,000
# characters in pure Python, paid when a page is read)
PROSE_CHARS = 1200
_NOT_LETTERS = re.compile(r"[\W\d_]+")
_FENCE = re.compile(r"^ {0,3}(```|~~~)[\s\S]*?^ {0,3}\1", re.MULTILINE)
_NOISE = re.compile(r"`[^`\n]*`|<[^>\n]*>|\{[^}\n]*\}|https?://\S+|\]\([^)]*\)|^\s*(import|export)\s.*$", re.MULTILINE)


def _identifier():
    global _IDENTIFIER
    if _IDENTIFIER is None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _IDENTIFIER


def prose(body: str, limit: int = PROSE_CHARS) -> str:
    """The prose of a markdown body: code, tags, links and URLs removed."""
    text = _NOISE.sub(" ", _FENCE.sub(" ", body[: limit * 4]))
    return text[:limit]


def detect(body: str) -> str:
    """The language of a page's text when py3langid is sure of it, else ""."""
    text = prose(body)
    if len(_NOT_LETTERS.sub("", text)) < MIN_LETTERS:
        return ""
    code, probability = _identifier().classify(text)
    return code if probability >= MIN_PROBABILITY and code in ISO_639_1 else ""


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
