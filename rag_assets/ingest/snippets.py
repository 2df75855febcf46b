"""Snippet files: local markdown that MDX pages import, and what that means for a page's identity.

A Mintlify or Docusaurus page shows the content of the ``.md``/``.mdx`` files it imports
(``import Example from '/snippets/example.mdx'`` … ``<Example />``), so:

- a page's content hash covers the files it imports, transitively: editing a snippet re-ingests
  every page that shows it (and only those). A page that imports nothing keeps the plain sha-256 of
  its bytes, so nothing else changes for ordinary markdown;
- a snippet is not a page of its own and is left out of the catalog unless ``RAG_INDEX_SNIPPETS``
  asks for it. What makes a file a snippet is where it is and what it is called, as the site
  generators define it, never only that something imports it (a page that is a page stays a page,
  imported or not):

  - a file under a ``snippets/`` folder at the top of the docs folder, or beside a Mintlify
    ``docs.json``/``mint.json`` (Mintlify: "any file in the /snippets/ folder is always a snippet");
  - a partial that another file imports: its name, or a folder on its path, starts with ``_``
    (Docusaurus leaves ``_``-prefixed files and folders out of the site: ``_requirements.mdx``,
    ``_partials/step.mdx``). One that nothing imports stays a page: Hugo's ``_index.md`` is a page,
    and so are the pages of a Jekyll collection folder such as ``_docs/``;
- the parse stage renders the page with the very snippet bytes whose hashes make up the page's
  content hash (`render_page`), so a record never pairs one version's hash with another's text.

Import sources resolve like the site generators do: ``/x.mdx`` from the docs folder (else from a folder on
the importing file's path, outermost first: a site kept in a subfolder of a repository), ``./x.mdx`` and
``../x.mdx`` from the importing file, ``@site/…`` from the site's root and TypeScript path aliases
(``@fragments/x.mdx``) from the nearest ``tsconfig.json``/``jsconfig.json`` (rag_assets.ingest.import_aliases);
anything else (``@theme/Tabs``, ``openai``) is code, not a snippet. An imported file need not be a page:
a partial the site's rules leave out of its pages (outside the content folder) is read for the pages
that show it, and is part of their hash (`ImportGraph`). Nothing outside the docs folder, and no hidden
file, is ever read.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from rag_assets.config import DEFAULTS
from rag_assets.errors import DocumentError
from rag_assets.ingest import mdx
from rag_assets.ingest.import_aliases import SITE_ALIAS, ImportAliases
from rag_assets.models import DocumentRef, ParsedDocument

log = logging.getLogger(__name__)

SNIPPETS_FOLDER = "snippets"
# A Mintlify project's own configuration: its snippets/ folder sits beside it (a docs folder may hold
# a whole repository with the Mintlify site one folder down).
MINTLIFY_CONFIGS = ("docs.json", "mint.json")
_SNIPPET_FILE_ATTR = re.compile(r"""<Snippet\s+file=["']([^"']+)["']""")
_DEPENDENCY_HASH_VERSION = b"rag-imports-v1"
MAX_LOGGED_WARNINGS = 20  # MDX warnings logged per page (all are counted in the parse stage's metadata)


def import_sources(text: str) -> list[str]:
    """The local-markdown import sources of a page body (ESM imports of .md/.mdx files and Mintlify's
    ``<Snippet file="…"/>``), in order, each once."""
    sources = [imp.source for imp in mdx.find_imports(text) if imp.source.lower().endswith((".md", ".mdx"))]
    if "<Snippet" in text:  # only markdown is read: <Snippet file="../notes.txt"/> is refused by the renderer
        sources.extend("/snippets/" + f.lstrip("/") for f in _SNIPPET_FILE_ATTR.findall(text)
                       if f.lower().endswith((".md", ".mdx")))
    return list(dict.fromkeys(sources))


def candidates(source: str, importer: str, aliases: ImportAliases | None = None) -> list[str]:
    """The doc_paths (relative to the docs folder) an import source may mean, most likely first.
    `aliases`: the docs folder's (rag_assets.ingest.import_aliases: ``@site/``, tsconfig paths);
    without them ``@site/`` means the docs folder or its parent and other bare specifiers nothing."""
    if source.startswith("/"):
        # the site's root: the docs folder, else (a whole repository with its site in a subfolder)
        # a folder on the importer's path, outermost first
        folders = importer.split("/")[:-1]
        rest = posixpath.normpath(source[1:])
        climbs = rest.split("/")[0] == ".."  # refused below: never resolved from a subfolder instead
        paths = [rest, *("/".join(folders[:k]) + "/" + rest for k in range(1, len(folders) + 1) if not climbs)]
    elif source.startswith("."):
        paths = [posixpath.join(posixpath.dirname(importer), source)]
    elif aliases is not None:
        paths = aliases.candidates(source, importer)
    elif source.startswith(SITE_ALIAS):
        rest = source[len(SITE_ALIAS):]
        paths = [rest, rest.split("/", 1)[1] if "/" in rest else ""]  # the site folder is the docs folder or its parent
    else:
        return []
    out = []
    for path in paths:
        path = posixpath.normpath(path) if path else ""
        parts = path.split("/")
        if path and path != "." and parts[0] != ".." and not any(p.startswith(".") for p in parts):
            out.append(path)
    return out


def resolve(source: str, importer: str, exists, aliases: ImportAliases | None = None) -> str | None:
    """The doc_path an import source names, given `exists(doc_path) -> bool`; None if none exists."""
    return next((path for path in candidates(source, importer, aliases) if exists(path)), None)


def dependency_hash(file_hash: str, dependencies: Mapping[str, str]) -> str:
    """A page's content hash: its own sha-256 when it imports nothing, else a hash over its own and
    every (transitively) imported file's path and sha-256."""
    if not dependencies:
        return file_hash
    digest = hashlib.sha256(_DEPENDENCY_HASH_VERSION)
    digest.update(b"\0" + file_hash.encode())
    for path in sorted(dependencies):
        digest.update(b"\0" + path.encode() + b"\0" + dependencies[path].encode())
    return digest.hexdigest()


