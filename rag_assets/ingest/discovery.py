"""Discovery: find every markdown file under the docs folder and fingerprint it.

Rules: `*.md` / `*.mdx` (any case); hidden files and folders (`.name`, `.name.md`) skipped on
purpose and silently; a name that is only dots before the extension (`..md`, `.md`, a folder `...`)
is not a hidden name but a broken one, and a name that is not valid UTF-8 cannot be stored as a
document path: both are reported (never silently dropped) and not indexed; symlinks followed only when
they resolve inside the docs folder (a link pointing outside is refused and reported, a link loop
is visited once); files over the size limit are reported, not read; anything that is not a
regular file (a FIFO, socket or device named .md) is reported and never opened for reading, since
reading a FIFO blocks forever. The content hash is the sha-256 of the file's bytes (read in blocks, so a
large file never sits in memory whole; its imports are looked for in its first MiB), combined with the
hashes of the snippet files it imports (rag_assets.ingest.snippets).

Scope (rag_assets.ingest.scope): the walk leaves out what the path rules say is not a page of the
site (ignore files, the generator's rules, RAG_INCLUDE / RAG_EXCLUDE: rag_assets.ingest.site_rules)
without reading it; a page read is then left out when its frontmatter or its language says so. Both
are counted by reason in the catalog (`Catalog.left_out`), never silently dropped.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from rag_assets.config import DEFAULTS
from rag_assets.ingest import languages, scope as scope_mod, site_urls, snippets
from rag_assets.ingest.files import DocumentTooLarge, NotARegularFile, check_regular_file, open_regular  # noqa: F401 - callers import them from here too
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.ingest.site_rules import NEVER_WALKED, SiteRules
from rag_assets.models import FACTS_VERSION, Catalog, DiscoveryError, DocumentRef

MARKDOWN_SUFFIXES = (".md", ".mdx")
# A page's snippet imports are looked for in its first MiB (MDX puts its imports at the top); past that a
# multi-megabyte file is hashed in blocks without being held whole.
IMPORT_SCAN_BYTES = 1 << 20
# what a page says of itself (its frontmatter, its text's language) is read from the same first MiB
# Dagster refuses these inside partition keys ("..." is its range syntax); see partition_key_for.
_INVALID_KEY_SUBSTRINGS = ("...", "\a", "\b", "\f", "\n", "\r", "\t", "\v", "\0")
_INVALID_KEY_CHARS = ("|", ",", "[", "]")


@dataclass
class StatLook:
    """The folder as stats see it, no file read: what discover() finds when no file's content moved.
    `files`: (doc path, size, mtime_ns, inode) of every file that may be read; `errors`: what the walk
    and the stats refused, worded as discover() words it."""

    docs_dir: str
    files: list[tuple[str, int, int, int]] = field(default_factory=list)
    errors: list[DiscoveryError] = field(default_factory=list)
    _paths: list[str] = field(default_factory=list, repr=False)
    _stats: dict[str, os.stat_result] = field(default_factory=dict, repr=False)  # doc path -> its stat
    _walk_errors: list[DiscoveryError] = field(default_factory=list, repr=False)
    _left_out: dict[str, str] = field(default_factory=dict, repr=False)  # left out by the path rules
    _rules: SiteRules | None = field(default=None, repr=False)


def stat_look(docs_dir: Path, max_file_bytes: int = DEFAULTS["max_file_bytes"], scope: ScopeSettings | None = None) -> StatLook:
    """The walk and one stat per file (0.5 s at 100,000 files, against ~1.3 s for the stored catalog
    and discover() against it)."""
    left_out: dict[str, str] = {}
    rules = site_rules_for(docs_dir, scope)
    paths, walk_errors = iter_markdown_files(docs_dir, rules=rules, left_out=left_out)
    root = Path(docs_dir).resolve()
    look = StatLook(str(root), errors=list(walk_errors), _paths=paths, _walk_errors=walk_errors, _left_out=left_out,
                    _rules=rules)
    doc_path_of = walked_doc_path(root)
    for path in paths:
        doc_path = doc_path_of(path)
        try:
            st = os.stat(path)
            check_regular_file(st, max_file_bytes)
        except (DocumentTooLarge, OSError) as exc:
            look.errors.append(_refusal(doc_path, exc))
            continue
        look._stats[doc_path] = st
        look.files.append((doc_path, st.st_size, st.st_mtime_ns, st.st_ino))
    return look


def stat_look_of(catalog: Catalog) -> StatLook | None:
    """What stat_look() would give for the folder exactly as `catalog` fingerprinted it; None when
    a stat cannot tell (snippet files left out of the catalog, a ref hashed before stats were kept)."""
    files = [*catalog.documents, *catalog.left_out_refs]  # the pages read and left out are files of the look too
    if catalog.excluded or any(d.mtime_ns == 0 or d.file_hash == "" or not d.facts.startswith(FACTS_VERSION + "|")
                               for d in files) \
            or set(catalog.left_out_read) - {d.doc_path for d in catalog.left_out_refs}:
        return None
    return StatLook(catalog.docs_dir, [(d.doc_path, d.size_bytes, d.mtime_ns, d.inode) for d in files],
                    list(catalog.errors))


def discover(docs_dir: Path, *, max_file_bytes: int = DEFAULTS["max_file_bytes"], known: Catalog | None = None,
             index_snippets: bool = False, looked: StatLook | None = None, scope: ScopeSettings | None = None) -> Catalog:
    """Every markdown page in scope, fingerprinted. With `known` (an earlier catalog), a file whose size,
    mtime and inode match its earlier fingerprint is not read again. Snippet files (what makes one:
    rag_assets.ingest.snippets) are not pages unless `index_snippets`; a page's content hash
    covers the files it imports (rag_assets.ingest.snippets). `looked`: a stat_look() of the same
    folder just taken, whose walk and stats are used instead of taking them again. `scope`: the
    corpus's scope settings (None: the defaults); what it leaves out is in `Catalog.left_out`."""
    scope = scope or ScopeSettings()
    if looked is not None and looked._rules is not None:
        paths, errors, left_out, rules = looked._paths, list(looked._walk_errors), dict(looked._left_out), looked._rules
    else:
        left_out = {}
        rules = site_rules_for(docs_dir, scope)
        paths, errors = iter_markdown_files(docs_dir, rules=rules, left_out=left_out)
    root = Path(docs_dir).resolve()
    earlier = {d.doc_path: d for d in [*known.documents, *known.left_out_refs]} \
        if known is not None and known.docs_dir == str(root) else {}
    stats = looked._stats if looked is not None else {}
    documents: list[DocumentRef] = []
    doc_path_of = walked_doc_path(root)
    for path in paths:
        doc_path = doc_path_of(path)
        try:
            last = earlier.get(doc_path)
            if last is not None:
                st = stats.get(doc_path) or os.stat(path)
                if last.stat_matches(st):
                    check_regular_file(st, max_file_bytes)
                    documents.append(last)
                    continue
            documents.append(_fingerprint(path, doc_path, max_file_bytes))
        except (DocumentTooLarge, OSError) as exc:
            errors.append(_refusal(doc_path, exc))
    documents.sort(key=lambda d: d.doc_path)
    documents, excluded = snippets.apply_to_catalog(documents, index_snippets, max_file_bytes)
    layout = languages.detect_layout([d.doc_path for d in documents], rules.sites,
                                     {d.doc_path: scope_mod.PageFacts.parse(d.facts) for d in documents})
    scoped = scope_mod.apply(documents, layout, scope)
    placed = site_urls.place_all(scoped.documents, rules.sites, rules.versions, layout)
    return Catalog(docs_dir=str(root), documents=placed, errors=errors, excluded=excluded,
                   left_out={**left_out, **scoped.left_out}, left_out_languages=scoped.left_out_languages,
                   left_out_read=sorted(scoped.left_out),
                   left_out_refs=[d for d in documents if d.doc_path in scoped.left_out],
                   default_language=scoped.default_language, languages=dict(scoped.languages.most_common()),
                   languages_from=scoped.languages_from)


