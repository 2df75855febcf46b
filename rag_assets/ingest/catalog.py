"""What a new discovery means for the index: which documents vanished, and whether removing them
is safe. Plain functions; the `document_catalog` asset applies them.

The deletion guard exists because an empty or wrong docs folder looks exactly like "every file
was deleted": an unmounted share, a typo'd path that exists, a checkout of the wrong branch.
Removing a whole index is therefore refused unless asked for explicitly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rag_assets.models import Catalog, DocumentRef
from rag_assets.index.stage_store import INDEXED, StageStore

OPT_IN = (
    "if they are really gone, run `rag ingest --allow-mass-delete` (or set RAG_ALLOW_MASS_DELETE=1; "
    "from the UI: run document_catalog with config `allow_mass_delete: true`)"
)


@dataclass(frozen=True)
class Vanished:
    doc_paths: list[str]  # known to the state, not on disk, and not merely unreadable
    indexed: int  # documents with an index record (or vectors in the store) before this discovery
    # of doc_paths, those that are indexed (what the guard counts; None: all of them). A vanished
    # document that never got indexed (it failed, or was empty) is removed but not counted.
    indexed_gone: int | None = None

    @property
    def gone(self) -> int:
        return len(self.doc_paths) if self.indexed_gone is None else self.indexed_gone

    def with_orphans(self, orphan_documents: list[str], documents_in_store: int) -> "Vanished":
        """Add the documents only the vector store still knows (e.g. after the state was lost)."""
        new = set(orphan_documents) - set(self.doc_paths)
        return Vanished(sorted(set(self.doc_paths) | new), max(self.indexed, documents_in_store),
                        self.gone + len(new))


def vanished_documents(catalog: Catalog, stages: StageStore) -> Vanished:
    """Documents the state knows (any stage record or the previous catalog) that discovery no longer
    finds. A file that exists but failed discovery (too large, unreadable) is not vanished: what is
    indexed of it stays until it can be read again or is really gone."""
    current = {d.doc_path for d in catalog.documents} | {e.path for e in catalog.errors}
    known = stages.doc_paths()
    previous = stages.read_catalog()
    if previous is not None:
        known |= {d.doc_path for d in previous.documents}
    indexed = stages.doc_paths(INDEXED)
    gone = sorted(known - current)
    # a file still there but no longer a page (a snippet) is removed without counting against the guard
    return Vanished(gone, len(indexed), len((set(gone) - set(catalog.excluded)) & indexed))


def deletion_refusal(
    catalog: Catalog, vanished: Vanished, max_share: float, min_documents: int, allow: bool
) -> str | None:
    """Why removing `vanished` is refused, or None when it may go ahead. The counts are of indexed
    documents: "N of M" always has N <= M. A refusal removes nothing; new and changed documents are
    still indexed (the guard keeps what is indexed, it never holds back what is new)."""
    gone, indexed = min(vanished.gone, vanished.indexed), vanished.indexed
    if allow or not gone or not indexed:
        return None
    everything = gone >= indexed
    too_many = indexed > min_documents and gone / indexed > max_share
    if not (everything or too_many):
        return None
    left = len(catalog.left_out)
    found = len(catalog.documents) + left
    reasons = ", ".join(f"{n} {reason}" for reason, n in Counter(catalog.left_out.values()).most_common())
    return (
        f"refusing to remove {gone} of {indexed} indexed documents: the docs folder {catalog.docs_dir} now holds "
        f"{found} markdown file{'s' if found != 1 else ''}"
        + (" (is it the right folder, and is it mounted?)" if found == 0 else "")
        # an ignore file or a scope setting that leaves out what was indexed is not an empty folder
        + (f", {'all ' if left == found else ''}{left} of them left out of the corpus's scope ({reasons}: "
           "ignore files, the generator's rules, RAG_INCLUDE/RAG_EXCLUDE, RAG_LANGUAGES)" if left else "")
        + f"; nothing was removed (new and changed documents are indexed); {OPT_IN}"
    )


def catalog_run_needed(stored: Catalog | None, seen: Catalog) -> bool:
    """Only when files appeared, vanished or changed readability: edited files are re-fingerprinted
    by the runs over them (and recorded in the catalog by parsed_documents)."""
    if stored is None or stored.docs_dir != seen.docs_dir:
        return True
    if {d.doc_path for d in stored.documents} != {d.doc_path for d in seen.documents}:
        return True
    return sorted((e.path, e.reason) for e in stored.errors) != sorted((e.path, e.reason) for e in seen.errors)


def only_added(stored: Catalog | None, seen: Catalog, wanted: Collection[str]) -> list[DocumentRef] | None:
    """The documents of `wanted` that are new to the stored catalog, when they are all the folder
    changed (nothing vanished, the same unreadable files): what an ingest of those paths may register
    itself, without a catalog run. None when anything else changed (the catalog run decides)."""
    if stored is None or stored.docs_dir != seen.docs_dir:
        return None
    before = {d.doc_path for d in stored.documents}
    now = {d.doc_path for d in seen.documents}
    if not before <= now or sorted((e.path, e.reason) for e in stored.errors) != sorted(
            (e.path, e.reason) for e in seen.errors):
        return None
    added = [d for d in seen.documents if d.doc_path not in before]
    return added if all(d.doc_path in wanted for d in added) else None


def content_changed(stored: Catalog, refs: Sequence[DocumentRef]) -> list[DocumentRef]:
    """The refs that are new to the stored catalog or whose content (or partition) is not its."""
    before = {d.doc_path: (d.partition_key, d.content_hash) for d in stored.documents}
    return [r for r in refs if before.get(r.doc_path) != (r.partition_key, r.content_hash)]


def touched_documents(stored: Catalog, seen: Catalog, skip: Collection[str] = ()) -> list[DocumentRef]:
    """Files the stored catalog lists whose look (size, mtime, inode, hash) moved since: what
    StageStore.refresh_catalog records, so the next look does not read them again."""
    before = {d.doc_path: d for d in stored.documents}
    return [d for d in seen.documents if d.doc_path not in skip and before.get(d.doc_path) != d]
