"""Per-document stage records on disk: what each stage produced, and from which version.

Every stage writes one JSON record per document under `<state_dir>/stages/<stage>/`, holding the
content hash of the source file it was derived from, a fingerprint of the settings that shaped
it, and its payload. A stage whose record matches the current source hash and fingerprint has
nothing to do. Writes are atomic (temp file + rename): a crash leaves the old record or the new,
and a reader in another process never sees half a record. The temp file is named per process and
thread, so two writers of one record (two runs, or two threads of one) never share a temp file;
the last rename wins, and both wrote a record valid for the version they saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator

from rag_assets.models import Block, BlockType, Catalog, Chunk, DiscoveryError, DocumentRef, ParsedDocument

PARSED = "parsed"
BLOCKS = "blocks"
CHUNKS = "chunks"
EMBEDDED = "embedded"
INDEXED = "indexed"
FAILED = "failed"
STAGES = (PARSED, BLOCKS, CHUNKS, EMBEDDED, INDEXED, FAILED)


class StageStore:
    def __init__(self, state_dir: Path):
        self.root = Path(state_dir) / "stages"

    def _path(self, stage: str, doc_path: str) -> Path:
        name = hashlib.sha256(doc_path.encode()).hexdigest()[:32]
        return self.root / stage / name[:2] / f"{name}.json"

    def write(self, stage: str, doc_path: str, source_hash: str, payload: Any, fingerprint: str = "") -> None:
        record = {"doc_path": doc_path, "source_hash": source_hash, "fingerprint": fingerprint, "payload": payload}
        _atomic_write(self._path(stage, doc_path), json.dumps(record, ensure_ascii=False))

    def read(self, stage: str, doc_path: str) -> dict | None:
        try:
            return json.loads(self._path(stage, doc_path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # an unreadable record is treated as missing: the stage redoes the work

    def is_current(self, stage: str, doc_path: str, source_hash: str, fingerprint: str = "") -> bool:
        record = self.read(stage, doc_path)
        return record is not None and record["source_hash"] == source_hash and record["fingerprint"] == fingerprint

    def delete(self, stage: str, doc_path: str) -> None:
        self._path(stage, doc_path).unlink(missing_ok=True)

    def delete_document(self, doc_path: str) -> None:
        for stage in STAGES:
            self.delete(stage, doc_path)

    def doc_paths(self, stage: str) -> Iterator[str]:
        for path in (self.root / stage).glob("*/*.json"):
            try:
                yield json.loads(path.read_text(encoding="utf-8"))["doc_path"]
            except (OSError, ValueError, KeyError):
                continue

    # failures: one record per document, cleared when the document next succeeds
    def record_failure(self, doc_path: str, source_hash: str, stage: str, error: str) -> None:
        self.write(FAILED, doc_path, source_hash, {"stage": stage, "error": error})

    def clear_failure(self, doc_path: str, stage: str) -> None:
        record = self.read(FAILED, doc_path)
        if record and record["payload"]["stage"] == stage:
            self.delete(FAILED, doc_path)

    def failure(self, doc_path: str, source_hash: str) -> dict | None:
        record = self.read(FAILED, doc_path)
        if record and record["source_hash"] == source_hash:
            return record["payload"]
        return None

    # the catalog of the last discovery
    def write_catalog(self, catalog: Catalog) -> None:
        _atomic_write(self.root.parent / "catalog.json", json.dumps(asdict(catalog), ensure_ascii=False))

    def read_catalog(self) -> Catalog | None:
        try:
            data = json.loads((self.root.parent / "catalog.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return Catalog(
            docs_dir=data["docs_dir"],
            documents=[DocumentRef(**d) for d in data["documents"]],
            errors=[DiscoveryError(**e) for e in data["errors"]],
        )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# (de)serialisation of the stage payloads
def parsed_from_dict(data: dict) -> ParsedDocument:
    return ParsedDocument(**data)


def blocks_from_list(data: list[dict]) -> list[Block]:
    return [Block(**{**b, "type": BlockType(b["type"])}) for b in data]


def blocks_to_list(blocks: list[Block]) -> list[dict]:
    return [{**asdict(b), "type": b.type.value} for b in blocks]


def chunks_from_list(data: list[dict]) -> list[Chunk]:
    return [Chunk(**c) for c in data]