def site_rules_for(docs_dir: Path, scope: ScopeSettings | None) -> SiteRules:
    """The path rules of a docs folder under these scope settings (read once per walk)."""
    scope = scope or ScopeSettings()
    return SiteRules(_root(docs_dir), include=scope.include, exclude=scope.exclude, ignore_files=scope.ignore_files,
                     keep=scope.keep, versions=scope.versions)


def _refusal(doc_path: str, exc: DocumentTooLarge | OSError) -> DiscoveryError:
    """Why a file is not a document, worded the same by discover() and stat_look() (the no-op's stat
    token compares their errors)."""
    if isinstance(exc, (DocumentTooLarge, NotARegularFile)):
        return DiscoveryError(doc_path, str(exc))
    return DiscoveryError(doc_path, f"cannot read file: {exc.strerror or exc}")


def discover_for(settings, known: Catalog | None = None, looked: StatLook | None = None) -> Catalog:
    """discover() over a corpus's docs folder with its size limit and snippet rule (rag_assets.config.Settings)."""
    return discover(settings.docs_dir, max_file_bytes=settings.max_file_bytes, known=known,
                    index_snippets=settings.index_snippets, looked=looked, scope=ScopeSettings.from_settings(settings.ingest))


def iter_markdown_files(docs_dir: Path, *, rules: SiteRules | None = None, scope: ScopeSettings | None = None,
                        left_out: dict[str, str] | None = None) -> tuple[list[str], list[DiscoveryError]]:
    """Every markdown file under docs_dir that may be read and is in scope by its path, without
    reading it; refusals as errors; what the path rules leave out into `left_out` (doc path ->
    reason). `rules` (site_rules_for) or else `scope` (None: the defaults) gives the path rules.
    Paths are plain strings ("<resolved root>/<doc path>"): a pathlib.Path per file is ~40 % of a
    look at 100,000 files."""
    root = _root(docs_dir)
    errors: list[DiscoveryError] = []
    rules = rules or site_rules_for(root, scope)
    paths = list(_markdown_files(root, errors, rules, {} if left_out is None else left_out))
    return paths, errors


