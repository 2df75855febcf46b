"""Documents handed over from code (a bot, a notebook, a benchmark harness) rather than saved as files.

They take the same road as files: each one is written, atomically, as a markdown file (frontmatter
from its metadata, then its content) into the docs folder's managed subfolder
`<docs folder>/_from_code/` (RAG_CODE_DOCUMENTS_FOLDER), and the ordinary ingestion indexes it: a
partition per document, Dagster runs in the UI, stage records, atomic replace, only changed chunks
embedded. Because they are files of the docs folder, a later `rag ingest` of the folder neither
deletes nor duplicates them; re-ingesting an id with new content replaces its file (and so its
chunks); deleting an id deletes its file, and the next ingest its chunks.

A document is any of the shapes callers already have: our ``Document``, a mapping, a dataclass (the
rules-bot contract's ``RuleDocument``), a pydantic model (a LangChain ``Document`` too) or an object
with ``content``/``page_content``; its id is ``document_id``, ``id`` or ``doc_id`` (a string or a
``uuid.UUID``; a UUID string is written in its canonical form), else its ``filename``, else one
derived from what it is (``derived_id``: its metadata's ``source`` and its content, hashed: the
pipeline-API contract's ``Document(content, metadata)`` carries no id). The id is written into the
file's frontmatter as ``document_id``, so every chunk of the document carries it
(``DocumentChunk.document_id``), the result returns it and ``delete_documents`` takes it back.

This module is the plain part: validating documents and writing/removing their files. A batch is
checked whole (ids, file names, metadata YAML can hold) before anything is written: a ValueError
names the document and the problem, and no file changes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import re
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
ID_KEYS = ("document_id", "id", "doc_id")  # where a document's id is looked for, in this order
ID_FIELD = "document_id"  # the frontmatter key the id is written under
# keys of a document's metadata that name it rather than describe it: written as ID_FIELD / filename
_NAMING_KEYS = frozenset({*ID_KEYS, "filename"})
NAME_MAX_BYTES = 255  # a file name's limit on the file systems we run on (ext4, xfs, btrfs, tmpfs, APFS)
PATH_MAX_BYTES = 4095


@dataclass
class Document:
    """One document from code: an id (or file name), markdown content, metadata (frontmatter)."""

    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    filename: str | None = None  # the caller's name for it, kept as metadata when an id is given too


def fields_of(raw: Any) -> Mapping[str, Any] | None:
    """raw's fields as a mapping: a mapping, a dataclass, a pydantic model; None for anything else."""
    if isinstance(raw, Mapping):
        return raw
    if dataclasses.is_dataclass(raw) and not isinstance(raw, type):
        return {f.name: getattr(raw, f.name) for f in dataclasses.fields(raw)}
    for dump in ("model_dump", "dict"):  # pydantic 2, then 1
        method = getattr(raw, dump, None)
        if callable(method) and hasattr(raw, "__fields__" if dump == "dict" else "model_fields"):
            data = method()
            if isinstance(data, Mapping):
                return data
    if hasattr(raw, "page_content") or hasattr(raw, "content"):
        names = ("content", "page_content", "text", "metadata", *ID_KEYS, "filename")
        return {name: getattr(raw, name) for name in names if hasattr(raw, name)}
    return None


