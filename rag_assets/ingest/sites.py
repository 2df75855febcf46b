"""The site generators configured in a docs folder, and what their configuration says (paths only:
nothing here reads a page).

Generators are recognised by their configuration: ``docs.json``/``mint.json`` (Mintlify),
``docusaurus.config.*``, a ``.vitepress`` folder, ``mkdocs.yml``, ``hugo.toml|yaml|json`` (or
``config.toml`` beside ``content/``), ``astro.config.*`` beside ``src/content/docs`` (Starlight), in the
docs folder or a few folders below it. A configuration in JavaScript or TypeScript is never executed:
what it writes as literal data is read (rag_assets.ingest.script_config) into `Site.config`; where it
computes a value, the generator's defaults apply.

A Docusaurus site's content is what its content plugins read (`docusaurus_plugins`): each docs plugin's
``path`` and its versioned folders, the blog's, ``src/pages`` and ``i18n/``; when the configuration does
not say which plugins it uses as data, the whole site folder.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rag_assets.ingest.page_templates import mkdocs_templates
from rag_assets.ingest.script_config import SCRIPT_SUFFIXES, Call, read_script_config, unwrap

# folders never looked into, even to count what they hold: tool caches, never documentation
NEVER_WALKED = frozenset({"node_modules", "__pycache__"})
# test folders (Docusaurus' default `exclude` names __tests__; a repository's test sites and fixtures
# live in such folders whatever the generator): left out wherever a site is found
TEST_FOLDERS = ["__tests__/", "__fixtures__/", "__mocks__/", "__snapshots__/"]
_SITE_SEARCH_DEPTH = 3  # how deep below the docs folder a site's configuration is looked for


@dataclass(frozen=True)
class Site:
    generator: str  # mintlify | docusaurus | vitepress | mkdocs | hugo | starlight
    root: str  # "" = the docs folder, else the doc path of its folder
    content: tuple[str, ...]  # content folders below the docs folder ("" = all of root)
    config: dict = field(default_factory=dict, hash=False, compare=False)
    # Starlight: its docs collection has no loader (Astro's legacy content collections), so `_folder/`s are
    # left out as Astro's legacy collections leave them; the glob loader of `src/content.config.*` reads them
    legacy_collections: bool = field(default=False, compare=False)
    config_file: str = field(default="", compare=False)  # the configuration read, relative to the site's root
    # MkDocs: the templates a page may name that show none of its markdown (rag_assets.ingest.page_templates)
    templates: dict = field(default_factory=dict, hash=False, compare=False)


def rel(base: str, name: str) -> str:
    """`name` below the folder `base` ("" = the docs folder), as a doc path."""
    name = name.strip("/")
    if not name or name == ".":
        return base
    return f"{base}/{name}" if base else name


def below(path: str, base: str) -> str | None:
    """`path` relative to the folder `base` ("" = everything), None when it is not below it."""
    if not base:
        return path
    return path[len(base) + 1:] if path.startswith(base + "/") else None


def find_sites(root: Path) -> list[Site]:
    """The site generators configured in the docs folder or a folder a few levels below it."""
    sites: list[Site] = []

    def look(directory: Path, here: str, depth: int) -> None:
        try:
            entries = {e.name: e for e in os.scandir(directory)}
        except OSError:
            return
        site = _site_at(directory, here, entries)
        if site is not None:
            sites.append(site)
            return  # a site's own folders are its content, not other sites
        if depth >= _SITE_SEARCH_DEPTH:
            return
        for name in sorted(entries):
            entry = entries[name]
            if name.startswith(".") or name in NEVER_WALKED or f"{name}/" in TEST_FOLDERS:
                continue
            try:
                if entry.is_dir():
                    look(Path(entry.path), rel(here, name), depth + 1)
            except OSError:
                continue

    look(root, "", 0)
    return sites


def _site_at(directory: Path, here: str, entries: dict) -> Site | None:
    names = set(entries)
    if "docs.json" in names or "mint.json" in names:
        config = read_config(directory / ("docs.json" if "docs.json" in names else "mint.json"))
        return Site("mintlify", here, (here,), config, config_file="docs.json" if "docs.json" in names else "mint.json")
    docusaurus = _script_named(directory, names, "docusaurus.config")
    if docusaurus is not None:
        config = _script_config(docusaurus)
        return Site("docusaurus", here, _docusaurus_content(directory, here, config), config, config_file=docusaurus.name)
    if ".vitepress" in names:
        vitepress = directory / ".vitepress"
        found = _script_named(vitepress, _names(vitepress), "config") or _script_named(
            vitepress / "config", _names(vitepress / "config"), "index")
        config = _script_config(found) if found else {}
        src_dir = config.get("srcDir")
        content = rel(here, src_dir) if isinstance(src_dir, str) and not src_dir.startswith("..") else here
        return Site("vitepress", here, (content,), config,
                    config_file=found.relative_to(directory).as_posix() if found else "")
    if "mkdocs.yml" in names or "mkdocs.yaml" in names:
        config = _read_yaml(directory / ("mkdocs.yml" if "mkdocs.yml" in names else "mkdocs.yaml"))
        docs_dir = str(config.get("docs_dir") or "docs").strip("/")
        return Site("mkdocs", here, (rel(here, docs_dir),), config,
                    config_file="mkdocs.yml" if "mkdocs.yml" in names else "mkdocs.yaml",
                    templates=mkdocs_templates(directory, config))
    hugo = next((n for n in ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json") if n in names), None)
    if hugo is None and "config.toml" in names and "content" in names and "archetypes" in names:
        hugo = "config.toml"
    if hugo is not None:
        config = read_config(directory / hugo)
        content = {str(config.get("contentDir") or config.get("contentdir") or "content")}
        for lang in (config.get("languages") or {}).values():
            if isinstance(lang, dict) and lang.get("contentDir"):
                content.add(str(lang["contentDir"]))
        return Site("hugo", here, tuple(sorted(rel(here, c) for c in content)), config, config_file=hugo)
    astro = _script_named(directory, names, "astro.config")
    if astro is not None and (directory / "src" / "content" / "docs").is_dir():
        config = _script_config(astro)
        # the content collection's kind decides whether `_folder/`s are entries (rag_assets.ingest.site_rules)
        legacy = not any((directory / "src" / f"content.config{s}").is_file() for s in SCRIPT_SUFFIXES)
        return Site("starlight", here, (rel(here, "src/content/docs"),), config, legacy_collections=legacy,
                    config_file=astro.name)
    return None


# ----------------------------------------------------------------------------------------------
# Docusaurus' content plugins


@dataclass(frozen=True)
class DocsPlugin:
    """One instance of Docusaurus' docs plugin (the classic preset's `docs`, or a plugin entry)."""

    id: str = "default"
    path: str = "docs"  # its folder, relative to the site's folder
    route_base: str = "docs"  # routeBasePath
    options: dict = field(default_factory=dict, hash=False, compare=False)

    def prefixed(self, name: str) -> str:
        """`versioned_docs`, `versions.json`…: the plugin's own name for it (`<id>_versions.json`)."""
        return name if self.id == "default" else f"{self.id}_{name}"