def walked_doc_path(root: Path):
    """path -> doc_path for the paths iter_markdown_files(root) returns ("<root>/<doc_path>"), by
    string slicing: pathlib's relative_to().as_posix() costs seconds over 100,000 files."""
    prefix = len(str(root).rstrip(os.sep)) + 1
    return lambda path: str(path)[prefix:].replace(os.sep, "/")


def has_markdown_files(docs_dir: Path) -> bool:
    """Whether the folder holds a markdown file (or one refused with a reason): stops at the first.
    Whatever its scope: a folder of pages all left out is not an empty folder."""
    errors: list[DiscoveryError] = []
    root = _root(docs_dir)
    return next(_markdown_files(root, errors, SiteRules(root, ignore_files=False), {}), None) is not None or bool(errors)


def _root(docs_dir: Path) -> Path:
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        raise FileNotFoundError(f"docs folder not found: {docs_dir} (set RAG_DOCS_DIR or pass --docs-dir)")
    return docs_dir.resolve()


def _markdown_files(root: Path, errors: list[DiscoveryError], rules: SiteRules, left_out: dict[str, str]):
    for path, is_link in _walk(str(root), root, set(), errors, rules, left_out, ""):
        if not is_link:
            # neither it nor a folder above it (checked in _walk) leads out of root: no resolve,
            # which is a system call a path component (half of a look at 100,000 files)
            yield path
            continue
        doc_path = _rel(Path(path), root)
        try:
            real = Path(path).resolve(strict=True)
        except (OSError, RuntimeError) as exc:  # dangling link or link loop
            errors.append(DiscoveryError(doc_path, f"cannot resolve path: {exc.__class__.__name__}: {exc}"))
            continue
        if not real.is_relative_to(root):
            errors.append(DiscoveryError(doc_path, "symlink resolves outside the docs folder; refused"))
            continue
        yield path


