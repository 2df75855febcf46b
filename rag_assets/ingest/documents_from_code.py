"""Documents handed over from code (a bot, a notebook, a benchmark harness) rather than saved as files.

They take the same road as files: each one is written, atomically, as a markdown file (frontmatter
from its metadata, then its content) into the docs folder's managed subfolder
`<docs folder>/_from_code/` (RAG_CODE_DOCUMENTS_FOLDER), and the ordinary ingestion indexes it: a
partition per document, Dagster runs in the UI, stage records, atomic replace, only changed chunks
embedded. Because they are files of the docs folder, a later `rag ingest` of the folder neither
deletes nor duplicates them; re-ingesting an id with new content replaces its file (and so its
chunks); deleting an id deletes its file, and the next ingest its chunks.

This module is the plain part: validating documents and writing/removing their files.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Document:
    """One document from code: an id (or file name), markdown content, metadata (frontmatter)."""

    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


def as_document(raw: Any, index: int) -> Document:
    """A Document from a Document, a mapping ({"id"/"doc_id"/"filename", "content"/"page_content",
    "metadata"}) or an object with those attributes (e.g. a LangChain Document)."""
    if isinstance(raw, Document):
        doc = raw
    elif isinstance(raw, Mapping):
        doc = Document(content=raw.get("content", raw.get("page_content", raw.get("text", ""))),
                       metadata=dict(raw.get("metadata") or {}),
                       id=raw.get("id") or raw.get("doc_id") or raw.get("filename"))
    elif hasattr(raw, "page_content") or hasattr(raw, "content"):
        meta = dict(getattr(raw, "metadata", None) or {})
        doc = Document(content=getattr(raw, "page_content", None) or getattr(raw, "content", ""), metadata=meta,
                       id=getattr(raw, "id", None) or meta.get("id") or meta.get("doc_id") or meta.get("filename"))
    else:
        raise ValueError(f"document {index}: expected a Document or a mapping with content, got {type(raw).__name__}")
    if not isinstance(doc.content, str) or not doc.content.strip():
        raise ValueError(f"document {index}: content is required (non-empty markdown text)")
    if not isinstance(doc.metadata, Mapping):
        raise ValueError(f"document {index}: metadata must be a mapping")
    doc_id = doc.id or doc.metadata.get("id") or doc.metadata.get("doc_id") or doc.metadata.get("filename")
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise ValueError(f"document {index}: an id is required (id, doc_id or filename)")
    return Document(content=doc.content, metadata=dict(doc.metadata), id=doc_id.strip())


def validate(documents: Iterable[Any]) -> list[Document]:
    """The documents, checked: ValueError naming the problem for an empty list, a document without
    content or id, or an id given twice."""
    if documents is None or isinstance(documents, (str, bytes, Mapping)):
        raise ValueError("documents are required: a non-empty list of documents")
    docs = [as_document(raw, i) for i, raw in enumerate(documents)]
    if not docs:
        raise ValueError("documents are required: the list is empty")
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        rel = relative_path(doc.id)
        if rel in seen:
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
    meta = {k: v for k, v in doc.metadata.items() if k not in ("id", "doc_id", "filename")}
    header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).strip() if meta else ""
    body = doc.content if doc.content.endswith("\n") else doc.content + "\n"
    return f"---\n{header}\n---\n\n{body}" if header else body


def write(folder: Path, docs: Iterable[Document]) -> list[str]:
    """Write each document's file (atomically: readers and the sensor never see half a file);
    returns their paths relative to the folder's parent (the docs folder), i.e. their doc_paths."""
    folder = Path(folder)
    out = []
    for doc in docs:
        rel = relative_path(doc.id)
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = render(doc)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            out.append(f"{folder.name}/{rel}")
            continue  # the same document again: nothing to change (not even its mtime)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
        out.append(f"{folder.name}/{rel}")
    return out


def remove(folder: Path, ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """Delete the files of these ids: (doc_paths removed, ids that had no file)."""
    removed, unknown = [], []
    for doc_id in ids:
        rel = relative_path(doc_id)
        path = Path(folder) / rel
        if path.is_file():
            path.unlink()
            removed.append(f"{Path(folder).name}/{rel}")
        else:
            unknown.append(doc_id)
    return removed, unknown
