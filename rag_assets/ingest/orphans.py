"""Orphans: vectors in the store whose document is not in the folder, found from the chunk ids
alone (ids.py: an id starts with its document's key) and deleted with their snapshot copy and stage
records. No Dagster import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from rag_assets.index.generation import bump_generation
from rag_assets.index.locks import DocumentLocks
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest import ids
from rag_assets.ingest.index_stage import SnapshotCommits
from rag_assets.ingest.stage_windows import held


@dataclass
class Orphans:
    """Vectors in the store whose document is not in the folder."""

    ids_by_document: dict[str, list[str]] = field(default_factory=dict)  # doc_path (or doc key) -> ids
    documents_in_store: int = 0  # distinct documents the store holds vectors of

    @property
    def vectors(self) -> int:
        return sum(len(v) for v in self.ids_by_document.values())

    def without(self, doc_paths: Iterable[str]) -> "Orphans":
        """The orphans other than these documents (removed by doc_path already)."""
        drop = set(doc_paths)
        return Orphans({d: v for d, v in self.ids_by_document.items() if d not in drop}, self.documents_in_store)


def find_orphans(store, keep_doc_paths: Iterable[str]) -> Orphans:
    """Every vector whose document is not in `keep_doc_paths` (the folder as discovered, plus files
    that exist but could not be read). Reads ids only: a chunk id starts with its document's key
    (ids.py); ids of the older scheme are looked up by their doc_path metadata."""
    keep = set(keep_doc_paths)
    keep_keys = {ids.doc_key(p) for p in keep}
    by_key: dict[str, list[str]] = {}
    legacy: list[str] = []
    for cid in store.ids():
        key = ids.doc_key_of(cid)
        if key is None:
            legacy.append(cid)
        else:
            by_key.setdefault(key, []).append(cid)
    orphans = Orphans(documents_in_store=len(by_key))
    doomed = {k: v for k, v in by_key.items() if k not in keep_keys}
    names = {ids.doc_key_of(hit.chunk_id): str(hit.metadata.get("doc_path", "")) for hit in store.get([v[0] for v in doomed.values()])}
    for key, cids in doomed.items():
        orphans.ids_by_document[names.get(key) or key] = cids
    legacy_docs: set[str] = set()
    for start in range(0, len(legacy), 1000):
        for hit in store.get(legacy[start : start + 1000]):
            doc_path = str(hit.metadata.get("doc_path", ""))
            legacy_docs.add(doc_path)
            if doc_path not in keep:
                orphans.ids_by_document.setdefault(doc_path, []).append(hit.chunk_id)
    orphans.documents_in_store += len(legacy_docs - {names.get(k) for k in by_key})
    return orphans


def delete_orphans(store, orphans: Orphans, stages: StageStore, locks: DocumentLocks | None = None,
                   snapshot: SnapshotCommits | None = None) -> int:
    """Delete the orphaned vectors (and the search snapshot's copy and any stage records of those documents)."""
    doomed = [cid for cids in orphans.ids_by_document.values() for cid in cids]
    if not doomed:
        return 0
    with held(locks, list(orphans.ids_by_document)):
        store.delete_ids(doomed)
        if snapshot is not None:
            snapshot.remove(list(orphans.ids_by_document))
        stages.delete_documents(list(orphans.ids_by_document))
    if snapshot is None:
        bump_generation(stages.db)
    return len(doomed)
