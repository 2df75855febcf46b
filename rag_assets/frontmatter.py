"""Frontmatter: decode a markdown file and split its YAML header from its body.

Decoding policy: UTF-8, with or without a byte-order mark (the BOM is dropped). Anything else
fails that document rather than guessing an encoding: a UTF-16 BOM -> "UTF-16 text, not UTF-8";
NUL bytes anywhere -> "binary file";
invalid UTF-8 (Latin-1/cp1252, UTF-16, ...) -> "not valid UTF-8 (byte N)". CRLF and CR become LF.

Reading is bounded: at most the size discovery fingerprinted (+1 byte) is read, through a
non-blocking open of a regular file only, and the bytes must hash to the fingerprint; a file
edited, grown or swapped since it was fingerprinted fails this run (the next run picks it up),
so a stage record never pairs one version's hash with another version's text.
YAML is loaded with `yaml.safe_load` (no object construction). Title falls back to the first H1
of the body, then to the file name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import PurePosixPath
from typing import Any

import yaml

from rag_assets.errors import DocumentError
from rag_assets.models import DocumentRef, ParsedDocument

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_H1_RE = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t]*#*[ \t]*$")
_DELIMITER = "---"


def decode(data: bytes, doc_path: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError(doc_path, "UTF-16 text, not UTF-8: re-save the file as UTF-8")
    if b"\x00" in data:
        raise DocumentError(doc_path, "binary file (contains NUL bytes), not markdown text")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(doc_path, f"not valid UTF-8 (byte {exc.start}): re-save the file as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_document(ref: DocumentRef) -> ParsedDocument:
    """Read the file behind `ref` and parse it; every failure is a DocumentError naming the file."""
    from rag_assets.discovery import open_regular

    try:
        fh, _ = open_regular(ref.absolute_path, None)  # the read below is bounded by the fingerprinted size
        with fh:
            data = fh.read(ref.size_bytes + 1)
    except FileNotFoundError:
        raise DocumentError(ref.doc_path, "file vanished after discovery") from None
    except OSError as exc:
        raise DocumentError(ref.doc_path, f"cannot read file: {exc.strerror or exc}") from None
    if len(data) != ref.size_bytes or hashlib.sha256(data).hexdigest() != ref.content_hash:
        raise DocumentError(ref.doc_path, "file changed while being ingested; the next run indexes the new version")
    return parse_document(decode(data, ref.doc_path), ref)


def parse_document(text: str, ref: DocumentRef) -> ParsedDocument:
    header, body, body_start_line = _split_header(text, ref.doc_path)
    meta = _load_yaml(header, ref.doc_path) if header is not None else {}
    title = _scalar_text(meta.pop("title", None)) or first_h1(body) or PurePosixPath(ref.doc_path).stem
    description = _scalar_text(meta.pop("description", None)) or ""
    tags = _tags(meta.pop("tags", None))
    metadata = {key: _plain(value) for key, value in meta.items()}
    metadata.setdefault("doc_path", ref.doc_path)
    if ref.module:
        metadata.setdefault("module", ref.module)
    if ref.chapter:
        metadata.setdefault("chapter", ref.chapter)
    return ParsedDocument(
        doc_path=ref.doc_path,
        content_hash=ref.content_hash,
        title=title.strip(),
        description=description.strip(),
        tags=tags,
        metadata=metadata,
        body=body,
        body_start_line=body_start_line,
    )


def _split_header(text: str, doc_path: str) -> tuple[str | None, str, int]:
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _DELIMITER:
        return None, text, 1
    for i in range(1, len(lines)):
        if lines[i].rstrip() in (_DELIMITER, "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :]), i + 2
    raise DocumentError(doc_path, "frontmatter opened with '---' is never closed", line=1)


def _load_yaml(header: str, doc_path: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(header)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None  # +1 for 1-based, +1 for the opening '---'
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DocumentError(doc_path, f"invalid YAML frontmatter: {problem}", line=line) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise DocumentError(doc_path, f"frontmatter must be a YAML mapping, got {type(loaded).__name__}", line=2)
    return {str(k): v for k, v in loaded.items()}


def first_h1(body: str) -> str | None:
    """The first level-1 ATX heading outside code fences."""
    fence: str | None = None
    for line in body.split("\n"):
        m = _FENCE_RE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            h = _H1_RE.match(line)
            if h:
                return h.group(1).strip()
    return None


def _scalar_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(_plain(value))


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, (list, tuple)):
        return [str(_plain(t)).strip() for t in value if str(t).strip()]
    return [str(_plain(value))]


def _plain(value: Any) -> Any:
    """YAML values as JSON-safe plain data (dates become ISO strings)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
