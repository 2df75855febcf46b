"""Import aliases: where a bare import specifier (``@fragments/cta.mdx``, ``@site/docs/_x.mdx``) points,
the way a site's bundler resolves it. Paths only, relative to the docs folder; files are read here
(a ``tsconfig.json``, a generator's configuration's name), pages are not.

- ``@site/…``: Docusaurus' alias for the site's root, the folder holding ``docusaurus.config.*``: the
  nearest one up from the importing page inside the docs folder; with none there (the docs folder is
  the site's ``docs/``), the docs folder or its parent (the first folder of the rest is dropped).
- TypeScript path aliases, which Astro (Starlight) and Vite (VitePress) read from the project's
  ``tsconfig.json``/``jsconfig.json``: the nearest one up from the importing page, inside the docs
  folder. Its ``compilerOptions.paths`` map a pattern with at most one ``*`` to targets tried in order
  (the pattern with the longest prefix wins, an exact one first), relative to ``baseUrl`` or, without
  one, to the file that declares ``paths``; a ``baseUrl`` alone also resolves a bare specifier from
  there. The file is JSONC (comments and trailing commas), and ``extends`` (a relative path, or a
  list of them) is followed: a child's ``baseUrl``/``paths`` replace the parent's, each relative to
  the file that declares it. An ``extends`` of a package (``astro/tsconfigs/strict``) names no alias.

Nothing outside the docs folder is read or named, and no hidden file: a target that leaves the folder
is no candidate. A configuration that cannot be read or parsed names no alias (the import then stays
unresolved, and the page's renderer warns that it was not found).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

TS_CONFIGS = ("tsconfig.json", "jsconfig.json")  # the nearer folder wins; in one folder, tsconfig.json
DOCUSAURUS_CONFIGS = tuple(f"docusaurus.config.{ext}" for ext in ("js", "ts", "mjs", "cjs", "mts", "cts"))
SITE_ALIAS = "@site/"
MAX_CONFIG_BYTES = 1_000_000
_MAX_EXTENDS = 8  # an extends chain longer than this (or a loop) stops there
_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|[^"/,]+|.', re.DOTALL)


@dataclass(frozen=True)
class PathAliases:
    """One configuration's aliases, resolved against the docs folder."""

    base: str | None  # baseUrl as a docs-folder path ("" = the folder itself), None without one
    paths: tuple[tuple[str, tuple[str, ...]], ...]  # (pattern, targets as docs-folder paths), declared order

    def candidates(self, source: str) -> list[str]:
        """The docs-folder paths `source` may mean under these aliases, in the order tried."""
        exact = [targets for pattern, targets in self.paths if "*" not in pattern and pattern == source]
        if exact:
            return list(exact[0])
        best: tuple[int, str, tuple[str, ...]] | None = None
        for pattern, targets in self.paths:
            prefix, star, suffix = pattern.partition("*")
            if star and source.startswith(prefix) and source.endswith(suffix) and len(source) >= len(prefix) + len(suffix):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), source[len(prefix): len(source) - len(suffix)], targets)
        if best is not None:
            return [target.replace("*", best[1], 1) for target in best[2]]
        if self.base is not None and not source.startswith((".", "/")):
            return [posixpath.join(self.base, source) if self.base else source]
        return []


