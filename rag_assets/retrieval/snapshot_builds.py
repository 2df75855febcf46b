"""Where the search snapshot lives: a folder per collection, ``<state_dir>/keyword/<collection>/``,
holding immutable segments (snapshot_segments.py), manifests that list them, and ``CURRENT`` naming
the live manifest (replaced atomically: a reader sees the old snapshot or the new one, whole).

A manifest (JSON) is the snapshot: its segments in order, in each the rows of documents that are
dead (replaced by a newer segment or removed), the index generation it answers for and the ones it
follows from (``lineage``), the collection it mirrors and its embedding model. Writers change it
under the folder's lock (FolderBuilds.lock); readers never lock: they read CURRENT, the manifest it
names and the segments, all files that are never rewritten. A segment or manifest no longer named by
the live manifest or the one before it is deleted by the next writer; a reader that loses the race
(a segment deleted between its reading CURRENT and opening the segment) reads CURRENT again.

With a shared (PostgreSQL) state database (SharedBuilds) the manifest and every segment are also
published there (``snapshot_manifests``, ``snapshot_segments``: a segment as a gzipped tar), and the
lock is an advisory lock in that database: a query process on another machine reads the live
manifest from the database and unpacks the segments it lacks into its local folder, once each.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rag_assets.index.generation import EMPTY, current_generation

MANIFEST_FORMAT = "snapshot-v2"  # v2: segments of seg-v2 (terms in the chunk's language)
SEGMENT_PREFIX = "seg-"
_MANIFEST_PREFIX = "manifest-"
_CURRENT = "CURRENT"


def manifest_segments(manifest: dict | None) -> list[str]:
    return [s["name"] for s in (manifest or {}).get("segments", [])]


def snapshot_root(state_dir: Path, collection: str) -> Path:
    return Path(state_dir) / "keyword" / collection


def builds_for(settings, state=None) -> "FolderBuilds":
    """The snapshot's home for these settings: the local folder, or published in a shared (PostgreSQL)
    state database. `state`: the settings' StateDB when the caller holds one."""
    root = snapshot_root(settings.state_dir, settings.collection)
    if not getattr(settings, "state_url", None):
        return FolderBuilds(root)
    if state is None:
        from rag_assets.index.state_db import StateDB

        state = StateDB.for_settings(settings.paths)
    return FolderBuilds(root) if state.is_sqlite else SharedBuilds(state, root, settings.collection, settings.state_dir)


def follows(manifest: dict | None, generation: str, collection_id: str | None = None) -> bool:
    """Whether the snapshot answers for the index as the state database's generation says it is."""
    if manifest is None:
        return generation == EMPTY  # nothing was ever indexed
    if manifest.get("format") != MANIFEST_FORMAT:
        return False
    if collection_id is not None and manifest.get("collection_id") not in (None, collection_id):
        return False
    return generation in manifest.get("lineage", ())


def stale_reason(previous: dict | None, generation: str) -> str:
    """Why a snapshot does not answer for the index generation, for the log line of its rebuild."""
    if previous is None:
        return "none was committed for this index (an earlier version wrote it)"
    if previous.get("format") != MANIFEST_FORMAT:
        return f"it is of another format ({previous.get('format')!r}; this version reads {MANIFEST_FORMAT!r})"
    return (f"it does not follow the index generation {generation[:12]} (the store was changed without committing "
            "it: an earlier version, or a collection deleted and made again)")


def snapshot_follows(settings) -> bool:
    """Whether the search snapshot answers for the index as it is now, its segments' files of the size
    they were written (a few small reads and a stat a file; nothing opened)."""
    generation = current_generation(settings)  # before CURRENT: a commit publishes, then sets it
    builds = builds_for(settings)
    current = builds.current()
    return follows(current, generation) and snapshot_damage(builds, current) is None


def snapshot_damage(builds: "FolderBuilds", manifest: dict | None) -> str | None:
    """What is wrong with the manifest's segments by their files' sizes (None: nothing seen)."""
    from rag_assets.retrieval.snapshot_integrity import damage

    for name in manifest_segments(manifest):
        found = damage(builds.segment_folder(name))
        if found is not None:
            return found
    return None


class FolderBuilds:
    """The snapshot in the local state folder: segments, manifests, CURRENT."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def current_name(self) -> str | None:
        """The live manifest's file name (one small read: what a reader checks on every query)."""
        try:
            return (self.root / _CURRENT).read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def manifest(self, name: str | None) -> dict | None:
        if not name:
            return None
        try:
            manifest = json.loads((self.root / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (IsADirectoryError, ValueError):
            # a foreign or torn entry, e.g. CURRENT naming an earlier version's build folder: no snapshot (rebuilt)
            return None
        manifest["name"] = name
        return manifest

    def current(self) -> dict | None:
        """The live manifest, or None."""
        return self.manifest(self.current_name())

    def segment_folder(self, name: str) -> Path:
        return self.root / name

    @contextmanager
    def lock(self) -> Iterator[None]:
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root.with_name(self.root.name + ".lock"))):
            yield

    def publish(self, manifest: dict, previous: dict | None) -> str:
        """Make `manifest` the live one (under the lock; its segments are written); returns its name.
        Older segments and manifests that neither it nor `previous` names are deleted."""
        name = f"{_MANIFEST_PREFIX}{int(time.time() * 1000):013d}-{uuid.uuid4().hex[:8]}.json"
        body = {k: v for k, v in manifest.items() if k != "name"}
        tmp = self.root / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(body, indent=1), encoding="utf-8")
        os.replace(tmp, self.root / name)
        pointer = self.root / f".{_CURRENT}.{os.getpid()}.tmp"
        pointer.write_text(name, encoding="utf-8")
        os.replace(pointer, self.root / _CURRENT)
        manifest["name"] = name
        self.collect({name, (previous or {}).get("name")}, set(manifest_segments(manifest)) |
                     set(manifest_segments(previous)))
        return name

    def collect(self, manifests: set, segments: set) -> None:
        """Delete the manifests and segments not in these sets, builds of the earlier layout (one
        ``build-*`` folder per generation), and temporary files an hour old (of a process that died)."""
        for path in self.root.iterdir():
            name = path.name
            if name.startswith(_MANIFEST_PREFIX):
                doomed = name not in manifests
            elif name.startswith(SEGMENT_PREFIX):
                doomed = name not in segments
            elif name.startswith("."):
                doomed = _age(path) > 3600
            else:
                doomed = name.startswith("build-")
            if doomed:
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


