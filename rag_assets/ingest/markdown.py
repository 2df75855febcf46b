"""Split a markdown body into structural blocks (headings, prose, code, tables, admonitions).

Fenced code is where markdown-it says it is (rag_assets.ingest.markdown_code): one parse of the whole body (block structure only)
gives every fence's lines, top-level or nested in a list item or quote, so a fence opened inside a
list closes where CommonMark closes it, never at an indented line that only looks like a closer.
One change to markdown-it's rule: a top-level fence that no later line closes ends before the next
ATX heading (flagged ``unclosed``) instead of swallowing the rest of the page. Indented code blocks
are taken from the same parse. Past markdown-it's nesting limit (FENCE_MAX_NESTING levels) the parse
goes on at the next unindented line after the deep part, up to FENCE_PARSE_RESTARTS times a page.

Two passes:

1. A line pre-scan cuts out what CommonMark does not know or handles badly for our purpose:
   top-level fenced code (from the parse above), the admonitions and tabs of the common doc
   generators, and ``$$ … $$`` display math (so LaTeX lines such as ``---`` are never read as setext
   underlines or tables); no marker inside fenced or indented code counts. Each admonition or tab
   becomes one ADMONITION block, its whole body included, with ``label`` = its lower-cased type:

   - Docusaurus / remark-directive ``:::note Title`` … ``:::`` (nesting counted, ``::::`` too);
   - pymdownx blocks ``/// tip | Title`` … ``///`` (a closer has as many slashes as its opener);
   - MkDocs / Python-Markdown ``!!! note "Title"`` and collapsible ``??? tip`` / ``???+ tip``:
     the body is the following lines indented 4 more columns than the marker;
   - pymdownx content tabs ``=== "Tab title"`` (label ``tab``), one block per tab, body as above;
   - GitHub alerts: a blockquote opening with ``> [!NOTE]`` (``TIP``, ``IMPORTANT``, ``WARNING``,
     ``CAUTION``), lazy continuation lines included.

   Nothing inside fenced code is recognised. A ``:::`` or ``///`` block that never closes stops
   before the next ATX heading and is flagged ``unclosed``.
2. Everything in between is parsed by markdown-it (CommonMark + GFM tables); its top-level tokens'
   ``.map`` line ranges say which original lines are headings and tables, and a fence nested in a
   list item or quote becomes a CODE block of its own lines, verbatim (indentation, list marker or
   ``>`` included), so the chunker keeps it whole or cuts it into framed pieces, never mid-code
   without its fence. All other lines are prose.
   It is parsed in pieces cut before every unindented ATX heading (outside HTML blocks): such a line
   always ends every list and quote before it, so the pieces parse exactly like the whole, but
   markdown-it's nesting limit (10 list levels) -- past which it stops tokenising and the open list
   swallows everything after -- can then only swallow lines up to the next heading.

Block text is always sliced from the original lines, so it is verbatim source (after ``\\r\\n`` → ``\\n``
and BOM removal); every non-blank line lands in exactly one block, in order.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

from markdown_it import MarkdownIt

from rag_assets.ingest.markdown_code import ATX_HEADING, CodeLines, Fence
from rag_assets.models import Block, BlockType

# Admonition and tab markers (see the module docstring); "label" is the type word. A ``:::`` type is
# followed by a title, ``[title]``, ``{attributes}`` or nothing: mkdocstrings' ``::: package.Class``
# is an API-docs directive, not an admonition (it has no closer and would swallow the prose after it).
_ADMONITION_OPEN = re.compile(r"^(?P<indent>[ \t]*):{3,}[ \t]*(?P<label>[A-Za-z][\w-]*)(?=[ \t\[{]|$)(?P<rest>.*)$")
_ADMONITION_CLOSE = re.compile(r"^[ \t]*:{3,}[ \t]*$")
_BLOCKS_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<slashes>/{3,})[ \t]*(?P<label>[A-Za-z][\w-]*)[ \t]*(?:\|(?P<title>.*))?$")
_BLOCKS_CLOSE = re.compile(r"^[ \t]*(?P<slashes>/{3,})[ \t]*$")
_MKDOCS_OPEN = re.compile(
    r'^(?P<indent>[ \t]*)(?:!!!|\?\?\?\+?)[ \t]*(?P<label>[\w-]+)(?:[ \t]+[\w-]+)*(?:[ \t]+"(?P<title>.*)")?[ \t]*$'
)
_TAB_OPEN = re.compile(r'^(?P<indent>[ \t]*)===[!+]{0,2}[ \t]+"(?P<title>.*)"[ \t]*$')
_ALERT_OPEN = re.compile(r"^(?P<lead>[ \t]*>[ \t]?)\[!(?P<label>note|tip|important|warning|caution)\][ \t]*", re.IGNORECASE)
_QUOTE = re.compile(r"^[ \t]*>")
# Lines that start a block of their own rather than lazily continuing a quote's paragraph:
# list items and thematic breaks (headings, fences and the markers above are checked apart).
_LIST_ITEM_OR_BREAK = re.compile(r"^ {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|(?:[-*_][ \t]*){3,}$)")
_MATH_OPEN = re.compile(r"^[ \t]{0,3}\$\$")
_UNINDENTED_ATX = re.compile(r"^#{1,6}(?:[ \t]|$)")
# CommonMark HTML blocks: types 1-5 run to their end marker (across blank lines), types 6-7 to the
# next blank line; an ATX line inside one is HTML, not a heading, so no piece is cut there.
_HTML_UNTIL_MARKER = (
    (re.compile(r"^ {0,3}<(?:script|pre|style|textarea)(?:[\s>]|$)", re.IGNORECASE),
     re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE)),
    (re.compile(r"^ {0,3}<!--"), re.compile(r"-->")),
    (re.compile(r"^ {0,3}<\?"), re.compile(r"\?>")),
    (re.compile(r"^ {0,3}<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"^ {0,3}<!\[CDATA\["), re.compile(r"\]\]>")),
)
_HTML_UNTIL_BLANK = re.compile(r"^ {0,3}</?[A-Za-z]")


@dataclass(frozen=True)
class _Region:
    kind: str  # "code", "admonition", "math" (prose) or "other" (handed to markdown-it)
    start: int  # first line, 0-based
    end: int  # one past the last line
    unclosed: bool = False
    label: str | None = None  # an admonition's type ("note", "tab" …)


class _Item(NamedTuple):
    """A line range of the body and what it is; prose items are merged into blocks afterwards."""

    kind: BlockType
    start: int
    end: int
    level: int | None = None  # headings
    text: str | None = None  # headings: their text
    unclosed: bool = False
    label: str | None = None


@functools.lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Only the block structure is needed: skipping inline parsing makes big tables linear and cheap.
    return MarkdownIt("commonmark").enable("table").disable("inline")


def _indent_width(ws: str) -> int:
    return sum(4 - (i % 4) if c == "\t" else 1 for i, c in enumerate(ws))


def _leading_width(line: str) -> int:
    return _indent_width(line[: len(line) - len(line.lstrip(" \t"))])


def _with_slashes(pattern: re.Pattern[str], slashes: int) -> Callable[[str], bool]:
    """A line test: ``pattern`` matches with exactly this many slashes."""

    def test(line: str) -> bool:
        m = pattern.match(line)
        return bool(m) and len(m["slashes"]) == slashes

    return test


class _Scanner:
    """Line pre-scan: finds fences, admonitions, tabs and display math; the rest is "other"."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.code = CodeLines(lines)
        # next_heading[i]: first ATX-heading line at index >= i (n if none); where unclosed blocks stop.
        self.next_heading = self.code.next_heading
        # Per kind of delimited block (":" or ("/", slash count)): opener line -> (end, closed).
        self._delimited: dict[object, dict[int, tuple[int, bool]]] = {}

    def fence_at(self, i: int) -> Fence | None:
        """The fenced code block (markdown-it's) whose opening fence is line i, if any."""
        return self.code.fences.get(i)

    def unclosed_end(self, i: int) -> int:
        """An unclosed block ends right before the next ATX heading line after its first line."""
        return self.next_heading[i + 1] if i + 1 <= len(self.lines) else len(self.lines)

    # -- admonitions and tabs ----------------------------------------------------------------------
    def container_at(self, i: int) -> _Region | None:
        """The admonition or tab region whose marker is line i, if it is one."""
        line = self.lines[i]
        if m := _ADMONITION_OPEN.match(line):
            end, closed = self.delimited_end(i, ":", _ADMONITION_OPEN.match, _ADMONITION_CLOSE.match)
            return _Region("admonition", i, end, unclosed=not closed, label=m["label"].lower())
        if m := _BLOCKS_OPEN.match(line):
            # Blocks nest by slash count: only markers with as many slashes pair with this one.
            slashes = len(m["slashes"])
            is_open, is_close = _with_slashes(_BLOCKS_OPEN, slashes), _with_slashes(_BLOCKS_CLOSE, slashes)
            end, closed = self.delimited_end(i, ("/", slashes), is_open, is_close)
            return _Region("admonition", i, end, unclosed=not closed, label=m["label"].lower())
        if m := _MKDOCS_OPEN.match(line):
            return _Region("admonition", i, self.indented_end(i), label=m["label"].lower())
        if _TAB_OPEN.match(line):
            return _Region("admonition", i, self.indented_end(i), label="tab")
        # An alert's marker must open its quote: "> [!NOTE]" further down a quote is just text.
        if (m := _ALERT_OPEN.match(line)) and not (i > 0 and _QUOTE.match(self.lines[i - 1])):
            return _Region("admonition", i, self.quote_end(i), label=m["label"].lower())
        return None

    def delimited_end(
        self, i: int, kind: object, is_open: Callable[[str], object], is_close: Callable[[str], object]
    ) -> tuple[int, bool]:
        """(one past the end, closed?) of the ``:::`` or ``///`` block opened at line i."""
        known = self._delimited.setdefault(kind, {})
        if i not in known:
            self._match_delimiters(i, known, is_open, is_close)
        return known[i]

    def _match_delimiters(
        self,
        i: int,
        known: dict[int, tuple[int, bool]],
        is_open: Callable[[str], object],
        is_close: Callable[[str], object],
    ) -> None:
        """Walk from the opener at line i (skipping code) until it closes, pairing the markers met.

        Every opener passed on the way is recorded too: a walk from it would see the same lines.
        After an unclosed block the pre-scan resumes at the next heading, and the openers there
        are then already known -- without that, n unclosed blocks would each walk to the end.
        """
        lines, n = self.lines, len(self.lines)
        open_at = [i]  # openers not yet closed, innermost last
        headings: list[int] = []  # ATX headings passed, outside code
        stop = n  # where blocks still open at the end of the walk stop at the latest
        j = i + 1
        while j < n and open_at:
            fence = self.fence_at(j)
            if fence:
                if fence.top and not fence.closed:
                    # An unclosed fence inside an unclosed block: both stop at the next heading.
                    stop = fence.end
                    break
                j = fence.end
                continue
            if j in self.code.indented:
                j = self.code.indented[j]
                continue
            if ATX_HEADING.match(lines[j]):
                headings.append(j)
            if is_open(lines[j]):
                open_at.append(j)
            elif is_close(lines[j]):
                known[open_at.pop()] = (j + 1, True)
            j += 1
        for k in open_at:  # never closed: each stops before the first heading after its marker
            h = bisect.bisect_right(headings, k)
            known[k] = (min(headings[h], stop) if h < len(headings) else stop, False)

    def indented_end(self, i: int) -> int:
        """One past the body of an MkDocs admonition or tab: the following lines indented ≥4 more
        columns than its marker, blank lines included while an indented line follows."""
        body_indent = _leading_width(self.lines[i]) + 4
        end, j = i + 1, i + 1
        while j < len(self.lines):
            line = self.lines[j]
            if line.strip():
                if _leading_width(line) < body_indent:
                    break
                end = j + 1
            j += 1
        return end

    def quote_end(self, i: int) -> int:
        """One past the blockquote starting at line i: its ``>`` lines, plus lazy continuation lines
        (text without ``>`` right after a non-blank quote or lazy line, which CommonMark keeps in
        the quote's paragraph)."""
        j, lazy_ok = i + 1, True
        while j < len(self.lines):
            line = self.lines[j]
            if _QUOTE.match(line):
                lazy_ok = bool(line.strip(" \t>"))
            elif not line.strip() or not lazy_ok or self._starts_block(j):
                break
            j += 1
        return j

    def _starts_block(self, i: int) -> bool:
        """Line i would start a block of its own, so it cannot continue a paragraph lazily."""
        line = self.lines[i]
        return bool(
            ATX_HEADING.match(line)
            or _LIST_ITEM_OR_BREAK.match(line)
            or self.fence_at(i)
            or _MATH_OPEN.match(line)
            or _ADMONITION_OPEN.match(line)
            or _BLOCKS_OPEN.match(line)
            or _MKDOCS_OPEN.match(line)
            or _TAB_OPEN.match(line)
        )

    def math_end(self, i: int) -> int | None:
        """One past the closing ``$$`` of display math opened at line i (None: not display math)."""
        rest = self.lines[i].strip()[2:]
        if "$$" in rest:
            return i + 1  # $$ … $$ on one line
        for j in range(i + 1, len(self.lines)):
            if ATX_HEADING.match(self.lines[j]):
                return None  # a heading cannot sit inside math: this "$$" was just text
            if "$$" in self.lines[j]:
                return j + 1
        return None

    def regions(self) -> list[_Region]:
        regions: list[_Region] = []
        other_start: int | None = None
        i, n = 0, len(self.lines)

        def flush_other(upto: int) -> None:
            nonlocal other_start
            if other_start is not None and other_start < upto:
                regions.append(_Region("other", other_start, upto))
            other_start = None

        while i < n:
            line = self.lines[i]
            fence = self.fence_at(i)
            if fence and fence.top:
                flush_other(i)
                regions.append(_Region("code", i, fence.end, unclosed=not fence.closed))
                i = fence.end
                continue
            code_end = fence.end if fence else self.code.indented.get(i)
            if code_end is not None:
                # A fence in a list item or quote (the second pass makes it a block), or indented code:
                # its lines must not be mistaken for admonition or math markers here.
                if other_start is None:
                    other_start = i
                i = code_end
                continue
            container = self.container_at(i)
            if container:
                flush_other(i)
                regions.append(container)
                i = container.end
                continue
            if _MATH_OPEN.match(line):
                end = self.math_end(i)
                if end is not None:
                    flush_other(i)
                    regions.append(_Region("math", i, end))
                    i = end
                    continue
            if other_start is None:
                other_start = i
            i += 1
        flush_other(n)
        return regions


