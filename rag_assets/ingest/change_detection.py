"""Change detection for the docs sensor: what was added, changed or deleted since the last look.

The cursor maps doc_path -> (size, mtime, file hash, imports). A file whose size and mtime match the
cursor is unchanged without being read; otherwise it is hashed, and only a different hash is a
change (a `touch` is not). A file whose size or mtime moved since the previous look and was
modified within the last `settle_seconds` may still be being written. With `wait`, the look waits
until it is that old and stats it again: unchanged, it is taken now; moved again, it is still being
written and waits for the next tick. Without `wait` it always waits for the next tick. (The sensor
waits: a saved file is taken in the same tick, a second later, not one sensor interval later.)

The cursor also counts the looks that found a change (`tick`): run keys built from it are unique
per change event, so reverting a file to a version seen before, or restoring a deleted one, is a
new change (Dagster never launches a run key twice), while evaluating the same cursor again gives
the same keys (a retried tick launches nothing twice).

Snippet files (rag_assets.ingest.snippets) are looked at like any file, but reported through the
pages that import them: an edited snippet is a change of every page that shows it, and a snippet
itself is never added as a page (unless `index_snippets`).

Scope (rag_assets.ingest.scope): the walk leaves out what the path rules leave out, and a page that
its frontmatter or its language now puts out of scope is reported as deleted (the catalog run that
follows removes it if it was indexed); a page back in scope is a change like any other.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dataclasses import replace as dc_replace

from rag_assets.config import DEFAULTS
from rag_assets.ingest import languages, scope as scope_mod, site_urls, snippets
from rag_assets.ingest.discovery import DocumentTooLarge, _fingerprint, iter_markdown_files, site_rules_for, walked_doc_path
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.models import DiscoveryError, DocumentRef

DEFAULT_SETTLE_SECONDS = 1.0


@dataclass
class Changes:
    added: list[DocumentRef] = field(default_factory=list)
    changed: list[DocumentRef] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)  # still being written: next tick
    touched: int = 0  # mtime moved, content did not
    errors: list[DiscoveryError] = field(default_factory=list)  # files refused or unreadable (they exist)
    state: dict = field(default_factory=dict)  # the new cursor: {"files", "pending", "tick"}
    tick: int = 0  # how many looks found a change, this one included
    same_state: bool = False  # the new cursor equals the one looked from (nothing to store)

    @property
    def cursor(self) -> str:
        """The new cursor, serialised (~110 bytes a file)."""
        return json.dumps(self.state, separators=(",", ":"))

    @property
    def to_process(self) -> list[DocumentRef]:
        return self.added + self.changed

    @property
    def any(self) -> bool:
        return bool(self.added or self.changed or self.deleted)


def detect_changes(
    docs_dir: Path,
    cursor: str | Mapping | None,
    *,
    max_file_bytes: int = DEFAULTS["max_file_bytes"],
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
    now: float | None = None,
    wait: bool = False,
    index_snippets: bool = False,
    scope: ScopeSettings | None = None,
    default_language: str = "",
) -> Changes:
    """The changes since `cursor` (serialised, or as `Changes.state` gave it: read, never changed).
    `scope`: the corpus's scope settings; `default_language`: its default as the last catalog run
    resolved it ("" = not known: the language rule waits for the catalog run)."""
    now = time.time() if now is None else now
    state = (json.loads(cursor) if isinstance(cursor, str) else cursor) if cursor else {}
    known: dict[str, list] = state.get("files", {})
    pending: dict[str, list] = state.get("pending", {})
    root = Path(docs_dir).resolve()
    rules = site_rules_for(root, scope)
    paths, refused = iter_markdown_files(root, rules=rules)
    changes = Changes(errors=list(refused))
    files: dict[str, list] = {}
    new_pending: dict[str, list] = {}

    def take(path: Path, doc_path: str, previous: list | None) -> None:
        try:
            ref = _fingerprint(path, doc_path, max_file_bytes)
        except (OSError, DocumentTooLarge) as exc:
            changes.errors.append(DiscoveryError(doc_path, str(exc)))
            return
        files[doc_path] = [ref.size_bytes, ref.mtime, ref.content_hash, ref.imports]
        if previous is None:
            changes.added.append(ref)
        elif previous[2] != ref.content_hash:
            changes.changed.append(ref)
        else:
            changes.touched += 1

    young: list[tuple[Path, str, list, list | None]] = []
    doc_path_of = walked_doc_path(root)
    for path in paths:
        doc_path = doc_path_of(path)
        try:
            st = os.stat(path)
        except OSError:
            continue  # vanished between listing and stat: it is simply not there
        observed = [st.st_size, st.st_mtime]
        previous = known.get(doc_path)
        # (a cursor entry of an earlier version has no imports: the file is read once to learn them)
        if previous and len(previous) >= 4 and previous[:2] == observed:
            files[doc_path] = previous
            continue
        settling = settle_seconds > 0 and now - st.st_mtime < settle_seconds and pending.get(doc_path) != observed
        if settling:
            young.append((path, doc_path, observed, previous))
            continue
        take(path, doc_path, previous)

    if young and wait:
        # one short wait for all of them, until the youngest is settle_seconds old
        newest = max(observed[1] for _, _, observed, _ in young)
        time.sleep(min(settle_seconds, max(0.0, newest + settle_seconds - time.time())))
    for path, doc_path, observed, previous in young:
        if wait:
            try:
                st = os.stat(path)
            except OSError:
                continue
            if [st.st_size, st.st_mtime] == observed:
                take(path, doc_path, previous)
                continue
            observed = [st.st_size, st.st_mtime]
        new_pending[doc_path] = observed
        changes.unstable.append(doc_path)
        if previous:
            files[doc_path] = previous  # keep the last good version known until it settles

    changes.deleted = sorted(set(known) - set(files) - set(new_pending))
    _through_pages(changes, root, files, max_file_bytes, index_snippets)
    _out_of_scope(changes, sorted(files), rules, scope or ScopeSettings(), default_language)
    changes.tick = int(state.get("tick", 0)) + (1 if changes.any else 0)
    changes.state = {"files": files, "pending": new_pending, "tick": changes.tick}
    changes.same_state = not changes.any and files == known and new_pending == pending
    return changes


def _out_of_scope(changes: Changes, doc_paths: list[str], rules, scope: ScopeSettings, default_language: str) -> None:
    """Pages found or changed that their frontmatter or language puts out of scope: reported as deleted.
    Those kept get their place in the site (rag_assets.ingest.site_urls), as the catalog run gives it."""
    refs = changes.added + changes.changed
    if not refs:
        return
    if not (scope.default_language or default_language):
        scope = dc_replace(scope, languages=(scope_mod.ALL_LANGUAGES,))  # the default is the catalog run's to find
    facts = {r.doc_path: scope_mod.PageFacts.parse(r.facts) for r in refs}  # the others' are the catalog run's
    layout = languages.detect_layout(doc_paths, rules.sites, facts)
    scoped = scope_mod.apply(refs, layout, dc_replace(scope, default_language=scope.default_language or default_language))
    placed = {r.doc_path: r for r in site_urls.place_all(refs, rules.sites, rules.versions, layout)}
    changes.added = [placed[r.doc_path] for r in changes.added]
    changes.changed = [placed[r.doc_path] for r in changes.changed]
    if not scoped.left_out:
        return
    changes.added = [r for r in changes.added if r.doc_path not in scoped.left_out]
    changes.changed = [r for r in changes.changed if r.doc_path not in scoped.left_out]
    changes.deleted = sorted(set(changes.deleted) | set(scoped.left_out))


def _through_pages(changes: Changes, root: Path, files: dict[str, list], max_file_bytes: int,
                   index_snippets: bool) -> None:
    """Snippet changes reported as changes of the pages that import them; snippets are not pages."""
    imports_of = {p: (entry[3] if len(entry) >= 4 else "") for p, entry in files.items()}
    if not any(imports_of.values()) and not any(snippets.is_snippet_folder_path(p) for p in imports_of):
        return
    graph = snippets.ImportGraph(root, imports_of, {p: entry[2] for p, entry in files.items()}, max_file_bytes)
    moved = {r.doc_path for r in changes.to_process} | set(changes.deleted)
    closures = graph.closures()
    not_pages = set() if index_snippets else snippets.snippet_paths(closures, root)
    taken = {r.doc_path for r in changes.to_process}
    shown_changed: list[DocumentRef] = []
    for page in sorted(set(files) - not_pages - taken):
        if closures[page] & moved:
            try:
                shown_changed.append(_fingerprint(root / page, page, max_file_bytes))
            except (OSError, DocumentTooLarge) as exc:
                changes.errors.append(DiscoveryError(page, str(exc)))

    def pages(refs: list[DocumentRef]) -> list[DocumentRef]:
        return [snippets.with_dependencies(r, closures[r.doc_path], graph.hash_of)
                for r in refs if r.doc_path not in not_pages]

    changes.added = pages(changes.added)
    changes.changed = pages(changes.changed + shown_changed)