@dataclass(frozen=True)
class ContentPlugins:
    docs: tuple[DocsPlugin, ...] = ()
    blogs: tuple[tuple[str, str], ...] = ()  # (path, routeBasePath)
    pages: tuple[str, ...] = ()  # folders of the pages plugin
    known: bool = False  # the configuration names its presets/plugins as data


def _entry(item) -> tuple[str, object]:
    """A preset/plugin entry: 'name', ['name', options] or [require.resolve('name'), options]."""
    name, options = item, {}
    if isinstance(item, list) and item:
        name, options = item[0], item[1] if len(item) > 1 else {}
    if isinstance(name, Call):
        name = next((a for a in name.args if isinstance(a, str)), name.name)
    return (name if isinstance(name, str) else ""), options


def docusaurus_plugins(config: dict) -> ContentPlugins:
    """The content plugins a Docusaurus configuration sets up, as far as it writes them as data."""
    presets, plugins = config.get("presets"), config.get("plugins")
    if not isinstance(presets, list) and not isinstance(plugins, list):
        return ContentPlugins(docs=(DocsPlugin(),), blogs=(("blog", "blog"),), pages=("src/pages",))
    docs: list[DocsPlugin] = []
    blogs: list[tuple[str, str]] = []
    pages: list[str] = []

    def add(kind: str, options) -> None:
        if options is False:
            return  # `docs: false`: the preset's plugin is off
        options = options if isinstance(options, dict) else {}
        path = options.get("path")
        base = options.get("routeBasePath")
        if kind == "docs":
            docs.append(DocsPlugin(str(options.get("id") or "default") if isinstance(options.get("id"), str) else "default",
                                   path.strip("/") if isinstance(path, str) else "docs",
                                   base.strip("/") if isinstance(base, str) else "docs", options))
        elif kind == "blog":
            blogs.append((path.strip("/") if isinstance(path, str) else "blog",
                          base.strip("/") if isinstance(base, str) else "blog"))
        else:
            pages.append(path.strip("/") if isinstance(path, str) else "src/pages")

    for name, options in map(_entry, presets if isinstance(presets, list) else []):
        if "classic" in name and isinstance(options, dict):
            for kind in ("docs", "blog", "pages"):
                add(kind, options.get(kind, {}))
    for name, options in map(_entry, plugins if isinstance(plugins, list) else []):
        for kind in ("docs", "blog", "pages"):
            if f"content-{kind}" in name:
                add(kind, options)
    return ContentPlugins(tuple(docs), tuple(blogs), tuple(pages), known=True)


