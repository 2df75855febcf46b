"""The versions of a site's docs kept in its repository, and which of them a corpus indexes.

Supported (paths and configuration only: nothing here reads a page):

- **Docusaurus** (each docs plugin: the classic preset's and every ``plugin-content-docs``):
  ``versions.json`` (``<id>_versions.json``) lists the versions, newest first; each lives in
  ``versioned_docs/version-<name>/`` (``<id>_versioned_docs/…``), its translations in
  ``i18n/<locale>/docusaurus-plugin-content-docs[-<id>]/version-<name>/``. The plugin's ``docs/`` folder is
  the version Docusaurus calls ``current`` and shows as *Next*. The **current** version, the one the site
  serves at its unversioned route, is the plugin's ``lastVersion``, else the first entry of versions.json
  (else ``docs/``). The others it publishes are older versions (after ``lastVersion``) or, for ``docs/``
  when it is not ``lastVersion``, the unreleased one (``/docs/next/``). ``onlyIncludeVersions``,
  ``includeCurrentVersion: false`` and ``disableVersioning`` leave versions out of the build, and a folder
  of ``versioned_docs/`` no versions.json entry names is an archive the build never reads: those are
  unpublished. A version's route part is its ``versions.<name>.path``, else ``""`` for the current one,
  ``next`` for ``docs/``, its name for the others.
- **Mintlify**: docs.json ``navigation.versions`` (each ``{"version": "v2", …navigation…}``; the one
  with ``"default": true``, else the first, is current) and mint.json's ``versions`` list with
  ``"version"`` on its navigation groups (the first is current). A page belongs to the versions whose
  navigation lists it (a page listed by the current version and an older one is current's).

Not versioned in the repository, so nothing to detect: MkDocs with mike (each version is a build
published to a branch), VitePress, Starlight and Hugo (versions there are separate builds or
branches; a site that keeps several in one tree is one site whose folders are its sections).

A version's name is the site's: versions.json's entries, Mintlify's ``version`` values, and ``next``
for Docusaurus' ``docs/`` unless its ``versions.current.label`` names it otherwise.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets.ingest.sites import Site, docusaurus_plugins, rel
from rag_assets.vocabulary.languages import split_list

CURRENT = "current"  # RAG_VERSIONS: the version the site serves at its unversioned route (the default)
ALL = "all"  # RAG_VERSIONS: every version the site publishes
# why a version's pages are left out
OLDER_VERSION = "older_version"
UNRELEASED_VERSION = "unreleased_version"
UNPUBLISHED_VERSION = "unpublished_version"

# a version's standing in its site
IS_CURRENT = "current"
IS_OLDER = "older"
IS_UNRELEASED = "unreleased"
IS_UNPUBLISHED = "unpublished"
_REASONS = {IS_OLDER: OLDER_VERSION, IS_UNRELEASED: UNRELEASED_VERSION, IS_UNPUBLISHED: UNPUBLISHED_VERSION}
_DOCUSAURUS_NEXT = "next"


def parse_versions(raw: str) -> tuple[str, ...]:
    """RAG_VERSIONS: "current" (the default), "all", or the site's version names ("2.0,1.9")."""
    names = split_list(raw or CURRENT, ",")
    if not names:
        return (CURRENT,)
    if ALL in names:
        return (ALL,)
    return names


@dataclass(frozen=True)
class Version:
    """One version of a site's docs, and where its pages are."""

    name: str  # as the site names it: "2.0", "v1.12.0", "next"
    standing: str  # IS_CURRENT | IS_OLDER | IS_UNRELEASED | IS_UNPUBLISHED
    route: str  # its part of the route: "" (the current one), "next", "2.0"
    folders: tuple[str, ...] = ()  # doc paths of the folders holding its pages (one per locale)
    pages: frozenset[str] = frozenset()  # doc paths without extension (Mintlify: its navigation's pages)
    site_root: str = ""

    def reason(self, wanted: tuple[str, ...]) -> str | None:
        """Why this version's pages are left out under RAG_VERSIONS=`wanted`, None when they are indexed."""
        if self.name in wanted:
            return None  # named on purpose: indexed even when the site does not publish it
        if self.standing == IS_UNPUBLISHED:
            return UNPUBLISHED_VERSION
        if ALL in wanted or (CURRENT in wanted and self.standing == IS_CURRENT):
            return None
        return _REASONS.get(self.standing, OLDER_VERSION)


@dataclass
class SiteVersions:
    """Every version found in a docs folder's sites."""

    versions: list[Version] = field(default_factory=list)
    _by_folder: dict[str, Version] = field(default_factory=dict, repr=False)
    _by_page: dict[str, Version] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for version in self.versions:
            for folder in version.folders:
                self._by_folder.setdefault(folder, version)
            for page in version.pages:
                earlier = self._by_page.get(page)
                if earlier is None or (version.standing == IS_CURRENT and earlier.standing != IS_CURRENT):
                    self._by_page[page] = version

    def folder(self, doc_path: str) -> Version | None:
        """The version whose folder this is (exactly)."""
        return self._by_folder.get(doc_path)

    def of(self, doc_path: str) -> tuple[Version, str] | None:
        """The version a page belongs to, and the folder holding it ("" for a version by navigation)."""
        if self._by_folder:
            parts = doc_path.split("/")
            for i in range(len(parts) - 1, 0, -1):
                version = self._by_folder.get("/".join(parts[:i]))
                if version is not None:
                    return version, "/".join(parts[:i])
        if self._by_page:
            version = self._by_page.get(doc_path.rsplit(".", 1)[0])
            if version is not None:
                return version, ""
        return None

    def site_versions(self, site_root: str) -> list[Version]:
        return [v for v in self.versions if v.site_root == site_root]


