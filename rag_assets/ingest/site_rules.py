"""Which markdown files under a docs folder are pages of the site, the way its generator sees them
(paths only: nothing here reads a page).

A folder is often a whole documentation repository, not just its pages. Left out, each with its reason:

- ``gitignore``: the repository's ignore files, as git applies them: every ``.gitignore`` from the
  docs folder down (each relative to where it sits), those between the repository's root and the docs
  folder when the docs folder is a subfolder of a git work tree, and ``.git/info/exclude``;
- ``mintignore``: Mintlify's ``.mintignore`` (gitignore syntax, at the site's root);
- ``ragignore``: ours, ``.ragignore`` (gitignore syntax, anywhere, like ``.gitignore``). It has the last
  word: ``!pattern`` in it brings back a file another ignore file or a generator rule leaves out;
- what the site's generator (rag_assets.ingest.sites) never publishes as a page, by its own rules:
  ``partial``: files named ``_x`` (Docusaurus, Starlight) and folders named ``_x`` (Docusaurus; Starlight
  with legacy content collections — its glob loader reads them otherwise), imported by pages, never pages
  themselves (the snippet machinery still reads them); ``error_page``: the site's 404 page (Starlight's
  ``404.md``, VitePress' ``404.md``, Docusaurus' ``src/pages/404.md``); ``site_exclude``: the exclusions its
  configuration writes (VitePress ``srcExclude``, MkDocs ``exclude_docs``, the Docusaurus docs plugin's
  ``exclude``); ``outside_content``: every page outside the generator's content folders (``docs_dir`` of
  MkDocs, ``src/content/docs`` of Starlight, ``content`` of Hugo, VitePress' ``srcDir``, Docusaurus'
  content plugins' folders, a Docusaurus site's own root files such as README.md); ``page_resource``: a
  markdown file inside a Hugo leaf bundle (a folder with ``index.md``), a resource of that page;
  ``listing_page``: a page whose build is a listing of other pages, its own markdown only the list's header:
  the index of Material for MkDocs' blog (``<blog_dir>/index.md`` of each ``blog`` plugin, "the entry point
  to your blog – a paginated view listing all posts", each post a page of its own);
  ``generator``: the generators' default ignored names (Mintlify's ``node_modules``, ``build``,
  ``README.md``…; ``node_modules``, ``build``, ``dist``; MkDocs' ``.*`` and ``/templates/``; test folders);
- ``older_version`` / ``unreleased_version`` / ``unpublished_version``: the folders of versions the
  corpus does not index (rag_assets.ingest.versions; RAG_VERSIONS);
- ``draft``: MkDocs' ``draft_docs`` patterns;
- ``hidden``: pages under a Mintlify docs.json navigation element with ``hidden: true`` (unless it
  says ``searchable: true`` or the site sets ``seo.indexing: "all"``);
- ``exclude`` / ``not_included``: the corpus's own globs (RAG_EXCLUDE, RAG_INCLUDE).

Folders kept on purpose (documents ingested from code) are never left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pathspec

from rag_assets.ingest import versions as versions_mod
from rag_assets.ingest.sites import NEVER_WALKED, TEST_FOLDERS, Site, docusaurus_plugins, find_sites  # noqa: F401 - Site: re-exported
from rag_assets.ingest.sites import rel as _rel
from rag_assets.ingest.versions import SiteVersions

GITIGNORE = "gitignore"
MINTIGNORE = "mintignore"
RAGIGNORE = "ragignore"
GENERATOR = "generator"
PARTIAL = "partial"
ERROR_PAGE = "error_page"
SITE_EXCLUDE = "site_exclude"
OUTSIDE_CONTENT = "outside_content"
PAGE_RESOURCE = "page_resource"
LISTING_PAGE = "listing_page"
DRAFT = "draft"
HIDDEN = "hidden"
EXCLUDE = "exclude"
NOT_INCLUDED = "not_included"
# the generators' own reasons, asked in this order (the first that says wins)
_GENERATOR_REASONS = (GENERATOR, PARTIAL, ERROR_PAGE, SITE_EXCLUDE, LISTING_PAGE)

IGNORE_FILES = {".gitignore": GITIGNORE, ".mintignore": MINTIGNORE, ".ragignore": RAGIGNORE}

# Mintlify's default ignored patterns (its .mintignore page)
_MINTLIFY_DEFAULTS = ["node_modules/", "build/", "dist/", "coverage/", "tmp/", "temp/", "README.md", "LICENSE.md",
                      "CHANGELOG.md", "CONTRIBUTING.md"]
# the Docusaurus content plugins' default `exclude` (GlobExcludeDefault): partials, tests
_UNDERSCORE_FILES = ["_*.md", "_*.mdx"]
_UNDERSCORE_FOLDERS = ["_*/"]
_BUILD_FOLDERS = {"docusaurus": ["node_modules/", "build/"], "starlight": ["node_modules/", "dist/"],
                  "vitepress": ["node_modules/", "dist/"], "mkdocs": [".*", "/templates/"]}
_ERROR_PAGES = {"starlight": ["/404.md", "/404.mdx"], "vitepress": ["/404.md"]}
_MARKDOWN = (".md", ".mdx")


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
                 ignore_files: bool = True, keep: tuple[str, ...] = (), versions: tuple[str, ...] = (versions_mod.CURRENT,)):
        self.root = Path(root)
        self.ignore_files = ignore_files
        self.keep = tuple(k.strip("/") for k in keep if k.strip("/"))
        self.include = _spec(include) if include else None
        self.exclude = _spec(exclude) if exclude else None
        self.wanted_versions = versions
        self.sources = {reason: _Rules(reason) for reason in (RAGIGNORE, MINTIGNORE, GITIGNORE)}
        self.generator = {reason: _Rules(reason) for reason in _GENERATOR_REASONS}
        self.drafts = _Rules(DRAFT)
        self.hidden_pages: set[str] = set()
        self.sites = find_sites(self.root) if ignore_files else []
        # the versions of the sites' docs (found whatever RAG_IGNORE_FILES says: a page's version is a fact)
        self.versions: SiteVersions = versions_mod.detect(self.root, self.sites)
        self._content: list[str] = [c for s in self.sites for c in s.content]
        self._site_root_files: set[str] = set()  # folders whose own markdown files are not pages (Docusaurus)
        self._bundles: list[str] = []  # Hugo content folders, where a folder with index.md is a leaf bundle
        if ignore_files:
            self._ancestors()
            if self.sites:
                self.generator[GENERATOR].sets.append(("", _spec(TEST_FOLDERS)))
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

    def _add(self, reason: str, base: str, lines) -> None:
        spec = _spec(lines)
        if spec is not None:
            self.generator[reason].sets.append((base, spec))

    def _site_rules(self, site: Site) -> None:
        generator, config = site.generator, site.config
        content = site.content[0] if site.content else site.root
        if generator == "mintlify":
            self._add(GENERATOR, site.root, _MINTLIFY_DEFAULTS)
            for page in _mintlify_hidden(config):
                self.hidden_pages.add(_rel(site.root, page))
            return
        base = content if generator in ("mkdocs", "vitepress") else site.root
        self._add(GENERATOR, base, _BUILD_FOLDERS.get(generator, []))
        if generator == "docusaurus":
            self._add(PARTIAL, site.root, _UNDERSCORE_FILES + _UNDERSCORE_FOLDERS)
            self._add(ERROR_PAGE, site.root, ["/src/pages/404.md", "/src/pages/404.mdx"])
            self._site_root_files.add(site.root)
            for plugin in docusaurus_plugins(config).docs:
                excluded = plugin.options.get("exclude")
                if isinstance(excluded, list):
                    self._add(SITE_EXCLUDE, _rel(site.root, plugin.path), _globs(excluded))
        elif generator == "starlight":
            legacy = site.legacy_collections
            self._add(PARTIAL, content, _UNDERSCORE_FILES + (_UNDERSCORE_FOLDERS if legacy else []))
            if not _starlight_says(config, "disable404Route"):
                self._add(ERROR_PAGE, content, _ERROR_PAGES["starlight"])
        elif generator == "vitepress":
            self._add(ERROR_PAGE, content, _ERROR_PAGES["vitepress"])
            excluded = config.get("srcExclude")
            if isinstance(excluded, list):
                self._add(SITE_EXCLUDE, content, _globs(excluded))
        elif generator == "mkdocs":
            extra = config.get("exclude_docs")
            if isinstance(extra, str):
                self._add(SITE_EXCLUDE, content, extra.splitlines())
            drafts = config.get("draft_docs")
            if isinstance(drafts, str) and _spec(drafts.splitlines()):
                self.drafts.sets.append((content, _spec(drafts.splitlines())))
            self._add(LISTING_PAGE, content, [f"/{_rel(blog, 'index.md')}" for blog in _mkdocs_blogs(config)])
        elif generator == "hugo":
            self._bundles.extend(site.content)

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
            for reason in _GENERATOR_REASONS:
                if self.generator[reason].verdict(rel, is_dir):
                    return reason
            if not is_dir and self._outside(rel):
                return OUTSIDE_CONTENT
            if not is_dir and self._bundles and self._in_leaf_bundle(rel):
                return PAGE_RESOURCE
            version = self._version_reason(rel, is_dir)
            if version:
                return version
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

    def _version_reason(self, rel: str, is_dir: bool) -> str | None:
        """A folder of a version the corpus does not index (Docusaurus), or a page only such a version's
        navigation lists (Mintlify)."""
        if is_dir:
            version = self.versions.folder(rel)
        else:
            found = self.versions.of(rel)
            version = found[0] if found is not None and not found[1] else None  # a folder's: decided at the folder
        return version.reason(self.wanted_versions) if version is not None else None

    def _outside(self, rel: str) -> bool:
        """A page outside every site's content folder, when the folder holds a site."""
        if not self._content:
            return False
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if parent in self._site_root_files:
            return True
        return not any(c == "" or rel.startswith(c + "/") for c in self._content)

    def _in_leaf_bundle(self, rel: str) -> bool:
        """A Hugo page that is not its folder's `index.md` in a folder (or below one) that has an `index.md`:
        a leaf bundle's resource, not a page (Hugo's page bundles)."""
        for content in self._bundles:
            inside = rel[len(content) + 1:] if content and rel.startswith(content + "/") else (rel if not content else None)
            if inside is None:
                continue
            parts = inside.split("/")
            for depth in range(len(parts) - 1, 0, -1):
                folder = "/".join(parts[:depth])
                if depth == len(parts) - 1 and parts[-1] in ("index.md", "index.mdx"):
                    continue  # the bundle's own page
                if any(os.path.isfile(self.root / _rel(content, f"{folder}/{name}")) for name in ("index.md", "index.mdx")):
                    return True
        return False


