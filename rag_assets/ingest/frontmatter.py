"""Frontmatter: decode a markdown file and split its header from its body.

Every format the generators write is read: YAML between ``---`` lines (all of them), TOML between ``+++``
lines (Hugo; what ``hugo new`` writes) and a JSON object at the very start (Hugo), after an optional UTF-8
byte-order mark. A page that opens one and never closes it, or whose header does not parse, fails by name
and line; a ``{`` that does not open a JSON object (an MDX expression such as ``{/* note */}``) is body.

Decoding policy: UTF-8, with or without a byte-order mark (the BOM is dropped). Anything else
fails that document rather than guessing an encoding: a UTF-16 BOM -> "UTF-16 text, not UTF-8";
NUL bytes anywhere -> "binary file";
invalid UTF-8 (Latin-1/cp1252, UTF-16, ...) -> "not valid UTF-8 (byte N)". CRLF and CR become LF.

Reading is bounded: at most the size discovery fingerprinted (+1 byte) is read, through a
non-blocking open of a regular file only, and the bytes must hash to the fingerprint; a file
edited, grown or swapped since it was fingerprinted fails this run (the next run picks it up),
so a stage record never pairs one version's hash with another version's text.
YAML is loaded safely (SafeLoader: no object construction) and bounded before anything is built:
PyYAML shares an aliased node instead of copying it, so 480 bytes of nested aliases ("billion
laughs") compose in microseconds yet expand to hundreds of millions of values once copied into
plain data and serialised. The composed node graph is therefore measured first (each shared node
once), and frontmatter with more than MAX_ALIASES aliases, aliases that add more than
MAX_ALIAS_EXPANSION values and characters, a recursive alias, or nesting deeper than MAX_DEPTH is
refused with a DocumentError naming the file and line. Title falls back to the first H1 of the
body, then to the file name.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

from rag_assets.errors import DocumentError
from rag_assets.ingest.files import open_regular
from rag_assets.models import DocumentRef, ParsedDocument

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_H1_RE = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t]*#*[ \t]*$")
_DELIMITER = "---"
_TOML_DELIMITER = "+++"
_JSON_START = re.compile(r'\{\s*("|\})')  # a JSON object's first key (or an empty object), not an MDX expression

# Real frontmatter reuses an anchor a handful of times; these bounds leave room for that and for
# large generated headers while keeping the worst case to ~100 k copied values (milliseconds).
MAX_ALIASES = 100  # alias uses (*name) in one frontmatter
MAX_ALIAS_EXPANSION = 100_000  # nodes plus scalar characters that alias copies add
MAX_DEPTH = 50  # nesting of mappings/sequences, aliases expanded


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
    try:
        fh, _ = open_regular(ref.absolute_path, None)  # the read below is bounded by the fingerprinted size
        with fh:
            data = fh.read(ref.size_bytes + 1)
    except FileNotFoundError:
        raise DocumentError(ref.doc_path, "file vanished after discovery") from None
    except OSError as exc:
        raise DocumentError(ref.doc_path, f"cannot read file: {exc.strerror or exc}") from None
    if len(data) != ref.size_bytes or hashlib.sha256(data).hexdigest() != (ref.file_hash or ref.content_hash):
        raise DocumentError(ref.doc_path, "file changed while being ingested; the next run indexes the new version")
    return parse_document(decode(data, ref.doc_path), ref)


def parse_document(text: str, ref: DocumentRef) -> ParsedDocument:
    front = split_frontmatter(text, ref.doc_path)
    meta, body, body_start_line = dict(front.meta), front.body, front.body_start_line
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


@dataclass(frozen=True)
class Frontmatter:
    """A page's header as data, its body, and where that body starts."""

    meta: dict[str, Any]
    body: str
    body_start_line: int  # 1-based line of the file
    format: str = ""  # "yaml" | "toml" | "json" | "" (none)


def split_frontmatter(text: str, doc_path: str) -> Frontmatter:
    """The frontmatter of a page's text (LF line ends) in any format a generator writes; a DocumentError
    names the file and line when a header is opened and never closed, or does not parse."""
    if text.startswith("\ufeff"):
        text = text[1:]
    first = text.split("\n", 1)[0].rstrip()
    if first == _DELIMITER:
        header, body, start = _between(text, _DELIMITER, ("...",), doc_path)
        return Frontmatter(_load_yaml(header, doc_path), body, start, "yaml")
    if first == _TOML_DELIMITER:
        header, body, start = _between(text, _TOML_DELIMITER, (), doc_path)
        return Frontmatter(_load_toml(header, doc_path), body, start, "toml")
    if _JSON_START.match(text):
        return _json_header(text, doc_path)
    return Frontmatter({}, text, 1)


def _between(text: str, delimiter: str, also_closing: tuple[str, ...], doc_path: str) -> tuple[str, str, int]:
    """The header between the first line and the next line that closes it (found without splitting the
    whole page: facts are read from a page's first MiB), the body after it, the body's first line."""
    closing = "|".join(re.escape(d) for d in (delimiter, *also_closing))
    start = text.find("\n") + 1
    match = re.compile(rf"^(?:{closing})[ \t]*$", re.MULTILINE).search(text, start) if start else None
    if match is None:
        raise DocumentError(doc_path, f"frontmatter opened with '{delimiter}' is never closed", line=1)
    body_at = match.end() + 1
    return text[start : match.start()].removesuffix("\n"), text[body_at:], text.count("\n", 0, match.start()) + 2


