"""Which markdown files under a docs folder are pages of the site, the way its generator sees them
(paths only: nothing here reads a page).

A folder is often a whole documentation repository, not just its pages. Left out, each with its reason:

- ``gitignore``: the repository's ignore files, as git applies them: every ``.gitignore`` from the
  docs folder down (each relative to where it sits), those between the repository's root and the docs
  folder when the docs folder is a subfolder of a git work tree, and ``.git/info/exclude``;
- ``mintignore``: Mintlify's ``.mintignore`` (gitignore syntax, at the site's root);
- ``ragignore``: ours, ``.ragignore`` (gitignore syntax, anywhere, like ``.gitignore``). It has the last
  word: ``!pattern`` in it brings back a file another ignore file or a generator rule leaves out;
- ``generator``: what the site generator found in the folder never renders as a page of its own:
  Mintlify's default ignored names (``node_modules``, ``build``, ``dist``, ``README.md``, …);
  Docusaurus' partials (files and folders named ``_x``) and tests; Starlight's ``_x`` files; VitePress'
  ``node_modules`` and ``dist``; MkDocs' ``exclude_docs`` and its own defaults (mkdocs.yml is read);
  and every page outside the generator's content folder (``docs_dir`` of MkDocs, ``src/content/docs``
  of Starlight, ``content`` of Hugo, the folder holding ``.vitepress``; a Docusaurus site's own root
  files such as README.md) when the folder holds a site;
- ``draft``: MkDocs' ``draft_docs`` patterns;
- ``hidden``: pages under a Mintlify docs.json navigation element with ``hidden: true`` (unless it
  says ``searchable: true`` or the site sets ``seo.indexing: "all"``);
- ``exclude`` / ``not_included``: the corpus's own globs (RAG_EXCLUDE, RAG_INCLUDE).

Generators are recognised by their configuration: ``docs.json``/``mint.json`` (Mintlify),
``docusaurus.config.*``, a ``.vitepress`` folder, ``mkdocs.yml``, ``hugo.toml|yaml|json`` (or
``config.toml`` beside ``content/``), ``astro.config.*`` beside ``src/content/docs`` (Starlight). A
configuration in JavaScript or TypeScript is never executed: what it writes as literal data is read
(rag_assets.ingest.script_config) into `Site.config`; where it computes a value, the generator's
defaults apply (say more with ``.ragignore`` or RAG_EXCLUDE). Folders kept on purpose (documents ingested from code) are never left out.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pathspec
import yaml

from rag_assets.ingest.script_config import SCRIPT_SUFFIXES, read_script_config, unwrap

GITIGNORE = "gitignore"
MINTIGNORE = "mintignore"
RAGIGNORE = "ragignore"
GENERATOR = "generator"
DRAFT = "draft"
HIDDEN = "hidden"
EXCLUDE = "exclude"
NOT_INCLUDED = "not_included"

IGNORE_FILES = {".gitignore": GITIGNORE, ".mintignore": MINTIGNORE, ".ragignore": RAGIGNORE}
# folders never looked into, even to count what they hold: tool caches, never documentation
NEVER_WALKED = frozenset({"node_modules", "__pycache__"})
_SITE_SEARCH_DEPTH = 3  # how deep below the docs folder a site's configuration is looked for

# Mintlify's default ignored patterns (its .mintignore page)
_MINTLIFY_DEFAULTS = ["node_modules/", "build/", "dist/", "coverage/", "tmp/", "temp/", "README.md", "LICENSE.md",
                      "CHANGELOG.md", "CONTRIBUTING.md"]
# the Docusaurus content plugins' default `exclude`
_DOCUSAURUS_DEFAULTS = ["_*.md", "_*.mdx", "_*/", "__tests__/", "node_modules/", "build/"]
_STARLIGHT_DEFAULTS = ["_*.md", "_*.mdx", "node_modules/", "dist/"]
_VITEPRESS_DEFAULTS = ["node_modules/", "dist/"]
_MKDOCS_DEFAULTS = [".*", "/templates/"]
# test folders (Docusaurus' default `exclude` names __tests__; a repository's test sites and fixtures
# live in such folders whatever the generator): left out wherever a site is found
_TEST_FOLDERS = ["__tests__/", "__fixtures__/", "__mocks__/", "__snapshots__/"]


def _spec(lines) -> pathspec.GitIgnoreSpec | None:
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _read_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        return _spec(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


@dataclass
class _Rules:
    """Gitignore-style rules of one source, each set relative to the folder it applies from."""

    reason: str
    sets: list[tuple[str, pathspec.GitIgnoreSpec]] = field(default_factory=list)  # (base "" or "a/b", spec)

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored, False: negated (brought back), None: no rule says. The deepest set that says wins."""
        for base, spec in reversed(self.sets):
            if base and not (rel == base or rel.startswith(base + "/")):
                continue
            below = rel[len(base) + 1:] if base else rel
            if not below or below == rel and base:
                continue
            result = spec.check_file(below + ("/" if is_dir else ""))
            if result.include is not None:
                return result.include
        return None