def _normalise(body: str) -> list[str]:
    body = body.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    # Split on "\n" only: str.splitlines() also splits on \x0b, \x1c, \u2028…, which markdown-it
    # does not, and the token line numbers would no longer match.
    return body.split("\n")


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) so it neither starts nor ends with a blank line."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def split_markdown(body: str) -> list[Block]:
    """Split a markdown body (frontmatter already removed) into ordered structural blocks."""
    if not body.strip():
        return []
    lines = _normalise(body)
    items: list[_Item] = []
    scanner = _Scanner(lines)
    nested = sorted((i, f) for i, f in scanner.code.fences.items() if not f.top)
    for region in scanner.regions():
        if region.kind == "code":
            items.append(_Item(BlockType.CODE, region.start, region.end, unclosed=region.unclosed))
        elif region.kind == "admonition":
            items.append(_Item(BlockType.ADMONITION, region.start, region.end, unclosed=region.unclosed,
                               label=region.label))
        elif region.kind == "math":
            items.append(_Item(BlockType.PROSE, region.start, region.end))
        else:
            items.extend(_parse_other(lines, region.start, region.end, nested))

    blocks: list[Block] = []
    k = 0
    while k < len(items):
        item = items[k]
        start, end = item.start, item.end
        if item.kind is BlockType.PROSE:
            # Merge the run of prose between structural blocks, blank lines and all.
            while k + 1 < len(items) and items[k + 1].kind is BlockType.PROSE:
                k += 1
                end = items[k].end
            start, end = _trim(lines, start, end)
            if start < end:
                blocks.append(Block(BlockType.PROSE, "\n".join(lines[start:end]), start_line=start))
        elif item.kind is BlockType.HEADING:
            blocks.append(Block(BlockType.HEADING, item.text or "", heading_level=item.level, start_line=start))
        else:
            start, end = _trim(lines, start, end)
            blocks.append(Block(item.kind, "\n".join(lines[start:end]), start_line=start, unclosed=item.unclosed,
                                label=item.label))
        k += 1
    return blocks