def _walk(directory: str, root: Path, seen_dirs: set[str], errors: list[DiscoveryError], rules: SiteRules,
          left_out: dict[str, str], rel_dir: str):
    real = os.path.realpath(directory)
    if real in seen_dirs:  # a symlink loop or a second link to the same folder
        return
    seen_dirs.add(real)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        errors.append(DiscoveryError(_rel(Path(directory), root), f"cannot list folder: {exc.strerror or exc}"))
        return
    rules.enter(rel_dir, directory)
    try:
        yield from _walk_entries(entries, root, seen_dirs, errors, rules, left_out, rel_dir)
    finally:
        rules.leave(rel_dir)


def _walk_entries(entries, root: Path, seen_dirs: set[str], errors: list[DiscoveryError], rules: SiteRules,
                  left_out: dict[str, str], rel_dir: str):
    for entry in entries:
        path = entry.path
        try:
            is_dir = entry.is_dir()  # follows symlinks
        except OSError:
            is_dir = False
        if not is_dir and not entry.name.lower().endswith(MARKDOWN_SUFFIXES):
            continue
        problem = _name_problem(entry.name, is_dir)
        if problem == _HIDDEN:
            continue
        if problem:
            errors.append(DiscoveryError(_rel(Path(path), root), problem))
            continue
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if is_dir:
            if entry.name in NEVER_WALKED:
                continue
            if not Path(os.path.realpath(path)).is_relative_to(root):
                errors.append(DiscoveryError(_rel(Path(path), root), "symlinked folder resolves outside the docs folder; refused"))
                continue
            reason = rules.folder(rel)
            if reason:
                for page in _pages_below(path, rel, seen_dirs):
                    left_out[page] = reason
                continue
            yield from _walk(path, root, seen_dirs, errors, rules, left_out, rel)
        else:
            reason = rules.page(rel)
            if reason:
                left_out[rel] = reason
                continue
            try:
                is_link = entry.is_symlink()
            except OSError:
                is_link = True  # let the resolve say what is wrong
            yield path, is_link


_HIDDEN = "hidden"


def _pages_below(directory: str, rel: str, seen_dirs: set[str]):
    """The markdown files in a folder left out by a path rule: counted, never read (hidden folders
    and NEVER_WALKED ones skipped, as the walk does)."""
    real = os.path.realpath(directory)
    if real in seen_dirs:
        return
    seen_dirs.add(real)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.name in NEVER_WALKED:
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir:
            yield from _pages_below(entry.path, f"{rel}/{entry.name}", seen_dirs)
        elif entry.name.lower().endswith(MARKDOWN_SUFFIXES):
            yield f"{rel}/{entry.name}"