def is_snippet_folder_path(doc_path: str) -> bool:
    """Whether a folder named snippets/ is on the path (a cheap first look; `snippet_paths` decides)."""
    return f"{SNIPPETS_FOLDER}/" in doc_path and SNIPPETS_FOLDER in doc_path.split("/")[:-1]


def is_partial_name(doc_path: str) -> bool:
    """The file's name, or a folder on its path, starts with "_" (a partial, if something imports it)."""
    return any(part.startswith("_") for part in doc_path.split("/"))


def _snippet_folder_test(root: Path | None):
    """doc_path -> whether it lies under a snippets/ folder of a site: the docs folder's own, or one
    beside a Mintlify docs.json/mint.json (each folder looked at once)."""
    known: dict[str, bool] = {}

    def is_site(prefix: str) -> bool:
        if prefix not in known:
            known[prefix] = root is not None and any((root / prefix / name).is_file() for name in MINTLIFY_CONFIGS)
        return known[prefix]

    def test(doc_path: str) -> bool:
        parts = doc_path.split("/")
        return any(part == SNIPPETS_FOLDER and (k == 0 or is_site("/".join(parts[:k])))
                   for k, part in enumerate(parts[:-1]))

    return test


# ---------------------------------------------------------------------------------------------
# In discovery: the catalog knows every file's hash and imports


def apply_to_catalog(refs: list[DocumentRef], index_snippets: bool,
                     max_file_bytes: int = DEFAULTS["max_file_bytes"]) -> tuple[list[DocumentRef], list[str]]:
    """(pages, snippet files left out): refs with content hashes that cover their imports; snippet
    files are pages too only when `index_snippets`."""
    imports_of = {r.doc_path: r.imports for r in refs}
    if not any(imports_of.values()) and not any(is_snippet_folder_path(p) for p in imports_of):
        return refs, []
    graph = ImportGraph(docs_root(refs[0]), imports_of, {r.doc_path: _own_hash(r) for r in refs}, max_file_bytes)
    closures = graph.closures()
    out = [with_dependencies(r, closures[r.doc_path], graph.hash_of) for r in refs]
    snippet = set() if index_snippets else snippet_paths(closures, graph.root)
    return [r for r in out if r.doc_path not in snippet], sorted(snippet)


