"""The languages a site's generator configuration declares: its default locale, its other locales, and
where each one's pages live. Read as data (rag_assets.ingest.site_rules reads the configuration; a
JavaScript/TypeScript one through rag_assets.ingest.script_config, never run); what a configuration
computes instead of writing says nothing, and the pages' text decides (rag_assets.ingest.languages).

- Docusaurus: ``i18n.defaultLocale`` and ``i18n.locales`` (``localeConfigs.<l>.htmlLang`` / ``.path``):
  a listed locale's pages are ``i18n/<locale>/docusaurus-plugin-content-*/…``; every other page is the
  default locale's;
- Starlight: ``starlight({defaultLocale, locales})`` in astro.config.*: each key but ``root`` is a folder
  of ``src/content/docs`` (its ``lang``, else the key, is the code); ``root`` (the pages outside them)
  is ``root.lang``; locales imported from a JSON or TS file are read through the import. Else Astro's own
  ``i18n: {defaultLocale, locales}`` (a string, or ``{path, codes}``);
- VitePress: ``locales`` in .vitepress/config.*: ``root`` is the pages outside the other keys' folders
  (its ``lang``, else the site's ``lang``, else ``en-US``); a site without ``locales`` that sets ``lang``
  declares that one;
- MkDocs: the mkdocs-static-i18n plugin (``languages`` with ``default: true``, or the older
  ``default_language``; ``docs_structure: suffix`` names pages ``page.fr.md``, ``folder`` puts them in
  ``docs/fr/``); else Material's ``theme.language``;
- Hugo: ``defaultContentLanguage`` and ``languages`` (each one's ``contentDir``; ``page.<lang>.md``
  names); a site without ``languages`` that sets ``languageCode`` declares that one;
- Mintlify: docs.json ``navigation.languages`` (rag_assets.ingest.languages reads its page lists).

A configuration that does not say (no ``i18n``, no ``locales``) declares nothing: a generator's fallback
(Docusaurus' ``en``) would label a Chinese site English.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_assets.ingest.script_config import Call, find_calls, unwrap
from rag_assets.ingest.sites import Site
from rag_assets.vocabulary.languages import normalise

DOCUSAURUS_I18N = "i18n"


@dataclass
class Declared:
    """What one site's configuration says of its languages."""

    source: str  # what was read, for the summary ("docusaurus.config.js i18n")
    default: str = ""  # the default locale's code
    folders: dict[str, str] = field(default_factory=dict)  # folder (doc path) -> code of the pages below it
    suffixes: dict[str, str] = field(default_factory=dict)  # page.<suffix>.md -> code
    suffix_roots: tuple[str, ...] = ()  # the folders where those names count
    docusaurus_i18n: dict[str, str] = field(default_factory=dict)  # i18n/<folder> below the site's root -> code
    codes: tuple[str, ...] = ()  # every locale listed

    def describe(self) -> str:
        others = [c for c in dict.fromkeys(self.codes) if c != self.default]
        said = f"default {self.default}" if self.default else "no default"
        return f"{self.source} ({said}{'; ' + ', '.join(others) if others else ''})"


def declared(site: Site) -> Declared | None:
    """What the site's configuration declares of its languages; None when it declares nothing."""
    reader = {"docusaurus": _docusaurus, "starlight": _starlight, "vitepress": _vitepress, "mkdocs": _mkdocs,
              "hugo": _hugo}.get(site.generator)
    found = reader(site) if reader else None
    if found is None or not (found.default or found.codes):
        return None
    found.codes = tuple(dict.fromkeys(c for c in (found.default, *found.codes) if c))
    return found


def _rel(base: str, name: str) -> str:
    name = name.strip("/").removeprefix("./")
    return f"{base}/{name}" if base and name else base or name


def _file(site: Site) -> str:
    return _rel(site.root, site.config_file) if site.config_file else site.generator


def _dict(value) -> dict:
    value = unwrap(value) if isinstance(value, Call) else value
    return value if isinstance(value, dict) else {}


def _docusaurus(site: Site) -> Declared | None:
    i18n = _dict(site.config.get("i18n"))
    if not i18n:
        return None
    configs = _dict(i18n.get("localeConfigs"))
    out = Declared(f"{_file(site)} i18n")
    default_name = i18n.get("defaultLocale") if isinstance(i18n.get("defaultLocale"), str) else ""
    names = [n for n in i18n.get("locales") or [] if isinstance(n, str)] if isinstance(i18n.get("locales"), list) else []
    for name in dict.fromkeys([default_name, *names]):
        if not name:
            continue
        own = _dict(configs.get(name))
        code = normalise(own.get("htmlLang")) or normalise(name)
        if not code:
            continue
        if name == default_name:
            out.default = code
        out.codes += (code,)
        folder = own.get("path") if isinstance(own.get("path"), str) and own.get("path") else name
        out.docusaurus_i18n[folder] = code
    return out


def _starlight(site: Site) -> Declared | None:
    content = site.content[0] if site.content else site.root
    calls = find_calls(site.config, "starlight")
    options = calls[0].first_object() if calls else {}
    locales = _dict(options.get("locales"))
    if locales:
        out = Declared(f"{_file(site)} Starlight locales")
        default_key = options.get("defaultLocale") if isinstance(options.get("defaultLocale"), str) else ""
        for key, value in locales.items():
            own = _dict(value)
            code = normalise(own.get("lang")) or normalise(key) or ("en" if key == "root" else "")
            if not code:
                continue
            out.codes += (code,)
            if key == "root":
                out.default = code  # the root locale is the default whatever defaultLocale says
            else:
                out.folders[_rel(content, key)] = code
            if key == default_key and not out.default:
                out.default = code
        if not out.default and "root" not in locales and out.folders:
            out.default = next(iter(out.folders.values()))  # Starlight: the first locale when none is named
        return out
    return _astro_i18n(site, content)


