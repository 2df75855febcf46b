"""Committing changes to the search snapshot: what an ingest does right after each write to the store.

The index step (rag_assets.ingest.index_stage.run_index) writes a group of documents to the store, then
hands the same chunks and vectors to ``SnapshotWriter.replace``, still holding the documents' locks and
before it records them indexed; the catalog step hands the documents it removed to ``remove``. A
commit writes the new documents as a segment (tokenised here, once: queries never tokenise a chunk),
marks their older rows dead, merges segments when that pays, and publishes the new manifest with a
new index generation, which it also sets in the state database, all under the snapshot's lock
(snapshot_builds.py). So a run leaves a current snapshot behind whoever launched it (the CLI, the
sensor, `dagster asset materialize`, a backfill, `--workers`), and a query never builds anything.

Cost at scale: a commit costs what its documents cost (an edit of one page: one small segment); segments
are merged geometrically (the newest is merged into the one before it while that one is not at least
MERGE_RATIO times larger), so a snapshot of N chunks is at most ~log4(N) segments and each chunk is
rewritten O(log N) times over its life, from arrays (no tokenising); a segment whose dead rows pass
COMPACT_DEAD_SHARE of it is rewritten without them.

When the snapshot does not follow from the state database's generation (no snapshot yet over an index
an earlier version wrote, a writer that changed the store without committing, a recreated collection),
the commit first rebuilds it from the store, once, and says so (``rebuild``); a reader that finds it so
does the same (snapshot.py).
"""

from __future__ import annotations

import logging
import time
from typing import Sequence

import numpy as np

from rag_assets.index.chroma_store import chunk_metadata
from rag_assets.index.generation import new_generation, read_generation, set_generation
from rag_assets.retrieval.snapshot_builds import (MANIFEST_FORMAT, FolderBuilds, builds_for, follows, manifest_segments,
                                                  snapshot_damage, snapshot_follows, stale_reason)
from rag_assets.retrieval.snapshot_integrity import DamagedSegment
from rag_assets.retrieval.snapshot_segments import (Segment, SnapshotChunk, SnapshotDocument, merge_segments,
                                                    save_segment, segment_columns)

log = logging.getLogger(__name__)

MERGE_RATIO = 4
COMPACT_DEAD_SHARE = 0.25
LINEAGE = 64  # generations a manifest remembers it follows from


def live_rows(entry: dict) -> int:
    return int(entry["rows"]) - sum(hi - lo for lo, hi in entry.get("dead", []))


