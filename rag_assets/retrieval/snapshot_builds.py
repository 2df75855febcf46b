"""Where the search snapshot's builds live (snapshot.py): one folder per build in the local state
folder with ``CURRENT`` naming the live one (FolderBuilds), or, with a shared (PostgreSQL) state
database, published there as a gzipped tar per collection (``keyword_builds``) with the local folder as
a cache of the live one and an advisory lock in that database (SharedBuilds)."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

from rag_assets.index.locks import DocumentLocks
from rag_assets.index.state_db import StateDB, keyword_builds


class FolderBuilds:
    """Builds in the local state folder: one folder per build, CURRENT names the live one."""

    def __init__(self, root: Path):
        self.root = root

    def current(self) -> Path | None:
        try:
            name = (self.root / "CURRENT").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        path = self.root / name
        return path if name and path.is_dir() else None

    def lock(self):
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root.with_name(self.root.name + ".lock")))

    def publish(self, tmp: Path, name: str) -> None:
        """Make the finished build in `tmp` the live one (atomic for readers), drop older ones."""
        os.replace(tmp, self.root / name)
        pointer = self.root / f".CURRENT.{os.getpid()}.tmp"
        pointer.write_text(name, encoding="utf-8")
        os.replace(pointer, self.root / "CURRENT")
        for path in self.root.iterdir():
            if path.is_dir() and path.name != name and path.name.startswith(("build-", ".tmp-")):
                # a .tmp- folder of a live builder is protected by the lock the builder holds
                shutil.rmtree(path, ignore_errors=True)


class SharedBuilds(FolderBuilds):
    """Builds published in the shared state database; the local folder is a cache of the live one."""

    def __init__(self, state: StateDB, root: Path, collection: str, state_dir: Path):
        super().__init__(root)
        self.state = state
        self.collection = collection
        self.state_dir = state_dir

    def current(self) -> Path | None:
        with self.state.read() as conn:
            row = conn.execute(
                sa.select(keyword_builds.c.name).where(keyword_builds.c.collection == self.collection)
            ).first()
        if row is None:
            return None
        local = self.root / row.name
        if not local.is_dir():
            self._unpack(row.name)
        return local if local.is_dir() else None

    def lock(self):
        return DocumentLocks(self.state, self.state_dir).hold([f"keyword-build:{self.collection}"])

    def publish(self, tmp: Path, name: str) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            tar.add(tmp, arcname=name)
        with self.state.write() as conn:
            self.state.upsert(conn, keyword_builds, [
                {"collection": self.collection, "name": name, "archive": buffer.getvalue(), "created_at": time.time()}
            ], ["collection"])
        super().publish(tmp, name)

    def _unpack(self, name: str) -> None:
        with self.state.read() as conn:
            archive = conn.execute(
                sa.select(keyword_builds.c.archive).where(keyword_builds.c.collection == self.collection,
                                                          keyword_builds.c.name == name)
            ).scalar()
        if archive is None:
            return  # replaced meanwhile: the next look finds the newer one
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-unpack-{uuid.uuid4().hex[:8]}"
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        try:
            FolderBuilds.publish(self, tmp / name, name)
        except OSError:
            pass  # another process of this machine unpacked it first
        shutil.rmtree(tmp, ignore_errors=True)