class SharedBuilds(FolderBuilds):
    """The snapshot published in the shared state database; the local folder is a cache of it."""

    def __init__(self, state, root: Path, collection: str, state_dir: Path):
        super().__init__(root)
        self.state = state
        self.collection = collection
        self.state_dir = state_dir

    def current_name(self) -> str | None:
        import sqlalchemy as sa

        from rag_assets.index.state_db import snapshot_manifests

        with self.state.read() as conn:
            return conn.execute(sa.select(snapshot_manifests.c.name)
                                .where(snapshot_manifests.c.collection == self.collection)).scalar()

    def manifest(self, name: str | None) -> dict | None:
        if not name:
            return None
        local = super().manifest(name)
        if local is not None and all(self.segment_folder(s).is_dir() for s in manifest_segments(local)):
            return local
        return self._fetch(name)

    def _fetch(self, name: str) -> dict | None:
        """The manifest and the segments this machine lacks, from the database into the local folder."""
        import sqlalchemy as sa

        from rag_assets.index.state_db import snapshot_manifests, snapshot_segments

        with self.state.read() as conn:
            body = conn.execute(sa.select(snapshot_manifests.c.body).where(
                snapshot_manifests.c.collection == self.collection, snapshot_manifests.c.name == name)).scalar()
            if body is None:
                return None  # replaced meanwhile: the caller reads the live name again
            manifest = json.loads(body)
            missing = [s for s in manifest_segments(manifest) if not self.segment_folder(s).is_dir()]
            archives = dict(conn.execute(sa.select(snapshot_segments.c.name, snapshot_segments.c.archive).where(
                snapshot_segments.c.collection == self.collection, snapshot_segments.c.name.in_(missing))).all()
                ) if missing else {}
        if set(missing) - set(archives):
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        for segment, archive in archives.items():
            self._unpack(segment, archive)
        tmp = self.root / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(tmp, self.root / name)
        previous = super().current()
        pointer = self.root / f".{_CURRENT}.{os.getpid()}.tmp"
        pointer.write_text(name, encoding="utf-8")
        os.replace(pointer, self.root / _CURRENT)
        self.collect({name, (previous or {}).get("name")}, set(manifest_segments(manifest)) |
                     set(manifest_segments(previous)))
        manifest["name"] = name
        return manifest

    def _unpack(self, segment: str, archive: bytes) -> None:
        import io
        import tarfile

        tmp = self.root / f".tmp-unpack-{uuid.uuid4().hex[:8]}"
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        try:
            os.replace(tmp / segment, self.segment_folder(segment))
        except OSError:
            pass  # another process of this machine unpacked it first
        shutil.rmtree(tmp, ignore_errors=True)

    @contextmanager
    def lock(self) -> Iterator[None]:
        from rag_assets.index.locks import DocumentLocks

        self.root.mkdir(parents=True, exist_ok=True)
        with DocumentLocks(self.state, self.state_dir).hold([f"keyword-build:{self.collection}"]):
            yield

    def publish(self, manifest: dict, previous: dict | None) -> str:
        import sqlalchemy as sa

        from rag_assets.index.state_db import snapshot_manifests, snapshot_segments

        published = set(manifest_segments(previous))
        new = [s for s in manifest_segments(manifest) if s not in published]
        name = super().publish(manifest, previous)
        body = json.dumps({k: v for k, v in manifest.items() if k != "name"})
        keep = set(manifest_segments(manifest)) | published
        with self.state.write() as conn:
            if new:
                self.state.upsert(conn, snapshot_segments, [
                    {"collection": self.collection, "name": s, "archive": self._archive(s), "created_at": time.time()}
                    for s in new], ["collection", "name"])
            self.state.upsert(conn, snapshot_manifests, [
                {"collection": self.collection, "name": name, "body": body, "created_at": time.time()}], ["collection"])
            conn.execute(sa.delete(snapshot_segments).where(snapshot_segments.c.collection == self.collection,
                                                            snapshot_segments.c.name.not_in(keep)))
        return name

    def _archive(self, segment: str) -> bytes:
        import io
        import tarfile

        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            tar.add(self.segment_folder(segment), arcname=segment)
        return buffer.getvalue()