class ImportAliases:
    """The aliases of one docs folder, its configuration files read when first needed (once each)."""

    def __init__(self, root: Path | None):
        self.root = root.resolve() if root is not None else None
        self._configs: dict[str, PathAliases | None] = {}  # folder -> the aliases of its own tsconfig
        self._site_roots: dict[str, str | None] = {}  # folder -> the Docusaurus site root at or above it

    def candidates(self, source: str, importer: str) -> list[str]:
        """Docs-folder paths a bare specifier may mean, from the page `importer` (the relative and
        "/" forms are rag_assets.ingest.snippets'); [] when no alias applies."""
        if source.startswith(SITE_ALIAS):
            return self._site(source[len(SITE_ALIAS):], importer)
        aliases = self._nearest_config(posixpath.dirname(importer))
        return aliases.candidates(source) if aliases is not None else []

    def _site(self, rest: str, importer: str) -> list[str]:
        site = self._site_root(posixpath.dirname(importer))
        if site is not None:
            return [posixpath.join(site, rest) if site else rest]
        # no docusaurus.config.* inside the docs folder: it is the site's root or one folder of it
        return [rest, rest.split("/", 1)[1] if "/" in rest else ""]

    def _site_root(self, folder: str) -> str | None:
        if folder not in self._site_roots:
            here = self._has_any(folder, DOCUSAURUS_CONFIGS)
            self._site_roots[folder] = folder if here else (
                None if folder in ("", ".") else self._site_root(_parent(folder)))
        return self._site_roots[folder]

    def _nearest_config(self, folder: str) -> PathAliases | None:
        while True:
            if folder not in self._configs:
                self._configs[folder] = self._read_config_in(folder)
            if self._configs[folder] is not None or folder in ("", "."):
                return self._configs[folder]
            folder = _parent(folder)

    def _read_config_in(self, folder: str) -> PathAliases | None:
        for name in TS_CONFIGS:
            path = posixpath.join(folder, name) if folder not in ("", ".") else name
            if self._file(path) is not None:
                return _aliases_of(self, path)
        return None

    def _has_any(self, folder: str, names: tuple[str, ...]) -> bool:
        return any(self._file(posixpath.join(folder, n) if folder not in ("", ".") else n) is not None for n in names)

    def _file(self, doc_path: str) -> Path | None:
        """The file at a docs-folder path, if it is a regular file inside the folder (symlinks resolved)."""
        if self.root is None:
            return None
        path = self.root / doc_path
        try:
            real = path.resolve(strict=True)
            return path if real.is_relative_to(self.root) and real.is_file() else None
        except OSError:
            return None

    def read_json(self, doc_path: str) -> dict | None:
        """A JSONC file inside the docs folder as a mapping; None when it cannot be read as one."""
        path = self._file(doc_path)
        if path is None:
            return None
        try:
            if path.stat().st_size > MAX_CONFIG_BYTES:
                return None
            data = json.loads(strip_jsonc(path.read_text(encoding="utf-8-sig")))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def _aliases_of(folder_aliases: ImportAliases, config_path: str) -> PathAliases | None:
    """The baseUrl and paths a configuration declares or inherits through `extends`."""
    base: str | None = None
    declared: dict | None = None  # the nearest `paths`
    declared_in = ""  # the folder of the file that declares them
    for path, options in _extends_chain(folder_aliases, config_path):  # the file itself first
        folder = posixpath.dirname(path)
        if base is None and isinstance(options.get("baseUrl"), str):
            base = _inside(posixpath.join(folder, options["baseUrl"]))
            if base is None:
                return None  # a baseUrl outside the docs folder: nothing it names can be read
        if declared is None and isinstance(options.get("paths"), dict):
            declared, declared_in = options["paths"], folder
    if base is None and declared is None:
        return None
    start = base if base is not None else declared_in
    resolved = []
    for pattern, targets in (declared or {}).items():
        targets = targets if isinstance(targets, list) else []
        inside = (_inside(posixpath.join(start, t)) for t in targets if isinstance(t, str))
        resolved.append((str(pattern), tuple(p for p in inside if p)))
    return PathAliases(base, tuple(resolved))


def _extends_chain(folder_aliases: ImportAliases, config_path: str):
    """(path, compilerOptions) of the configuration and of those it extends, nearest first."""
    todo, seen = [config_path], set()
    while todo and len(seen) < _MAX_EXTENDS:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        data = folder_aliases.read_json(path)
        if data is None:
            continue
        options = data.get("compilerOptions")
        yield path, options if isinstance(options, dict) else {}
        extends = data.get("extends")
        # TypeScript 5: a list of bases, the later ones winning over the earlier ones
        for parent in reversed(extends if isinstance(extends, list) else [extends]):
            if isinstance(parent, str) and parent.startswith("."):
                target = _inside(posixpath.join(posixpath.dirname(path), parent))
                if target is not None:
                    todo.append(target if target.endswith(".json") else target + ".json")


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as plain JSON (strings untouched)."""
    out = []
    for m in _JSONC_TOKEN.finditer(text):
        token = m.group(0)
        if token.startswith(("//", "/*")) or token == "," and _before_close(text, m.end()):
            continue
        out.append(token)
    return "".join(out)


def _before_close(text: str, i: int) -> bool:
    """Only whitespace and comments between text[i] and a closing bracket."""
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        else:
            return text[i] in "}]"
    return False


def _inside(path: str) -> str | None:
    """A docs-folder path normalised ("" for the folder itself), or None when it leaves the folder or
    names a hidden file or folder."""
    path = posixpath.normpath(path)
    if path == ".":
        return ""
    parts = path.split("/")
    if path.startswith("/") or parts[0] == ".." or any(p.startswith(".") for p in parts):
        return None
    return path


def _parent(folder: str) -> str:
    parent = posixpath.dirname(folder)
    return parent if parent else ""