def detect(root: Path, sites: list[Site]) -> SiteVersions:
    """The versions of every site in the docs folder `root`."""
    found: list[Version] = []
    for site in sites:
        if site.generator == "docusaurus":
            found.extend(_docusaurus(Path(root), site))
        elif site.generator == "mintlify":
            found.extend(_mintlify(site))
    return SiteVersions(found)


# ----------------------------------------------------------------------------------------------
# Docusaurus


def _read_names(path: Path) -> list[str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return [str(v) for v in data if isinstance(v, (str, int, float))] if isinstance(data, list) else None


def _subfolders(path: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


def _docusaurus(root: Path, site: Site) -> list[Version]:
    site_dir = root / site.root if site.root else root
    locales = _subfolders(site_dir / "i18n")
    out: list[Version] = []
    for plugin in docusaurus_plugins(site.config).docs:
        options = plugin.options
        listed = _read_names(site_dir / plugin.prefixed("versions.json"))
        versioned = plugin.prefixed("versioned_docs")
        archived = _subfolders(site_dir / versioned)
        if listed is None and not archived:
            continue  # not versioned: its pages carry no version
        listed = listed or []
        per_version = options.get("versions") if isinstance(options.get("versions"), dict) else {}
        names = [] if options.get("disableVersioning") is True else list(listed)
        if options.get("includeCurrentVersion") is not False and CURRENT not in names:
            names.insert(0, CURRENT)
        only = options.get("onlyIncludeVersions")
        included = [n for n in names if n in only] if isinstance(only, list) else names
        last = options.get("lastVersion")
        if not isinstance(last, str):
            last = next((n for n in included if n != CURRENT), CURRENT)
        i18n_name = "docusaurus-plugin-content-docs" + ("" if plugin.id == "default" else f"-{plugin.id}")

        def make(name: str, folder: str, sub: str) -> Version:
            settings = per_version.get(name) if isinstance(per_version.get(name), dict) else {}
            if name not in included:
                standing = IS_UNPUBLISHED
            elif name == last:
                standing = IS_CURRENT
            elif name == CURRENT:
                standing = IS_UNRELEASED
            else:
                standing = IS_OLDER
            route = settings.get("path") if isinstance(settings.get("path"), str) else (
                "" if name == last else _DOCUSAURUS_NEXT if name == CURRENT else name)
            shown = name
            if name == CURRENT:
                label = settings.get("label")
                shown = label if isinstance(label, str) and label.strip() and " " not in label.strip() else _DOCUSAURUS_NEXT
            folders = (rel(site.root, folder), *(rel(site.root, f"i18n/{loc}/{i18n_name}/{sub}") for loc in locales))
            return Version(shown, standing, route.strip("/"), folders, site_root=site.root)

        out.append(make(CURRENT, plugin.path, CURRENT))
        for name in listed:
            out.append(make(name, f"{versioned}/version-{name}", f"version-{name}"))
        for folder in archived:  # archives no versions.json entry names: never built
            name = folder[len("version-"):] if folder.startswith("version-") else folder
            if name not in listed:
                out.append(Version(name, IS_UNPUBLISHED, name, (rel(site.root, f"{versioned}/{folder}"),),
                                   site_root=site.root))
    return out


# ----------------------------------------------------------------------------------------------
# Mintlify


def _pages(node) -> set[str]:
    found: set[str] = set()
    if isinstance(node, str):
        found.add(node.strip("/"))
    elif isinstance(node, list):
        for item in node:
            found |= _pages(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("pages", "page", "groups", "tabs", "anchors", "dropdowns", "languages", "menu", "products"):
                found |= _pages(value)
    return found


def _mintlify(site: Site) -> list[Version]:
    config = site.config
    navigation = config.get("navigation")
    entries: list[tuple[str, bool, set[str]]] = []  # (name, default, pages)
    if isinstance(navigation, dict) and isinstance(navigation.get("versions"), list):  # docs.json
        for entry in navigation["versions"]:
            if isinstance(entry, dict) and isinstance(entry.get("version"), str):
                entries.append((entry["version"], entry.get("default") is True, _pages(entry)))
    elif isinstance(config.get("versions"), list) and isinstance(navigation, list):  # mint.json
        for item in config["versions"]:
            name = item if isinstance(item, str) else item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str):
                groups = [g for g in navigation if isinstance(g, dict) and g.get("version") == name]
                entries.append((name, False, _pages(groups)))
    if not entries:
        return []
    current = next((name for name, default, _ in entries if default), entries[0][0])
    return [Version(name, IS_CURRENT if name == current else IS_OLDER, "",
                    pages=frozenset(rel(site.root, p) for p in pages), site_root=site.root)
            for name, _, pages in entries]