def canonical_id(value: Any, where: str = "id") -> str:
    """A document id as text: a uuid.UUID or a UUID string in canonical form (lower case, hyphens),
    any other string stripped, an int as its digits. ValueError for anything else or nothing."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"{where}: an id is a string or a UUID, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise ValueError(f"{where}: an id is required (document_id, id, doc_id or filename)")
    return str(uuid.UUID(text)) if _UUID.match(text) else text


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None and v != ""), None)


DERIVED_PREFIX = "doc-"


def derived_id(content: str, metadata: Mapping[str, Any]) -> str:
    """The id of a document given without one: ``doc-`` and 16 hex digits of the SHA-256 of its
    metadata's ``source`` and its content. The same document loaded again is the same document (nothing
    to do); a changed one is another document: give an id to replace one."""
    source = metadata.get("source")
    basis = f"{'' if source is None else source}\n{content}"
    return DERIVED_PREFIX + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]


def as_document(raw: Any, index: int, *, require_metadata: bool = False) -> Document:
    """A Document from any of the shapes above; ValueError naming the document's place otherwise.
    ``require_metadata``: a document must carry a metadata mapping (``{}`` for none; the pipeline-API
    contract's load_documents)."""
    where = f"document {index}"
    if isinstance(raw, Document):
        fields = {"content": raw.content, "metadata": raw.metadata, "id": raw.id, "filename": raw.filename}
    else:
        fields = fields_of(raw)
        if fields is None:
            raise ValueError(f"{where}: expected a Document, a mapping, a dataclass or a pydantic model with content, "
                             f"got {type(raw).__name__}")
    content = _first(fields.get("content"), fields.get("page_content"), fields.get("text"))
    if not isinstance(content, str) or not content.strip():
        raise ValueError(f"{where}: content is required (non-empty markdown text)")
    metadata = fields.get("metadata")
    if metadata is None:
        if require_metadata:
            raise ValueError(f"{where}: metadata is required (a dict of the document's metadata, {{}} for none)")
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise ValueError(f"{where}: metadata must be a mapping, got {type(metadata).__name__}")
    filename = _first(fields.get("filename"), metadata.get("filename"))
    if filename is not None and not isinstance(filename, str):
        raise ValueError(f"{where}: filename must be a string, got {type(filename).__name__}")
    raw_id = _first(*(fields.get(k) for k in ID_KEYS), *(metadata.get(k) for k in ID_KEYS), filename)
    doc_id = derived_id(content, metadata) if raw_id is None else canonical_id(raw_id, where)
    where = f"{where} (id {doc_id[:80]!r})"
    meta = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"{where}: metadata keys are non-empty strings, got {key!r}")
        if key not in _NAMING_KEYS:
            meta[key] = _yaml_value(value, f"{where}: metadata {key!r}")
    return Document(content=content, metadata=meta, id=doc_id,
                    filename=filename.strip() if isinstance(filename, str) and filename.strip() else None)


_SCALARS = (str, int, float, bool, dt.date, dt.datetime, type(None))


def _yaml_value(value: Any, where: str) -> Any:
    """value as frontmatter can hold it (UUIDs become their text); ValueError naming the key for
    anything YAML would refuse or write as a Python object."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [_yaml_value(v, where) for v in items]
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, (str, int, float, bool)):
                raise ValueError(f"{where} has a key of type {type(key).__name__}; mapping keys are strings")
            out[key] = _yaml_value(item, where)
        return out
    raise ValueError(f"{where} holds a value of type {type(value).__name__}; metadata values are strings, numbers, booleans, "
                     "dates, UUIDs, or lists and mappings of them")


def validate(documents: Iterable[Any], *, require_metadata: bool = False) -> list[Document]:
    """The documents, checked: ValueError naming the problem for an empty list, a document without
    content (or, ``require_metadata``, without metadata), an id given twice, metadata YAML cannot hold,
    or an id too long for a file name."""
    if documents is None or isinstance(documents, (str, bytes, Mapping)):
        raise ValueError("documents are required: a non-empty list of documents")
    docs = [as_document(raw, i, require_metadata=require_metadata) for i, raw in enumerate(documents)]
    if not docs:
        raise ValueError("documents are required: the list is empty")
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        rel = relative_path(doc.id)
        long = next((part for part in rel.split("/") if len(part.encode()) > NAME_MAX_BYTES), None)
        if long is not None:
            raise ValueError(f"document {i}: id {doc.id[:40]!r}… is too long for a file name ({len(long.encode())} "
                             f"bytes with its extension, at most {NAME_MAX_BYTES} per path part): use a shorter id")
        if rel in seen:
            if doc.id.startswith(DERIVED_PREFIX) and docs[seen[rel]].id == doc.id:
                raise ValueError(f"document {i}: the same content and source as document {seen[rel]}, and no id "
                                 "(the id is derived from them): give one of them an id, or drop it")
            raise ValueError(f"document {i}: id {doc.id!r} is given twice (also document {seen[rel]})")
        seen[rel] = i
    return docs


def relative_path(doc_id: str) -> str:
    """The file name an id gets inside the managed folder: safe characters, subfolders kept, `.md`."""
    parts = [_SAFE.sub("-", p).strip(".-") for p in doc_id.replace("\\", "/").split("/")]
    parts = [p for p in parts if p]
    if not parts:
        raise ValueError(f"id {doc_id!r} has no usable characters for a file name")
    name = "/".join(parts)
    return name if name.lower().endswith((".md", ".mdx")) else f"{name}.md"


def render(doc: Document) -> str:
    meta = {k: v for k, v in doc.metadata.items() if k not in _NAMING_KEYS}
    meta[ID_FIELD] = doc.id
    if doc.filename and doc.filename != doc.id:
        meta["filename"] = doc.filename
    header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).strip()
    body = doc.content if doc.content.endswith("\n") else doc.content + "\n"
    return f"---\n{header}\n---\n\n{body}"


def written_id(text: str) -> str | None:
    """The document_id a file written here carries in its frontmatter (None: none, or not ours)."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 4)
    if end < 0:
        return None
    try:
        meta = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return None
    value = meta.get(ID_FIELD) if isinstance(meta, dict) else None
    return None if value is None else str(value)


