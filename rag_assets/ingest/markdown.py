"""Split a markdown body into structural blocks (headings, prose, code, tables, admonitions).

Two passes:

1. A line pre-scan cuts out what CommonMark does not know or handles badly for our purpose:
   top-level fenced code (so an unclosed fence cannot swallow the rest of the page), Docusaurus
   ``:::`` admonitions (nesting counted) and ``$$ … $$`` display math (so LaTeX lines such as
   ``---`` are never read as setext underlines or tables).
2. Everything in between is parsed by markdown-it (CommonMark + GFM tables); its top-level tokens'
   ``.map`` line ranges say which original lines are headings and tables. All other lines are prose.
   It is parsed in pieces cut before every unindented ATX heading (outside HTML blocks): such a line
   always ends every list and quote before it, so the pieces parse exactly like the whole, but
   markdown-it's nesting limit (10 list levels) -- past which it stops tokenising and the open list
   swallows everything after -- can then only swallow lines up to the next heading.

Block text is always sliced from the original lines, so it is verbatim source (after ``\\r\\n`` → ``\\n``
and BOM removal); every non-blank line lands in exactly one block, in order.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from rag_assets.models import Block, BlockType

# CommonMark: an opening fence is ≥3 backticks or tildes, indented ≤3 spaces; a backtick fence's
# info string may not contain a backtick (otherwise it is inline code).
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}(?=[^`]*$)|~{3,})")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_ADMONITION_OPEN = re.compile(r"^[ \t]*:{3,}[ \t]*[A-Za-z]")
_ADMONITION_CLOSE = re.compile(r"^[ \t]*:{3,}[ \t]*$")
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


@functools.lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Only the block structure is needed: skipping inline parsing makes big tables linear and cheap.
    return MarkdownIt("commonmark").enable("table").disable("inline")


def _indent_width(ws: str) -> int:
    return sum(4 - (i % 4) if c == "\t" else 1 for i, c in enumerate(ws))


class _Scanner:
    """Line pre-scan: finds fences, admonitions and display math; the rest is "other"."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        n = len(lines)
        # next_heading[i]: first ATX-heading line at index >= i (n if none); where unclosed blocks stop.
        self.next_heading = [n] * (n + 1)
        for i in range(n - 1, -1, -1):
            self.next_heading[i] = i if _ATX_HEADING.match(lines[i]) else self.next_heading[i + 1]
        # (fence char, min length, indent class) -> earliest line from which no closer exists; keeps repeated
        # unclosed fences from rescanning to the end each time (worst case stays linear).
        self._no_closer_from: dict[tuple[str, int], int] = {}

    def fence_at(self, i: int) -> tuple[str, int, int] | None:
        """(fence char, fence length, indent width) if line i opens a fence."""
        m = _FENCE_OPEN.match(self.lines[i])
        if not m:
            return None
        fence = m.group("fence")
        return fence[0], len(fence), _indent_width(m.group("indent"))

    def fence_end(self, i: int, char: str, length: int, indent: int) -> int | None:
        """One past the closing fence of the fence opened at line i, or None if it never closes."""
        nested = indent if indent > 3 else 0
        for (c, ln, ind), start in self._no_closer_from.items():
            if c == char and ln <= length and ind == nested and start <= i:
                return None
        closer = re.compile(rf"^(?P<ws>[ \t]*){re.escape(char)}{{{length},}}[ \t]*$")
        for j in range(i + 1, len(self.lines)):
            m = closer.match(self.lines[j])
            if not m:
                continue
            width = _indent_width(m.group("ws"))
            # Top-level fences close at indent ≤3 (CommonMark); fences nested in list items close
            # at roughly their own indentation.
            if (indent <= 3 and width <= 3) or (indent > 3 and abs(width - indent) <= 3):
                return j + 1
        key = (char, length, nested)
        self._no_closer_from[key] = min(i, self._no_closer_from.get(key, i))
        return None

    def unclosed_end(self, i: int) -> int:
        """An unclosed block ends right before the next ATX heading line after its first line."""
        return self.next_heading[i + 1] if i + 1 <= len(self.lines) else len(self.lines)

    def admonition_end(self, i: int) -> tuple[int, bool]:
        depth, j, n = 1, i + 1, len(self.lines)
        first_heading = n  # first ATX heading outside code: where an unclosed admonition stops
        while j < n:
            fence = self.fence_at(j)
            if fence:
                end = self.fence_end(j, *fence)
                if end is None:
                    # An unclosed fence inside an unclosed admonition: both stop at the next heading.
                    return min(first_heading, self.unclosed_end(j)), False
                j = end
                continue
            if first_heading == n and _ATX_HEADING.match(self.lines[j]):
                first_heading = j
            if _ADMONITION_OPEN.match(self.lines[j]):
                depth += 1
            elif _ADMONITION_CLOSE.match(self.lines[j]):
                depth -= 1
                if depth == 0:
                    return j + 1, True
            j += 1
        return first_heading, False

    def math_end(self, i: int) -> int | None:
        """One past the closing ``$$`` of display math opened at line i (None: not display math)."""
        rest = self.lines[i].strip()[2:]
        if "$$" in rest:
            return i + 1  # $$ … $$ on one line
        for j in range(i + 1, len(self.lines)):
            if _ATX_HEADING.match(self.lines[j]):
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
            if fence and fence[2] <= 3:
                end = self.fence_end(i, *fence)
                flush_other(i)
                if end is None:
                    regions.append(_Region("code", i, self.unclosed_end(i), unclosed=True))
                    i = self.unclosed_end(i)
                else:
                    regions.append(_Region("code", i, end))
                    i = end
                continue
            if fence:
                # A fence indented ≥4 (inside a list item): markdown-it handles it, but its lines
                # must not be mistaken for admonition or math markers here.
                end = self.fence_end(i, *fence)
                if other_start is None:
                    other_start = i
                i = end if end is not None else i + 1
                continue
            if _ADMONITION_OPEN.match(line):
                end, closed = self.admonition_end(i)
                flush_other(i)
                regions.append(_Region("admonition", i, end, unclosed=not closed))
                i = end
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
    # (kind, start, end, heading_level, heading_text, unclosed); prose items are merged afterwards.
    items: list[tuple[BlockType, int, int, int | None, str | None, bool]] = []
    for region in _Scanner(lines).regions():
        if region.kind == "code":
            items.append((BlockType.CODE, region.start, region.end, None, None, region.unclosed))
        elif region.kind == "admonition":
            items.append((BlockType.ADMONITION, region.start, region.end, None, None, region.unclosed))
        elif region.kind == "math":
            items.append((BlockType.PROSE, region.start, region.end, None, None, False))
        else:
            items.extend(_parse_other(lines, region.start, region.end))

    blocks: list[Block] = []
    k = 0
    while k < len(items):
        kind, start, end, level, text, unclosed = items[k]
        if kind is BlockType.PROSE:
            # Merge the run of prose between structural blocks, blank lines and all.
            while k + 1 < len(items) and items[k + 1][0] is BlockType.PROSE:
                k += 1
                end = items[k][2]
            start, end = _trim(lines, start, end)
            if start < end:
                blocks.append(Block(BlockType.PROSE, "\n".join(lines[start:end]), start_line=start))
        elif kind is BlockType.HEADING:
            blocks.append(Block(BlockType.HEADING, text or "", heading_level=level, start_line=start))
        else:
            start, end = _trim(lines, start, end)
            blocks.append(Block(kind, "\n".join(lines[start:end]), start_line=start, unclosed=unclosed))
        k += 1
    return blocks