def _astro_i18n(site: Site, content: str) -> Declared | None:
    i18n = _dict(site.config.get("i18n"))
    if not i18n:
        return None
    out = Declared(f"{_file(site)} i18n")
    default_name = i18n.get("defaultLocale") if isinstance(i18n.get("defaultLocale"), str) else ""
    prefixed = _dict(i18n.get("routing")).get("prefixDefaultLocale") is True
    for entry in i18n.get("locales") or [] if isinstance(i18n.get("locales"), list) else []:
        if isinstance(entry, str):
            folder, code = entry, normalise(entry)
        else:
            own = _dict(entry)
            folder = own.get("path") if isinstance(own.get("path"), str) else ""
            codes = [normalise(c) for c in own.get("codes") or [] if isinstance(c, str)] \
                if isinstance(own.get("codes"), list) else []
            code = next((c for c in codes if c), "") or normalise(folder)
        if not code or not folder:
            continue
        out.codes += (code,)
        if folder == default_name:
            out.default = code
            if not prefixed:
                continue  # the default locale's pages are the ones outside the others' folders
        out.folders[_rel(content, folder)] = code
    return out


def _vitepress(site: Site) -> Declared | None:
    config = site.config
    site_lang = normalise(config.get("lang"))
    locales = _dict(config.get("locales"))
    src = config.get("srcDir") if isinstance(config.get("srcDir"), str) else ""
    content = _rel(site.root, src) if src.strip("./") else site.root
    if not locales:
        return Declared(f"{_file(site)} lang", site_lang) if site_lang else None
    out = Declared(f"{_file(site)} locales")
    for key, value in locales.items():
        code = normalise(_dict(value).get("lang")) or (site_lang or "en-US" if key == "root" else normalise(key))
        if not code:
            continue
        out.codes += (code,)
        if key == "root":
            out.default = code
        else:
            out.folders[_rel(content, key)] = code
    return out


def _mkdocs(site: Site) -> Declared | None:
    docs = site.content[0] if site.content else site.root
    plugins = site.config.get("plugins")
    entries = plugins.items() if isinstance(plugins, dict) else (
        (k, v) for p in plugins if isinstance(p, dict) for k, v in p.items()) if isinstance(plugins, list) else ()
    i18n = next((_dict(v) for k, v in entries if k == "i18n"), None)
    if i18n is not None:
        out = Declared(f"{_file(site)} i18n plugin")
        languages = i18n.get("languages")
        listed: list[tuple[str, bool]] = []  # (locale as written, is the default)
        if isinstance(languages, list):
            listed = [(str(e.get("locale")), e.get("default") is True) for e in languages
                      if isinstance(e, dict) and e.get("locale")]
        elif isinstance(languages, dict):  # mkdocs-static-i18n before 1.0: {fr: "français"} or {fr: {…}}
            listed = [(str(k), False) for k in languages]
        old_default = i18n.get("default_language") if isinstance(i18n.get("default_language"), str) else ""
        if old_default:
            listed = [(old_default, True)] + [(n, False) for n, _ in listed if n != old_default]
        if listed and not any(d for _, d in listed):
            listed[0] = (listed[0][0], True)  # the plugin's rule: the first language when none is marked
        folder = i18n.get("docs_structure") == "folder"
        for name, is_default in listed:
            code = normalise(name)
            if not code:
                continue
            out.codes += (code,)
            if is_default:
                out.default = code
            if folder:
                out.folders[_rel(docs, name)] = code
            elif not is_default:
                out.suffixes[name] = code
        if not folder and out.default:
            default_name = next(n for n, d in listed if d)
            out.suffixes[default_name] = out.default
        out.suffix_roots = (docs,)
        return out
    theme = _dict(site.config.get("theme"))
    language = normalise(theme.get("language"))
    return Declared(f"{_file(site)} theme.language", language) if language else None


def _hugo(site: Site) -> Declared | None:
    config = {str(k).lower(): v for k, v in site.config.items()}
    languages = _dict(config.get("languages"))
    default_key = config.get("defaultcontentlanguage") if isinstance(config.get("defaultcontentlanguage"), str) else ""
    if not languages:
        code = normalise(default_key) or normalise(config.get("languagecode"))
        source = "defaultContentLanguage" if normalise(default_key) else "languageCode"
        return Declared(f"{_file(site)} {source}", code) if code else None
    out = Declared(f"{_file(site)} languages")
    default_key = default_key or "en"  # Hugo's default
    for key, value in languages.items():
        own = {str(k).lower(): v for k, v in _dict(value).items()}
        code = normalise(own.get("locale")) or normalise(own.get("languagecode")) or normalise(key)
        if not code:
            continue
        out.codes += (code,)
        if key == default_key:
            out.default = code
        out.suffixes[key] = code
        folder = own.get("contentdir")
        if isinstance(folder, str) and folder.strip("/"):
            out.folders[_rel(site.root, folder)] = code
    out.suffix_roots = tuple(site.content)
    return out