class ImportGraph:
    """What the files of a catalog import, transitively. A catalogued file is known by its fingerprint
    (hash and imports); any other markdown file a page imports (a partial the site's rules keep out of
    its pages: outside the content folder, ``_``-named) is read from disk once, under the same rules as
    `read_closure`, so a page's content hash covers exactly the files its parse stage reads."""

    def __init__(self, root: Path | None, imports_of: Mapping[str, str], hash_of: Mapping[str, str],
                 max_file_bytes: int = DEFAULTS["max_file_bytes"]):
        self.root = root.resolve() if root is not None else None
        self.imports_of = imports_of
        self._hashes = dict(hash_of)
        self.max_file_bytes = max_file_bytes
        self.aliases = ImportAliases(self.root)
        self._outside: dict[str, str | None] = {}  # doc_path -> its imports (None: not a readable file)

    @property
    def hash_of(self) -> Mapping[str, str]:
        """doc_path -> sha-256 of every file known so far, those read from disk included."""
        return self._hashes

    def exists(self, doc_path: str) -> bool:
        return doc_path in self.imports_of or self._outside_imports(doc_path) is not None

    def imports(self, doc_path: str) -> str:
        known = self.imports_of.get(doc_path)
        return known if known is not None else (self._outside_imports(doc_path) or "")

    def _outside_imports(self, doc_path: str) -> str | None:
        if doc_path not in self._outside:
            self._outside[doc_path] = None
            if self.root is not None and _readable(self.root, doc_path, self.max_file_bytes):
                try:
                    data = (self.root / doc_path).read_bytes()
                except OSError:
                    return None
                self._hashes[doc_path] = hashlib.sha256(data).hexdigest()
                self._outside[doc_path] = "\n".join(import_sources(data.decode("utf-8", errors="replace")))
        return self._outside[doc_path]

    def closure(self, doc_path: str) -> set[str]:
        """Every file that doc_path imports, transitively."""
        seen: set[str] = set()
        todo = [(doc_path, self.imports(doc_path))]
        while todo:
            importer, imports = todo.pop()
            for source in _split(imports):
                path = resolve(source, importer, self.exists, self.aliases)
                if path is not None and path not in seen and path != doc_path:
                    seen.add(path)
                    todo.append((path, self.imports(path)))
        return seen

    def closures(self) -> dict[str, set[str]]:
        """doc_path -> `closure`, for every catalogued file."""
        return {path: self.closure(path) for path in self.imports_of}


def snippet_paths(closures: Mapping[str, set[str]], root: Path | None = None) -> set[str]:
    """Files that are snippets, not pages (the module docstring): under a site's snippets/ folder, or
    a "_" partial another file imports. `root`: the docs folder, where a docs.json/mint.json is looked for."""
    imported = set().union(*closures.values()) if closures else set()
    in_snippets_folder = _snippet_folder_test(root)
    return ({p for p in closures if is_snippet_folder_path(p) and in_snippets_folder(p)}
            | {p for p in imported if is_partial_name(p)})


def with_dependencies(ref: DocumentRef, dependencies: set[str], hash_of: Mapping[str, str]) -> DocumentRef:
    """The ref with a content hash over its own bytes and those of the files it imports."""
    content_hash = dependency_hash(_own_hash(ref), {p: hash_of[p] for p in dependencies})
    return ref if content_hash == ref.content_hash else replace(ref, content_hash=content_hash)


def _own_hash(ref: DocumentRef) -> str:
    return ref.file_hash or ref.content_hash