def _parse_other(
    lines: list[str], start: int, end: int
) -> list[tuple[BlockType, int, int, int | None, str | None, bool]]:
    """Headings and tables of lines [start, end), parsed piece by piece (see the module docstring)."""
    cuts = _heading_cuts(lines, start, end)
    items: list[tuple[BlockType, int, int, int | None, str | None, bool]] = []
    for piece_start, piece_end in zip([start] + cuts, cuts + [end]):
        items.extend(_parse_piece(lines, piece_start, piece_end))
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


def _parse_piece(
    lines: list[str], start: int, end: int
) -> list[tuple[BlockType, int, int, int | None, str | None, bool]]:
    """Headings and tables from markdown-it's top-level tokens; every other line is prose."""
    items: list[tuple[BlockType, int, int, int | None, str | None, bool]] = []
    tokens = _parser().parse("\n".join(lines[start:end]))
    cursor = start  # first line not yet assigned to an item

    def prose_until(upto: int) -> None:
        nonlocal cursor
        if cursor < upto:
            items.append((BlockType.PROSE, cursor, upto, None, None, False))
        cursor = max(cursor, upto)

    for idx, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        t_start, t_end = start + tok.map[0], start + tok.map[1]
        if tok.type == "heading_open":
            prose_until(t_start)
            inline = tokens[idx + 1]
            # A multi-line setext heading's text spans lines; a breadcrumb wants one line.
            text = " ".join(inline.content.split("\n")).strip()
            items.append((BlockType.HEADING, t_start, t_end, int(tok.tag[1]), text, False))
            cursor = t_end
        elif tok.type == "table_open":
            prose_until(t_start)
            items.append((BlockType.TABLE, t_start, t_end, None, None, False))
            cursor = t_end
        elif tok.type == "fence":
            # The pre-scan takes top-level fences, but stay safe if markdown-it disagrees.
            prose_until(t_start)
            items.append((BlockType.CODE, t_start, t_end, None, None, False))
            cursor = t_end
    prose_until(end)
    return items