def _parse_other(lines: list[str], start: int, end: int, nested: list[tuple[int, Fence]] = ()) -> list[_Item]:
    """Headings, tables and nested fences (`nested`: (first line, fence), sorted) of lines [start, end),
    parsed piece by piece (see the module docstring)."""
    cuts = _heading_cuts(lines, start, end)
    items: list[_Item] = []
    for piece_start, piece_end in zip([start] + cuts, cuts + [end]):
        lo = bisect.bisect_left(nested, (piece_start,), key=lambda f: (f[0],))
        hi = bisect.bisect_left(nested, (piece_end,), key=lambda f: (f[0],))
        items.extend(_parse_piece(lines, piece_start, piece_end, nested[lo:hi]))
    return items


def _heading_cuts(lines: list[str], start: int, end: int) -> list[int]:
    """Lines in (start, end) that open an unindented ATX heading outside any HTML block."""
    cuts: list[int] = []
    html_end: re.Pattern[str] | None = None  # the end marker of the open HTML block, if any
    html_until_blank = False
    for i in range(start, end):
        line = lines[i]
        if html_end is not None:
            if html_end.search(line):
                html_end = None
            continue
        if html_until_blank:
            if line.strip():
                continue
            html_until_blank = False
        if i > start and _UNINDENTED_ATX.match(line):
            cuts.append(i)
            continue
        for opener, closer in _HTML_UNTIL_MARKER:
            m = opener.match(line)
            if m:
                if not closer.search(line, m.end()):
                    html_end = closer
                break
        else:
            html_until_blank = bool(_HTML_UNTIL_BLANK.match(line))
    return cuts