class SnapshotWriter:
    """Commits to one collection's search snapshot. `store`: the ChromaStore written (its collection id
    and model; a rebuild reads it); `state`: the settings' StateDB."""

    def __init__(self, settings, store, state=None, builds: FolderBuilds | None = None):
        from rag_assets.index.state_db import StateDB

        self.settings = settings
        self.store = store
        self.state = state if state is not None else StateDB.for_settings(settings.paths)
        self.builds = builds if builds is not None else builds_for(settings, self.state)
        self.commits = 0
        self.rebuilds = 0
        self._segments: dict[str, Segment] = {}

    # -- what the ingest calls -----------------------------------------------------------------
    def replace(self, documents: Sequence[tuple[str, Sequence, np.ndarray]]) -> str:
        """These documents' new versions (doc_path, its chunks, their vectors: as just written to the
        store) replace whatever the snapshot held of them; a document with no chunk is removed.
        Returns the new generation."""
        model = self.store.embedding_model
        docs = [SnapshotDocument(doc_path, [SnapshotChunk(c.chunk_id, c.text, chunk_metadata(c, model), v)
                                            for c, v in zip(chunks, vectors)])
                for doc_path, chunks, vectors in documents]
        columns = segment_columns(docs, self.store.dimension)  # tokenised outside the lock
        return self._commit(columns, [d.doc_path for d in docs])

    def remove(self, doc_paths: Sequence[str]) -> str:
        """These documents are gone from the store. Returns the new generation."""
        return self._commit(None, list(doc_paths))

    def rebuild(self, reason: str, repair: bool = False) -> str:
        """Rebuild the snapshot from the store (under the lock), whatever it holds now. repair: a
        segment was found damaged, so a snapshot that follows the index is rebuilt too, unless its
        segments are whole (another process repaired it while this one waited)."""
        with self.builds.lock():
            previous = self.builds.current()
            generation = read_generation(self.state)
            if follows(previous, generation, self.store.collection_id) and not (repair and self._damage(previous)):
                return previous["generation"]  # another process rebuilt it while this one waited
            manifest = self._rebuilt(reason, generation)
            self.builds.publish(manifest, previous)
            return manifest["generation"]

    # -- the commit ----------------------------------------------------------------------------
    def _commit(self, columns, doc_paths: list[str]) -> str:
        with self.builds.lock():
            previous = self.builds.current()
            generation = read_generation(self.state)
            damage = self._damage(previous) if previous is not None else None
            if damage is not None or not follows(previous, generation, self.store.collection_id):
                base = self._rebuilt(damage or stale_reason(previous, generation), generation)
            else:
                base = previous or self._manifest(generation, [])
            manifest = {**base, "segments": [dict(s, dead=[list(d) for d in s.get("dead", [])]) for s in base["segments"]]}
            self._mark_dead(manifest, doc_paths)
            if columns is not None:
                name = save_segment(self.builds.root, columns)
                manifest["segments"].append({"name": name, "rows": len(columns.ids), "dead": []})
            manifest["segments"] = self._merged(manifest["segments"])
            generation = new_generation()
            manifest.update(generation=generation, lineage=[generation, *base.get("lineage", [])][:LINEAGE],
                            collection_id=self.store.collection_id, embedding_model=self.store.embedding_model,
                            dimension=self.store.dimension, created_at=time.time())
            self.builds.publish(manifest, previous)
            set_generation(self.state, generation)
            self.commits += 1
            return generation

    def _segment(self, name: str) -> Segment:
        segment = self._segments.get(name)
        if segment is None:
            segment = self._segments[name] = Segment(self.builds.segment_folder(name))
        return segment

    def _damage(self, manifest: dict | None) -> str | None:
        """Why the manifest's segments cannot be built on (a file missing or not as written), or None:
        a commit on a damaged segment would carry the damage on (merges copy its arrays)."""
        for name in manifest_segments(manifest):
            try:
                self._segment(name)
            except DamagedSegment as exc:
                return f"a segment of it is damaged: {exc}"
            except FileNotFoundError:
                return f"its segment {self.builds.segment_folder(name)} is missing"
        return None

    def _mark_dead(self, manifest: dict, doc_paths: list[str]) -> None:
        """The documents' rows, wherever a segment holds them live, become dead."""
        for entry in manifest["segments"]:
            segment = self._segment(entry["name"])
            dead = {lo for lo, _ in entry["dead"]}
            for doc_path in doc_paths:
                doc = segment.find_document(doc_path)
                if doc is not None:
                    lo, hi = segment.document_rows(doc)
                    if lo not in dead:
                        entry["dead"].append([lo, hi])
                        dead.add(lo)

    def _merged(self, segments: list[dict]) -> list[dict]:
        """Segments without their empty ones, any mostly dead one rewritten, and the newest merged into
        the one before while that one is not MERGE_RATIO times larger (see the module docstring)."""
        out = []
        for entry in segments:
            live = live_rows(entry)
            if live == 0:
                continue
            if entry["dead"] and live < (1 - COMPACT_DEAD_SHARE) * entry["rows"]:
                entry = self._merge([entry])
            out.append(entry)
        while len(out) >= 2 and live_rows(out[-2]) < MERGE_RATIO * live_rows(out[-1]):
            out[-2:] = [self._merge(out[-2:])]
        return out

    def _merge(self, entries: list[dict]) -> dict:
        parts = []
        for entry in entries:
            segment = self._segment(entry["name"])
            dead = np.asarray(sorted(lo for lo, _ in entry["dead"]), dtype=np.int64)
            starts = np.asarray(segment.doc_bounds[:-1], dtype=np.int64)
            parts.append((segment, np.flatnonzero(~np.isin(starts, dead))))
        name = merge_segments(self.builds.root, parts, self.store.dimension)
        return {"name": name, "rows": sum(live_rows(e) for e in entries), "dead": []}

    # -- a rebuild from the store ----------------------------------------------------------------
    def _rebuilt(self, reason: str, generation: str) -> dict:
        """A manifest of one segment holding everything the store holds now, answering for the state
        database's generation (not a new one: the index did not change)."""
        started = time.perf_counter()
        log.warning("search snapshot of collection %r: %s; building it from the store once",
                    self.settings.collection, reason)
        documents: dict[str, list[SnapshotChunk]] = {}
        for chunk_id, text, meta, vector in self.store.iter_all(include_embeddings=True):
            meta = meta or {}
            documents.setdefault(str(meta.get("doc_path", "")), []).append(
                SnapshotChunk(chunk_id, text or "", meta, np.asarray(vector, dtype=np.float32)))
        columns = segment_columns([SnapshotDocument(p, c) for p, c in documents.items()], self.store.dimension)
        segments = [{"name": save_segment(self.builds.root, columns), "rows": len(columns.ids), "dead": []}] \
            if columns is not None else []
        self.rebuilds += 1
        log.info("search snapshot of collection %r built from the store: %d chunks of %d documents in %.2f s",
                    self.settings.collection, sum(len(c) for c in documents.values()), len(documents),
                    time.perf_counter() - started)
        return self._manifest(generation, segments)

    def _manifest(self, generation: str, segments: list[dict]) -> dict:
        """A manifest of these segments answering for `generation`."""
        return {"format": MANIFEST_FORMAT, "collection": self.settings.collection,
                "collection_id": self.store.collection_id, "embedding_model": self.store.embedding_model,
                "dimension": self.store.dimension, "generation": generation, "lineage": [generation],
                "segments": segments, "created_at": time.time()}


def ensure_snapshot(settings, store=None) -> bool:
    """Build the search snapshot from the store when it does not answer for the index as it is (an
    index an earlier version wrote): what `rag ingest` does when it finds nothing else to do, so the
    first query after an upgrade does not build it. True when it built. `store`: the ChromaStore when
    the caller holds one (else it is opened for the configured embedder)."""
    if snapshot_follows(settings):
        return False
    if store is None:
        from rag_assets.embedding import load_embedder
        from rag_assets.index.chroma_store import ChromaStore

        store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    writer = SnapshotWriter(settings, store)
    current = builds_for(settings).current()
    damage = snapshot_damage(writer.builds, current)
    reason = f"a segment of it is damaged: {damage}" if damage else stale_reason(current, read_generation(writer.state))
    writer.rebuild(reason + " (found by `rag ingest`)", repair=damage is not None)
    return writer.rebuilds > 0