def _docusaurus_content(directory: Path, here: str, config: dict) -> tuple[str, ...]:
    plugins = docusaurus_plugins(config)
    if not plugins.known:
        return (here,)
    folders = {rel(here, "i18n")}
    for plugin in plugins.docs:
        folders.add(rel(here, plugin.path))
        folders.add(rel(here, plugin.prefixed("versioned_docs")))
    folders.update(rel(here, path) for path, _ in plugins.blogs)
    folders.update(rel(here, path) for path in plugins.pages)
    return tuple(sorted(folders))


# ----------------------------------------------------------------------------------------------
# reading configurations


def _names(directory: Path) -> set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()


def _script_named(directory: Path, names: set[str], stem: str) -> Path | None:
    """`stem.ts`, `stem.js`, … in a folder (the first in SCRIPT_SUFFIXES' order), else None."""
    return next((directory / f"{stem}{suffix}" for suffix in SCRIPT_SUFFIXES if f"{stem}{suffix}" in names), None)


def _script_config(path: Path) -> dict:
    """A JavaScript/TypeScript configuration's object, read as data (rag_assets.ingest.script_config: its
    literal values; {} when it says nothing readable). Wrappers such as defineConfig are taken off; calls
    inside (Starlight's `starlight({...})`) stay as `Call`s."""
    value = unwrap(read_script_config(path))
    return value if isinstance(value, dict) else {}


class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml uses tags such as !!python/name:… and !ENV: read them as plain values, run nothing."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_AnyTagLoader)  # noqa: S506 - SafeLoader subclass
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def read_config(path: Path) -> dict:
    """A generator's JSON, TOML or YAML configuration as a mapping ({} when it cannot be read as one)."""
    if path.suffix not in (".toml", ".json"):
        return _read_yaml(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError):  # TOMLDecodeError and JSONDecodeError are ValueErrors
        return {}
    return data if isinstance(data, dict) else {}
