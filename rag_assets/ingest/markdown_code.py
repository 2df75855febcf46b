"""Where a markdown body's code is: fenced and indented code blocks from one markdown-it parse of the
whole body (block structure only), top-level or nested in a list item or quote, so a fence opened
inside a list closes where CommonMark closes it. One change to markdown-it's fence rule: a top-level
fence that no later line closes ends before the next ATX heading (``closed`` False) instead of
swallowing the rest of the page. Past markdown-it's nesting limit (FENCE_MAX_NESTING levels) the
parse goes on at the next unindented line after the deep part, up to FENCE_PARSE_RESTARTS times a
page. rag_assets.ingest.markdown splits the body around what this finds.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from markdown_it import MarkdownIt
from markdown_it.rules_block import fence as fence_rule

# A line that could close a top-level fence: ≤3 spaces, then ≥3 backticks or tildes, then spaces only.
_FENCE_CLOSER = re.compile(r"^ {0,3}(?P<run>`{3,}|~{3,})[ \t]*$")
FENCE_MAX_NESTING = 100  # markdown-it's nesting limit for the fence parse (its default, 20, is 10 list levels)
FENCE_PARSE_RESTARTS = 8  # times a page's fence parse goes on after a part nested deeper than that
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


class Fence(NamedTuple):
    end: int  # one past its last line
    closed: bool  # ends with a closing fence line
    top: bool  # not inside a list item or quote


class CodeLines:
    """Fenced and indented code of a body, from markdown-it's parse (see the module docstring)."""

    def __init__(self, lines: list[str]):
        self.fences: dict[int, Fence] = {}  # first line -> the fence there
        self.indented: dict[int, int] = {}  # first line of an indented code block -> one past its last
        n = len(lines)
        # next_heading[i]: the first ATX heading line at or after i (n if none)
        self.next_heading = [n] * (n + 1)
        # closers[c][i]: the longest run of c that could close a top-level fence at a line >= i
        self.closers = {"`": [0] * (n + 1), "~": [0] * (n + 1)}
        for i in range(n - 1, -1, -1):
            line = lines[i]
            self.next_heading[i] = i if ATX_HEADING.match(line) else self.next_heading[i + 1]
            m = _FENCE_CLOSER.match(line) if "``" in line or "~~" in line else None
            for c, longest in self.closers.items():
                longest[i] = max(longest[i + 1], len(m["run"]) if m and m["run"][0] == c else 0)
        start = 0
        for _ in range(FENCE_PARSE_RESTARTS + 1):
            deepest = self._parse(lines, start)
            if deepest is None:
                break
            start = next((k for k in range(deepest + 1, n) if _starts_top_level(lines, k)), n)
            if start >= n:
                break

    def _parse(self, lines: list[str], offset: int) -> int | None:
        """Parse lines[offset:]; None, or the last line reached when a part nested past the limit
        stopped the parse."""
        env = {"code": self, "offset": offset}
        tokens = _fence_parser().parse("\n".join(lines[offset:]), env)
        for tok in tokens:
            if tok.type == "code_block" and tok.map:
                self.indented[offset + tok.map[0]] = offset + tok.map[1]
        if tokens and max(tok.level for tok in tokens) >= FENCE_MAX_NESTING - 1:
            return offset + max(tok.map[0] for tok in tokens if tok.map)
        return None


def _starts_top_level(lines: list[str], k: int) -> bool:
    """Line k can only be read as a block of the page itself: unindented, not a list item or quote."""
    line = lines[k]
    return bool(line) and not line[0].isspace() and line[0] != ">" and not _LIST_MARKER.match(line)


def _fence_rule(state, start: int, end: int, silent: bool) -> bool:
    """markdown-it's fence rule, but a top-level fence no later line closes stops before the next ATX
    heading (looked up, not scanned for: the page's closers are known). Records every fence."""
    code: CodeLines | None = state.env.get("code") if isinstance(state.env, dict) else None
    if silent or code is None:
        return _STOCK_FENCE(state, start, end, silent)
    offset = state.env["offset"]
    pos = state.bMarks[start] + state.tShift[start]
    marker = state.src[pos : pos + 1]
    unclosed_top = False
    if state.level == 0 and marker in ("`", "~") and not state.is_code_block(start):
        run = len(state.src[pos : state.eMarks[start]]) - len(state.src[pos : state.eMarks[start]].lstrip(marker))
        if run >= 3 and code.closers[marker][offset + start + 1] < run:
            unclosed_top = True
            end = min(end, code.next_heading[offset + start + 1] - offset)
    if not _STOCK_FENCE(state, start, end, silent):
        return False
    token = state.tokens[-1]
    last = token.map[1] - 1
    closing = state.src[state.bMarks[last] + state.tShift[last] : state.eMarks[last]].rstrip()
    closed = (not unclosed_top and last > start and not state.is_code_block(last)
              and closing.startswith(token.markup) and set(closing) == {token.markup[0]})
    code.fences[offset + start] = Fence(offset + token.map[1], closed, state.level == 0)
    return True


_STOCK_FENCE = fence_rule


@functools.lru_cache(maxsize=1)
def _fence_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"maxNesting": FENCE_MAX_NESTING}).disable("inline")  # tables hold no fences
    md.block.ruler.at("fence", _fence_rule, {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md