@dataclass
class Planned:
    """One document's file, before it is written: where, what, and what was there before."""

    doc: Document
    path: Path
    doc_path: str  # relative to the docs folder
    text: str
    previous: str | None  # the file's text before this write (None: it did not exist)

    @property
    def unchanged(self) -> bool:
        return self.previous == self.text

    @property
    def name(self) -> str:
        """How errors name the document: its file name when the caller gave one, else its id."""
        return self.doc.filename or self.doc.id


def plan(folder: Path, docs: Iterable[Document]) -> list[Planned]:
    """Each document's file, rendered and checked, nothing written: ValueError when a path is too
    long, or when an id lands on a file another id owns (ids that differ only in characters a file
    name cannot hold)."""
    folder = Path(folder)
    out = []
    for i, doc in enumerate(docs):
        rel = relative_path(doc.id)
        path = folder / rel
        if len(str(path.absolute()).encode()) > PATH_MAX_BYTES:
            raise ValueError(f"document {i}: id {doc.id[:40]!r}… makes a path longer than {PATH_MAX_BYTES} bytes")
        previous = None
        if path.is_file():
            previous = path.read_text(encoding="utf-8", errors="replace")
            owner = written_id(previous)
            if owner is not None and owner != doc.id:
                raise ValueError(f"document {i}: id {doc.id!r} maps to {folder.name}/{rel}, which holds the document "
                                 f"with id {owner!r}: use another id (or delete that one first)")
        elif path.exists():
            raise ValueError(f"document {i}: {folder.name}/{rel} exists and is not a file")
        out.append(Planned(doc, path, f"{folder.name}/{rel}", render(doc), previous))
    return out


def write_text(path: Path, text: str) -> None:
    """Replace the file atomically (readers and the sensor never see half a file); a new file gets
    the mode the process's umask gives (0644 under the usual 022), as any file an editor saves."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_planned(planned: Iterable[Planned]) -> list[str]:
    """Write the planned files that change; their doc_paths (all of them, in order)."""
    out = []
    for p in planned:
        if not p.unchanged:  # the same document again: nothing to change (not even its mtime)
            write_text(p.path, p.text)
        out.append(p.doc_path)
    return out


def restore(planned: Planned) -> None:
    """Put back what was there before this document was written (nothing, or the earlier version)."""
    if planned.unchanged:
        return
    if planned.previous is None:
        planned.path.unlink(missing_ok=True)
    else:
        write_text(planned.path, planned.previous)


def write(folder: Path, docs: Iterable[Document]) -> list[str]:
    """Write each document's file; returns their paths relative to the folder's parent (the docs
    folder), i.e. their doc_paths. Every file is planned (and checked) before the first is written."""
    return write_planned(plan(folder, docs))


@dataclass
class Removal:
    doc_id: str
    path: Path
    doc_path: str
    text: str  # what the file held (to put it back when the removal is refused)


def plan_removal(folder: Path, ids: Iterable[Any]) -> tuple[list[Removal], list[str]]:
    """The files of these ids (read, not yet removed), and the ids that have none. ValueError for
    an id that is not a string or a UUID."""
    removals, unknown = [], []
    for i, raw in enumerate(ids):
        doc_id = canonical_id(raw, f"id {i}")
        rel = relative_path(doc_id)
        path = Path(folder) / rel
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        if text is None or written_id(text) not in (None, doc_id):
            unknown.append(doc_id)  # no file, or the file of another id
        else:
            removals.append(Removal(doc_id, path, f"{Path(folder).name}/{rel}", text))
    return removals, unknown


def remove(folder: Path, ids: Iterable[Any]) -> tuple[list[str], list[str]]:
    """Delete the files of these ids: (doc_paths removed, ids that had no file)."""
    removals, unknown = plan_removal(folder, ids)
    for r in removals:
        r.path.unlink(missing_ok=True)
    return [r.doc_path for r in removals], unknown