def _globs(patterns) -> list[str]:
    """Globs relative to a folder (fast-glob/picomatch, as VitePress and Docusaurus take them) as gitignore
    lines: anchored at that folder unless they start with `**/`."""
    lines = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            continue
        pattern = pattern.strip()
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").removeprefix("./")
        if not pattern.startswith(("**/", "/")):
            pattern = "/" + pattern
        lines.append(("!" if negated else "") + pattern)
    return lines


def _mkdocs_blogs(config: dict) -> list[str]:
    """The `blog_dir` of each Material blog plugin the MkDocs configuration turns on ("" = the docs folder)."""
    plugins = config.get("plugins")
    blogs = []
    for entry in plugins if isinstance(plugins, list) else [plugins] if isinstance(plugins, dict) else []:
        for name, options in (entry.items() if isinstance(entry, dict) else [(entry, None)]):
            options = options if isinstance(options, dict) else {}
            if name not in ("blog", "material/blog") or options.get("enabled", True) is False:
                continue
            blog_dir = PurePosixPath(str(options.get("blog_dir") or "blog").strip("/") or ".").as_posix()
            blogs.append("" if blog_dir == "." else blog_dir)
    return blogs


def _starlight_says(config: dict, key: str) -> bool:
    from rag_assets.ingest.script_config import find_calls

    return any(call.first_object().get(key) is True for call in find_calls(config, "starlight"))


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