@dataclass(frozen=True)
class Site:
    generator: str  # mintlify | docusaurus | vitepress | mkdocs | hugo | starlight
    root: str  # "" = the docs folder, else the doc path of its folder
    content: tuple[str, ...]  # content folders below the docs folder ("" = all of root)
    config: dict = field(default_factory=dict, hash=False, compare=False)


def _rel(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def find_sites(root: Path) -> list[Site]:
    """The site generators configured in the docs folder or a folder a few levels below it."""
    sites: list[Site] = []

    def look(directory: Path, rel: str, depth: int) -> None:
        try:
            entries = {e.name: e for e in os.scandir(directory)}
        except OSError:
            return
        site = _site_at(directory, rel, entries)
        if site is not None:
            sites.append(site)
            return  # a site's own folders are its content, not other sites
        if depth >= _SITE_SEARCH_DEPTH:
            return
        for name in sorted(entries):
            entry = entries[name]
            if name.startswith(".") or name in NEVER_WALKED or f"{name}/" in _TEST_FOLDERS:
                continue
            try:
                if entry.is_dir():
                    look(Path(entry.path), _rel(rel, name), depth + 1)
            except OSError:
                continue

    look(root, "", 0)
    return sites


def _site_at(directory: Path, rel: str, entries: dict) -> Site | None:
    names = set(entries)
    if "docs.json" in names or "mint.json" in names:
        config = _read_config(directory / ("docs.json" if "docs.json" in names else "mint.json"))
        return Site("mintlify", rel, (rel,), config)
    docusaurus = _script_named(directory, names, "docusaurus.config")
    if docusaurus is not None:
        return Site("docusaurus", rel, (rel,), _script_config(docusaurus))
    if ".vitepress" in names:
        vitepress = directory / ".vitepress"
        found = _script_named(vitepress, _names(vitepress), "config") or _script_named(
            vitepress / "config", _names(vitepress / "config"), "index")
        return Site("vitepress", rel, (rel,), _script_config(found) if found else {})
    if "mkdocs.yml" in names or "mkdocs.yaml" in names:
        config = _read_yaml(directory / ("mkdocs.yml" if "mkdocs.yml" in names else "mkdocs.yaml"))
        docs_dir = str(config.get("docs_dir") or "docs").strip("/") if isinstance(config, dict) else "docs"
        return Site("mkdocs", rel, (_rel(rel, docs_dir),), config if isinstance(config, dict) else {})
    hugo = next((n for n in ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json") if n in names), None)
    if hugo is None and "config.toml" in names and "content" in names and "archetypes" in names:
        hugo = "config.toml"
    if hugo is not None:
        config = _read_config(directory / hugo)
        content = {str(config.get("contentDir") or config.get("contentdir") or "content")}
        for lang in (config.get("languages") or {}).values():
            if isinstance(lang, dict) and lang.get("contentDir"):
                content.add(str(lang["contentDir"]))
        return Site("hugo", rel, tuple(sorted(_rel(rel, c.strip("/")) for c in content)), config)
    astro = _script_named(directory, names, "astro.config")
    if astro is not None and (directory / "src" / "content" / "docs").is_dir():
        return Site("starlight", rel, (_rel(rel, "src/content/docs"),), _script_config(astro))
    return None


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


def _read_config(path: Path) -> dict:
    """A generator's JSON, TOML or YAML configuration as a mapping ({} when it cannot be read as one)."""
    if path.suffix not in (".toml", ".json"):
        return _read_yaml(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError):  # TOMLDecodeError and JSONDecodeError are ValueErrors
        return {}
    return data if isinstance(data, dict) else {}


def _mintlify_hidden(config: dict) -> set[str]:
    """Pages (without extension) under a docs.json navigation element marked hidden."""
    if (config.get("seo") or {}).get("indexing") == "all":
        return set()
    hidden: set[str] = set()

    def walk(node, under_hidden: bool) -> None:
        if isinstance(node, str):
            if under_hidden:
                hidden.add(node.strip("/"))
        elif isinstance(node, list):
            for item in node:
                walk(item, under_hidden)
        elif isinstance(node, dict):
            here = under_hidden or (node.get("hidden") is True and node.get("searchable") is not True)
            for key, value in node.items():
                if isinstance(value, (list, dict)) or (key in ("page", "pages") and isinstance(value, str)):
                    walk(value, here)

    walk(config.get("navigation") or {}, False)
    return hidden


def _git_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


class SiteRules:
    """The path rules of one docs folder: ignore files, generator rules, the corpus's globs.

    The walk asks `folder(rel)` before entering a folder (its ignore files are read then) and
    `page(rel)` for each markdown file; both answer None (in scope) or the reason it is left out.
    """

    def __init__(self, root: Path, *, include: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                 ignore_files: bool = True, keep: tuple[str, ...] = ()):
        self.root = Path(root)
        self.ignore_files = ignore_files
        self.keep = tuple(k.strip("/") for k in keep if k.strip("/"))
        self.include = _spec(include) if include else None
        self.exclude = _spec(exclude) if exclude else None
        self.sources = {reason: _Rules(reason) for reason in (RAGIGNORE, MINTIGNORE, GITIGNORE)}
        self.generator = _Rules(GENERATOR)
        self.drafts = _Rules(DRAFT)
        self.hidden_pages: set[str] = set()
        self.sites = find_sites(self.root) if ignore_files else []
        self._content: list[str] = [c for s in self.sites for c in s.content]
        self._site_root_files: set[str] = set()  # folders whose own markdown files are not pages (Docusaurus)
        if ignore_files:
            self._ancestors()
            if self.sites:
                self.generator.sets.append(("", _spec(_TEST_FOLDERS)))
            for site in self.sites:
                self._site_rules(site)

    # setup ---------------------------------------------------------------------------------
    def _ancestors(self) -> None:
        """The ignore files between the repository's root and the docs folder (git applies them there)."""
        root = self.root.resolve()
        git_root = _git_root(root)
        if git_root is None:
            return
        rel = root.relative_to(git_root).as_posix()
        chain = [git_root, *[git_root / p for p in _prefixes(rel)]][:-1] if rel != "." else []
        exclude_file = git_root / ".git" / "info" / "exclude"
        sets: list[tuple[pathspec.GitIgnoreSpec, str]] = []
        if exclude_file.is_file():
            spec = _read_spec(exclude_file)
            if spec is not None:
                sets.append((spec, ""))
        for folder in chain:
            spec = _read_spec(folder / ".gitignore")
            if spec is not None:
                sets.append((spec, folder.relative_to(git_root).as_posix() if folder != git_root else ""))
        if not sets:
            return
        # the docs folder itself ignored (generated pages, a folder chosen on purpose): the
        # repository's rules above it are not applied, its own files below still are
        if _ignored_chain(sets, rel):
            return
        for spec, base in sets:
            # re-root a rule set at the docs folder: a path below it is tested as git would test it
            self.sources[GITIGNORE].sets.append(("", _Rebased(spec, base, rel)))  # type: ignore[arg-type]

    def _site_rules(self, site: Site) -> None:
        defaults = {"mintlify": _MINTLIFY_DEFAULTS, "docusaurus": _DOCUSAURUS_DEFAULTS,
                    "starlight": _STARLIGHT_DEFAULTS, "vitepress": _VITEPRESS_DEFAULTS,
                    "mkdocs": _MKDOCS_DEFAULTS}.get(site.generator, [])
        if site.generator == "mkdocs":
            extra = site.config.get("exclude_docs")
            if isinstance(extra, str):
                defaults = defaults + extra.splitlines()
            drafts = site.config.get("draft_docs")
            if isinstance(drafts, str) and _spec(drafts.splitlines()):
                self.drafts.sets.append((site.content[0], _spec(drafts.splitlines())))
            base = site.content[0]
        else:
            base = site.root
        if defaults:
            self.generator.sets.append((base, _spec(defaults)))
        if site.generator == "docusaurus":
            self._site_root_files.add(site.root)
        if site.generator == "mintlify":
            for page in _mintlify_hidden(site.config):
                self.hidden_pages.add(_rel(site.root, page))

    # questions of the walk ---------------------------------------------------------------
    def enter(self, rel: str, directory: str) -> None:
        """Read the ignore files of a folder the walk enters (rel: "" for the docs folder)."""
        if not self.ignore_files:
            return
        for name, reason in IGNORE_FILES.items():
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                spec = _read_spec(Path(path))
                if spec is not None:
                    self.sources[reason].sets.append((rel, spec))

    def leave(self, rel: str) -> None:
        """Forget the ignore files of a folder the walk has left (they apply below it only)."""
        for rules in self.sources.values():
            while rules.sets and rules.sets[-1][0] == rel and rel:
                rules.sets.pop()

    def folder(self, rel: str) -> str | None:
        return self._verdict(rel, True)

    def page(self, rel: str) -> str | None:
        return self._verdict(rel, False)

    def _kept(self, rel: str) -> bool:
        return any(rel == k or rel.startswith(k + "/") for k in self.keep)

    def _verdict(self, rel: str, is_dir: bool) -> str | None:
        if self._kept(rel):
            return None
        said = self.sources[RAGIGNORE].verdict(rel, is_dir)
        if said is True:
            return RAGIGNORE
        if said is None:
            for reason in (GITIGNORE, MINTIGNORE):
                if self.sources[reason].verdict(rel, is_dir):
                    return reason
            if self.generator.verdict(rel, is_dir) or (not is_dir and self._outside(rel)):
                return GENERATOR
            if self.drafts.verdict(rel, is_dir):
                return DRAFT
            if not is_dir and rel.rsplit(".", 1)[0] in self.hidden_pages:
                return HIDDEN
        if is_dir:
            return None
        if self.exclude is not None and self.exclude.match_file(rel):
            return EXCLUDE
        if self.include is not None and not self.include.match_file(rel):
            return NOT_INCLUDED
        return None

    def _outside(self, rel: str) -> bool:
        """A page outside every site's content folder, when the folder holds a site."""
        if not self._content:
            return False
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if parent in self._site_root_files:
            return True
        return not any(c == "" or rel.startswith(c + "/") for c in self._content)


class _Rebased:
    """A rule set of an ancestor folder, asked about paths below the docs folder."""

    def __init__(self, spec: pathspec.GitIgnoreSpec, base: str, docs_rel: str):
        self.spec, self.prefix = spec, docs_rel[len(base) + 1:] if base else docs_rel

    def check_file(self, path: str):
        return self.spec.check_file(f"{self.prefix}/{path}")


def _prefixes(rel: str) -> list[str]:
    parts = PurePosixPath(rel).parts
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _ignored_chain(sets: list[tuple[pathspec.GitIgnoreSpec, str]], rel: str) -> bool:
    """Whether the docs folder (or a folder above it, below the repository root) is ignored."""
    for prefix in _prefixes(rel):
        verdict = None
        for spec, base in sets:
            if base and not (prefix == base or prefix.startswith(base + "/")):
                continue
            below = prefix[len(base) + 1:] if base else prefix
            if not below:
                continue
            result = spec.check_file(below + "/")
            if result.include is not None:
                verdict = result.include
        if verdict:
            return True
    return False