def _parse_piece(lines: list[str], start: int, end: int, nested: list[tuple[int, Fence]] = ()) -> list[_Item]:
    """Headings and tables from markdown-it's top-level tokens, and the fences nested in list items
    and quotes (`nested`: from the whole body's parse) as code; every other line is prose."""
    found: list[_Item] = []
    tokens = _parser().parse("\n".join(lines[start:end]))
    for idx, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        t_start, t_end = start + tok.map[0], start + tok.map[1]
        if tok.type == "heading_open":
            inline = tokens[idx + 1]
            # A multi-line setext heading's text spans lines; a breadcrumb wants one line.
            text = " ".join(inline.content.split("\n")).strip()
            found.append(_Item(BlockType.HEADING, t_start, t_end, level=int(tok.tag[1]), text=text))
        elif tok.type == "table_open":
            found.append(_Item(BlockType.TABLE, t_start, t_end))
        elif tok.type == "fence":
            # The pre-scan takes top-level fences, but stay safe if markdown-it disagrees.
            found.append(_Item(BlockType.CODE, t_start, t_end))
    found.extend(_Item(BlockType.CODE, first, min(fence.end, end), unclosed=not fence.closed) for first, fence in nested)
    found.sort(key=lambda item: item.start)
    items: list[_Item] = []
    cursor = start  # first line not yet assigned to an item
    for item in found:
        if item.start < cursor:
            continue  # inside what an earlier item took (the two parses disagree: past a nesting limit)
        if cursor < item.start:
            items.append(_Item(BlockType.PROSE, cursor, item.start))
        items.append(item)
        cursor = item.end
    if cursor < end:
        items.append(_Item(BlockType.PROSE, cursor, end))
    return items