def _split(imports: str) -> Iterable[str]:
    return (s for s in imports.split("\n") if s) if imports else ()


# ---------------------------------------------------------------------------------------------
# On disk: one page at a time (a run re-fingerprinting a document, the parse stage)


def read_closure(root: Path, doc_path: str, imports: str, max_file_bytes: int,
                 aliases: ImportAliases | None = None) -> dict[str, bytes]:
    """doc_path -> bytes of every local markdown file the page imports, transitively, as on disk now.
    Files that cannot be read (missing, hidden, outside the folder, too large) are left out, as
    discovery leaves them out."""
    root = root.resolve()
    aliases = aliases or ImportAliases(root)
    files: dict[str, bytes] = {}
    todo = [(doc_path, imports)]
    while todo:
        importer, sources = todo.pop()
        for source in _split(sources):
            path = resolve(source, importer, lambda p: p not in files and _readable(root, p, max_file_bytes), aliases)
            if path is None or path == doc_path or path in files:
                continue
            try:
                data = (root / path).read_bytes()
            except OSError:
                continue
            files[path] = data
            todo.append((path, "\n".join(import_sources(data.decode("utf-8", errors="replace")))))
    return files


def _readable(root: Path, doc_path: str, max_file_bytes: int) -> bool:
    path = root / doc_path
    try:
        real = path.resolve(strict=True)
        return real.is_relative_to(root) and path.is_file() and path.stat().st_size <= max_file_bytes
    except OSError:
        return False


def closure_hash(ref: DocumentRef, files: Mapping[str, bytes]) -> str:
    return dependency_hash(_own_hash(ref), {p: hashlib.sha256(data).hexdigest() for p, data in files.items()})


def docs_root(ref: DocumentRef) -> Path:
    """The docs folder a ref was discovered in (its absolute path minus its doc_path)."""
    path = Path(ref.absolute_path)
    for _ in ref.doc_path.split("/"):
        path = path.parent
    return path


def render_page(doc: ParsedDocument, ref: DocumentRef, max_file_bytes: int = DEFAULTS["max_file_bytes"]) -> tuple[ParsedDocument, dict]:
    """The parsed page with its MDX rendered (rag_assets.ingest.mdx) and its snippets expanded from
    exactly the bytes its content hash covers; stats for the stage's metadata. Malformed MDX never
    fails the page: it degrades to text, with a warning naming the file."""
    files: dict[str, bytes] = {}
    aliases = ImportAliases(docs_root(ref))
    if ref.imports:
        files = read_closure(docs_root(ref), ref.doc_path, ref.imports, max_file_bytes, aliases)
        if closure_hash(ref, files) != ref.content_hash:
            raise DocumentError(ref.doc_path, "a file it imports changed while being ingested; the next run indexes the new version")

    texts: dict[str, str] = {}

    def load(source: str, importer: str) -> tuple[str, str] | None:
        path = resolve(source, importer, files.__contains__, aliases)
        if path is None:
            return None
        if path not in texts:
            texts[path] = files[path].decode("utf-8", errors="replace")
        return path, texts[path]

    try:
        rendering = mdx.render_mdx(doc.body, doc.doc_path, load, max_bytes=max_file_bytes)
    except mdx.SnippetLimitError as exc:
        raise DocumentError(ref.doc_path, str(exc)) from None
    for warning in rendering.warnings[:MAX_LOGGED_WARNINGS]:
        log.warning("%s", warning)
    if len(rendering.warnings) > MAX_LOGGED_WARNINGS:
        log.warning("%s: %d more MDX warnings not shown", doc.doc_path, len(rendering.warnings) - MAX_LOGGED_WARNINGS)
    stats = {"mdx_warnings": len(rendering.warnings), "snippets_expanded": len(rendering.snippets),
             "unrendered_components": sum(rendering.unrendered.values()),
             "unrendered_by_name": dict(rendering.unrendered.most_common())}
    if not rendering.changed:
        return doc, stats
    return replace(doc, body=rendering.body), stats