def _name_problem(name: str, is_dir: bool) -> str | None:
    """None for a usable name, _HIDDEN for a hidden one (skipped on purpose), else why it is refused."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.scandir hands undecodable bytes over as lone surrogates
        what = "folder" if is_dir else "file"
        return f"{what} name is not valid UTF-8, so it cannot be stored as a document path; rename it"
    if not name.startswith("."):
        return None
    stem = name if is_dir else name[: name.rfind(".")]
    if stem.strip("."):
        return _HIDDEN  # `.drafts`, `.notes.md`: hidden on purpose
    if is_dir:
        return "folder name is only dots; it is neither indexed nor a hidden folder: rename it"
    return ("file name has nothing before its extension but dots, so it is neither indexed nor an intended "
            "hidden file (hidden: .name.md): rename it")


def _rel(path: Path, root: Path) -> str:
    """The path below root as text that can always be printed and stored (undecodable bytes escaped)."""
    rel = path.relative_to(root).as_posix() if path != root else "."
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def _fingerprint(path: Path | str, doc_path: str, max_file_bytes: int) -> DocumentRef:
    check_regular_file(os.stat(path), max_file_bytes)  # refuse before opening anything
    digest = hashlib.sha256()
    fh, stat = open_regular(path, max_file_bytes)
    head = bytearray()  # the file's start, where a page's imports are looked for (memory stays bounded)
    with fh:
        size = 0
        for block in iter(lambda: fh.read(1 << 20), b""):
            size += len(block)
            if size > max_file_bytes:  # it grew while being read
                raise DocumentTooLarge(
                    f"file grew past the {max_file_bytes:,}-byte limit while being read (raise RAG_MAX_FILE_BYTES to index it)"
                )
            digest.update(block)
            if len(head) < IMPORT_SCAN_BYTES:
                head += block[: IMPORT_SCAN_BYTES - len(head)]
    imports = ""
    text = head.decode("utf-8", errors="replace")
    if b"import" in head or b"<Snippet" in head:
        imports = "\n".join(snippets.import_sources(text))
    parts = PurePosixPath(doc_path).parts
    return DocumentRef(
        doc_path=doc_path,
        partition_key=partition_key_for(doc_path),
        absolute_path=str(path),
        module=parts[0] if len(parts) > 1 else None,
        chapter=parts[1] if len(parts) > 2 else None,
        size_bytes=size,
        mtime=stat.st_mtime,
        content_hash=digest.hexdigest(),
        mtime_ns=stat.st_mtime_ns,
        inode=stat.st_ino,
        file_hash=digest.hexdigest(),
        imports=imports,
        facts=scope_mod.facts_of(text).format(),
    )


def fingerprint_file(
    docs_dir: Path, doc_path: str, *, max_file_bytes: int = DEFAULTS["max_file_bytes"], known: DocumentRef | None = None
) -> DocumentRef:
    """Re-fingerprint one known document now (a run must act on the file as it is, not as it was
    when the catalog was taken). With `known` (the last fingerprint of this path), a file whose
    size, mtime and inode still match is not read again. Raises FileNotFoundError if it vanished,
    DocumentTooLarge, OSError (NotARegularFile included)."""
    root = Path(docs_dir).resolve()
    path = root / doc_path
    if not path.resolve(strict=True).is_relative_to(root):
        raise OSError(f"{doc_path}: symlink resolves outside the docs folder; refused")
    ref = None
    if known is not None and known.doc_path == doc_path:
        st = path.stat()
        if known.stat_matches(st):
            check_regular_file(st, max_file_bytes)
            ref = known
    if ref is None:
        ref = _fingerprint(path, doc_path, max_file_bytes)
        if known is not None and known.doc_path == doc_path:
            # its language and place are the catalog run's to decide (the layout is the whole folder's): kept
            ref = replace(ref, language=known.language, place=known.place, module=known.module, chapter=known.chapter)
        else:
            # not catalogued yet (a page the sensor found): what it says of itself until the catalog run
            facts = scope_mod.PageFacts.parse(ref.facts)
            ref = replace(ref, language=facts.declared or facts.detected)
    if not ref.imports:
        return ref
    # the files it imports, as they are now (a known fingerprint's hash covers them as they were)
    files = snippets.read_closure(root, doc_path, ref.imports, max_file_bytes)
    return replace(ref, content_hash=snippets.closure_hash(ref, files))


def partition_key_for(doc_path: str) -> str:
    """The Dagster partition key of a document: its path, or a deterministic safe form of it.

    A path Dagster cannot take as a key keeps a readable form with the bad parts replaced and
    gains a short hash of the real path, so two different paths never share a key.
    """
    key = doc_path
    for bad in _INVALID_KEY_SUBSTRINGS + _INVALID_KEY_CHARS:
        key = key.replace(bad, "_")
    if key == doc_path:
        return doc_path
    return f"{key}~{hashlib.sha256(doc_path.encode()).hexdigest()[:8]}"