def _load_toml(header: str, doc_path: str) -> dict[str, Any]:
    try:
        loaded = tomllib.loads(header)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "(at line N, column M)" of the header: the file's line is one more
        message = re.sub(r"\(at line (\d+)", lambda m: f"(at line {int(m.group(1)) + 1}", str(exc))
        line = re.search(r"at line (\d+)", message)
        raise DocumentError(doc_path, f"invalid TOML frontmatter: {message}",
                            line=int(line.group(1)) if line else None) from None
    except RecursionError:
        raise DocumentError(doc_path, f"frontmatter nested too deeply (limit {MAX_DEPTH} levels)") from None
    _check_depth(loaded, doc_path)
    return loaded


def _json_header(text: str, doc_path: str) -> Frontmatter:
    try:
        loaded, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(doc_path, f"invalid JSON frontmatter: {exc.msg}", line=exc.lineno) from None
    except RecursionError:
        raise DocumentError(doc_path, f"frontmatter nested too deeply (limit {MAX_DEPTH} levels)") from None
    if not isinstance(loaded, dict):
        raise DocumentError(doc_path, "JSON frontmatter must be an object", line=1)
    _check_depth(loaded, doc_path)
    rest = text[end:]
    newline = rest.find("\n")
    if rest[: newline if newline >= 0 else len(rest)].strip():
        raise DocumentError(doc_path, "JSON frontmatter must end its line with its closing '}'",
                            line=text.count("\n", 0, end) + 1)
    consumed = end + (newline + 1 if newline >= 0 else len(rest))
    return Frontmatter({str(k): v for k, v in loaded.items()}, text[consumed:], text.count("\n", 0, consumed) + 1,
                       "json")


def _check_depth(value: Any, doc_path: str) -> None:
    """TOML and JSON headers share YAML's nesting bound (they have no aliases to bound)."""
    level, depth = [value], 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise DocumentError(doc_path, f"frontmatter nested more than {MAX_DEPTH} levels deep")
        level = [v for item in level for v in (item.values() if isinstance(item, dict) else item)
                 if isinstance(v, (dict, list))]


def _load_yaml(header: str, doc_path: str) -> dict[str, Any]:
    loader = _BoundedLoader(header, doc_path)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}
        _check_expansion(node, doc_path)
        loaded = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = _line(mark) if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DocumentError(doc_path, f"invalid YAML frontmatter: {problem}", line=line) from None
    except RecursionError:  # only when called with little stack left: MAX_DEPTH stops nesting before
        raise DocumentError(doc_path, f"frontmatter nested too deeply (limit {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()
    if not isinstance(loaded, dict):
        raise DocumentError(doc_path, f"frontmatter must be a YAML mapping, got {type(loaded).__name__}", line=2)
    return {str(k): v for k, v in loaded.items()}


def _line(mark: yaml.Mark) -> int:
    return mark.line + 2  # +1 for 1-based, +1 for the opening '---'


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases and nesting while composing, before any value is built."""

    def __init__(self, stream: str, doc_path: str):
        super().__init__(stream)
        self.doc_path = doc_path
        self.alias_count = 0
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                raise DocumentError(
                    self.doc_path,
                    f"frontmatter uses more than {MAX_ALIASES} YAML aliases (*{event.anchor}); refused as a "
                    "possible alias bomb",
                    line=_line(event.start_mark),
                )
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise DocumentError(
                    self.doc_path, f"frontmatter nested more than {MAX_DEPTH} levels deep", line=_line(event.start_mark)
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _check_expansion(root: yaml.Node, doc_path: str) -> None:
    """Refuse a node graph whose aliases expand too far, loop, or nest too deep once expanded.

    Sizes are computed once per distinct node (memoised), so measuring a bomb costs as little as
    parsing it. A node's size is 1, plus its characters for a scalar, plus its children's sizes;
    its height is the nesting below it, aliases expanded.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height)
    on_path: set[int] = set()
    distinct_total = 0  # the own sizes of the nodes measured so far, each counted once

    def measure(node: yaml.Node, depth: int) -> tuple[int, int]:
        nonlocal distinct_total
        key = id(node)
        if key in on_path:
            raise DocumentError(
                doc_path, "frontmatter has a recursive YAML alias (a value that contains itself)", line=_line(node.start_mark)
            )
        if key in measured:
            total, height = measured[key]
        else:
            on_path.add(key)
            own = 1 + len(node.value) if isinstance(node, yaml.ScalarNode) else 1
            distinct_total += own
            children = [] if isinstance(node, yaml.ScalarNode) else (
                node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
            )
            parts = [measure(child, depth + 1) for child in children]
            total = own + sum(p[0] for p in parts)
            height = 1 + max((p[1] for p in parts), default=0)
            on_path.discard(key)
            measured[key] = (total, height)
            # checked here, not on a shared node reused deeper down: the line is then where it is reused
            if depth + height - 1 > MAX_DEPTH:
                raise DocumentError(
                    doc_path, f"frontmatter nested more than {MAX_DEPTH} levels deep once its aliases are expanded",
                    line=_line(node.start_mark),
                )
        return total, height

    pairs = root.value if isinstance(root, yaml.MappingNode) else [(None, root)]
    running = 1
    for key_node, value_node in pairs:
        running += (measure(key_node, 2)[0] if key_node is not None else 0) + measure(value_node, 2)[0]
        if running - distinct_total > MAX_ALIAS_EXPANSION:  # what alias copies added so far
            name = f" (key {key_node.value!r})" if isinstance(key_node, yaml.ScalarNode) else ""
            raise DocumentError(
                doc_path,
                f"frontmatter YAML aliases expand to over {running:,} values and characters{name}, more than "
                f"{MAX_ALIAS_EXPANSION:,} added by aliases; refused as a possible alias bomb",
                line=_line((key_node or value_node).start_mark),
            )


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
    """YAML values as JSON-safe plain data (dates become ISO strings, !!binary its base64 text, !!set a sorted list)."""
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=str)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value
