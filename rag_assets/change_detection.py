"""Change detection for the docs sensor: what was added, changed or deleted since the last look.

The cursor maps doc_path -> (size, mtime, content hash). A file whose size and mtime match the
cursor is unchanged without being read; otherwise it is hashed, and only a different hash is a
change (a `touch` is not). A file whose size or mtime moved since the previous look and was
modified within the last `settle_seconds` is still being written: it waits for the next tick.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets.discovery import DocumentTooLarge, _fingerprint, iter_markdown_files
from rag_assets.models import DocumentRef

DEFAULT_SETTLE_SECONDS = 5.0


@dataclass
class Changes:
    added: list[DocumentRef] = field(default_factory=list)
    changed: list[DocumentRef] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)  # still being written: next tick
    touched: int = 0  # mtime moved, content did not
    errors: list[str] = field(default_factory=list)
    cursor: str = ""  # the new cursor, serialised

    @property
    def to_process(self) -> list[DocumentRef]:
        return self.added + self.changed

    def run_key(self) -> str:
        """Idempotent: the same set of document versions always gives the same key."""
        items = sorted([(r.partition_key, r.content_hash) for r in self.to_process] + [(d, "deleted") for d in self.deleted])
        return "docs-" + hashlib.sha256(json.dumps(items).encode()).hexdigest()[:24]


def detect_changes(
    docs_dir: Path,
    cursor: str | None,
    *,
    max_file_bytes: int = 5_000_000,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
    now: float | None = None,
) -> Changes:
    now = time.time() if now is None else now
    state = json.loads(cursor) if cursor else {}
    known: dict[str, list] = state.get("files", {})
    pending: dict[str, list] = state.get("pending", {})
    root = Path(docs_dir).resolve()
    paths, refused = iter_markdown_files(root)
    changes = Changes(errors=[f"{e.path}: {e.reason}" for e in refused])
    files: dict[str, list] = {}
    new_pending: dict[str, list] = {}

    for path in paths:
        doc_path = path.relative_to(root).as_posix()
        try:
            st = os.stat(path)
        except OSError:
            continue  # vanished between listing and stat: it is simply not there
        observed = [st.st_size, st.st_mtime]
        previous = known.get(doc_path)
        if previous and previous[:2] == observed:
            files[doc_path] = previous
            continue
        settling = settle_seconds > 0 and now - st.st_mtime < settle_seconds and pending.get(doc_path) != observed
        if settling:
            new_pending[doc_path] = observed
            changes.unstable.append(doc_path)
            if previous:
                files[doc_path] = previous  # keep the last good version known until it settles
            continue
        try:
            ref = _fingerprint(path, doc_path, max_file_bytes)
        except (OSError, DocumentTooLarge) as exc:
            changes.errors.append(f"{doc_path}: {exc}")
            continue
        files[doc_path] = [ref.size_bytes, ref.mtime, ref.content_hash]
        if previous is None:
            changes.added.append(ref)
        elif previous[2] != ref.content_hash:
            changes.changed.append(ref)
        else:
            changes.touched += 1

    changes.deleted = sorted(set(known) - set(files) - set(new_pending))
    changes.cursor = json.dumps({"files": files, "pending": new_pending}, separators=(",", ":"))
    return changes
