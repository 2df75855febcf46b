"""Cutting text that is too big for a chunk: prose at paragraph, line, sentence and word boundaries (then
token slices), code blocks and tables at line boundaries into framed pieces, ``$$ … $$`` math kept whole."""

from __future__ import annotations

import bisect
import functools
import math
import re
from dataclasses import replace

from rag_assets.ingest.chunking.units import _MARGIN, _MIN_PIECE_BUDGET, _Unit
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.models import BlockType

_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
# Split levels for prose, coarsest first, with the tokens one join of that kind is estimated to cost.
_LEVELS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"\n[ \t]*\n\s*"), 1),  # paragraphs
    (re.compile(r"\n\s*"), 1),  # lines (list items, table-like prose)
    (re.compile(r"(?<=[.!?;:。！？])\s+"), 0),  # sentences: the space rides on the next word's token
    (re.compile(r"\s+"), 0),  # words
]
_WORD_LEVEL = 3  # index in _LEVELS: where a code or table line too long for a piece is cut
_LINES_OR_SENTENCES = re.compile(r"\n\s*|(?<=[.!?;:。！？])\s+")

# A lead-in introduces what follows ("Install it with:", "… as follows", "For example,"): a reader
# needs both together, so it never ends a chunk whose next chunk holds what it introduces. The
# lookbehind keeps an admonition's closing ":::" from counting as a colon.
_LEAD_IN = re.compile(r"(?:(?<!:)[:：]|\bas follows\.?|\bfor example,?|\blike this\.?|\be\.g\.,?)$", re.IGNORECASE)
# A code block's opening fence, after what a fence nested in a list item or quote has before it on its
# line (indentation, "> ", a list marker): its pieces repeat that line and end as the block ends.
_FENCE = re.compile(r"((?:[ \t]*>)*[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?)(`{3,}|~{3,})")
_LIST_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")


class _Splitter:
    """The cutting that needs token counts; mixed into _Packer, which provides ``counter`` and
    ``split_blocks``."""

    counter: TokenCounter
    split_blocks: set[int]  # ids of CODE/TABLE blocks emitted in more than one piece

    # -- splitting prose ----------------------------------------------------------------------

    def _split(
        self, text: str, start: int, end: int, tokens: int, budget: int, level: int, protected: list[tuple[int, int]]
    ) -> list[tuple[int, int, int]]:
        """Cut text[start:end] (``tokens`` long) into consecutive spans of at most ``budget`` tokens."""
        if tokens <= budget:
            return [(start, end, tokens)]
        # Aim for evenly sized pieces rather than full ones plus a runt.
        pieces_needed = math.ceil(tokens / budget)
        aim = min(budget, math.ceil(tokens / pieces_needed * 1.15))
        for lvl in range(level, len(_LEVELS)):
            pattern, join_cost = _LEVELS[lvl]
            segments = _segments(text, start, end, pattern, protected)
            if len(segments) < 2:
                continue
            spans: list[tuple[int, int, int]] = []
            for s, e in segments:
                t = self.counter.count(text[s:e])
                if t > budget:
                    spans.extend(self._split(text, s, e, t, budget, lvl + 1, protected))
                else:
                    spans.append((s, e, t))
            return _greedy_merge(spans, aim, join_cost, text, budget)
        if protected:
            # Math too big to keep whole: allow cutting inside it before resorting to token slices.
            return self._split(text, start, end, tokens, budget, 1, [])
        return self._token_slices(text, start, end, budget)

    def _token_slices(self, text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
        """Last resort: slices of ``budget`` tokens, cut only between whole characters."""
        raw = text[start:end].encode("utf-8")
        token_bytes = [self.counter.encoding.decode_single_token_bytes(t) for t in self.counter.encode(text[start:end])]
        out: list[tuple[int, int, int]] = []
        byte_pos, char_pos, i = 0, start, 0
        while i < len(token_bytes):
            j = min(i + budget, len(token_bytes))
            cut = byte_pos + sum(len(b) for b in token_bytes[i:j])
            # Back off to a character boundary (a UTF-8 continuation byte is 0b10xxxxxx) …
            while j > i + 1 and cut < len(raw) and raw[cut] & 0xC0 == 0x80:
                j -= 1
                cut -= len(token_bytes[j])
            # … or, if one character spans all those tokens, go forward past it.
            while cut < len(raw) and raw[cut] & 0xC0 == 0x80:
                cut += len(token_bytes[j])
                j += 1
            piece = raw[byte_pos:cut].decode("utf-8")
            out.append((char_pos, char_pos + len(piece), j - i))
            byte_pos, char_pos, i = cut, char_pos + len(piece), j
        return out

    # -- splitting code blocks and tables -------------------------------------------------------

    def _split_atomic(self, unit: _Unit, budget: int, first_budget: int | None = None) -> list[_Unit] | None:
        """A CODE or TABLE block (or a piece of one) cut at line boundaries into framed pieces of at most
        ``budget`` tokens, the first at most ``first_budget``; None if the first cannot be that small."""
        prefix, suffix, start, end = _frame(unit)
        frame_tokens = (self.counter.count(prefix) if prefix else 0) + (self.counter.count(suffix) if suffix else 0)
        if budget - frame_tokens - _MARGIN < _MIN_PIECE_BUDGET:
            # A header row or fence line too big to repeat: plain slices, each still within budget.
            prefix, suffix, frame_tokens, start, end = "", "", 0, unit.start, unit.end
        inner = max(1, budget - frame_tokens - _MARGIN)
        inner_first = None if first_budget is None else first_budget - frame_tokens - _MARGIN
        rows = unit.type is BlockType.TABLE  # a table is cut between its rows, never inside one
        spans = self._line_spans(unit.source, start, end, inner, cut_long_lines=not rows)
        if inner_first is not None and spans and spans[0][2] > inner_first > 0 and not rows:
            # Even the first line is too long to go with the lead-in: cut it, as any over-long line.
            s0, e0, t0 = spans[0]
            spans[:1] = self._split(unit.source, s0, e0, t0, inner_first, _WORD_LEVEL, [])
        pieces = _pack_lines(spans, inner, inner_first)
        if pieces is None:
            return None
        units: list[_Unit] = []
        for k, (s, e, _) in enumerate(pieces):
            # the block's title (``title="app.py"``) is read once, above its first piece
            opening = prefix if k == 0 or unit.type is not BlockType.CODE else _untitled(prefix)
            piece = _Unit(unit.source, s, e, 0, unit.type, unit.block_id, True, opening, suffix)
            piece = replace(piece, tokens=self.counter.count(piece.text))
            limit = first_budget if k == 0 and first_budget is not None else budget
            overshoot = piece.tokens - limit
            if overshoot > 0 and len(pieces) > 1 and not (rows and "\n" not in unit.source[s:e]):
                # The line-by-line estimate missed a BPE merge: cut this piece again, a little smaller.
                again = self._split_atomic(piece, budget - overshoot, limit - overshoot if k == 0 else None)
                if again is not None:
                    units.extend(again)
                    continue
            units.append(piece)
        if len(units) > 1:
            self.split_blocks.add(unit.block_id)
        return units

    def _line_spans(self, text: str, start: int, end: int, budget: int,
                    cut_long_lines: bool = True) -> list[tuple[int, int, int]]:
        """The non-blank lines of text[start:end] with their token counts, indentation kept; a line
        over ``budget`` is cut like prose (words, then token slices) when `cut_long_lines` (a table row
        never is: it stays whole, a piece of its own over the budget if it must)."""
        spans: list[tuple[int, int, int]] = []
        pos = start
        while pos < end:
            stop = text.find("\n", pos, end)
            stop = end if stop < 0 else stop
            if text[pos:stop].strip():
                tokens = self.counter.count(text[pos:stop])
                if tokens > budget and cut_long_lines:
                    pieces = self._split(text, pos, stop, tokens, budget, _WORD_LEVEL, [])
                    indent = len(text[pos:stop]) - len(text[pos:stop].lstrip())
                    if indent and pieces and pieces[0][0] == pos + indent:
                        # the line's first piece keeps its indentation, as the block's other lines do
                        s0, e0, _ = pieces[0]
                        pieces[0] = (pos, e0, self.counter.count(text[pos:e0]))
                    spans.extend(pieces)
                else:
                    spans.append((pos, stop, tokens))
            pos = stop + 1
        return spans


def _frame(unit: _Unit) -> tuple[str, str, int, int]:
    """(prefix, suffix, start, end): the pieces of this code block or table are source[start:end] cut at
    lines, each between the same prefix and suffix."""
    if unit.framed or (unit.start, unit.end) != (0, len(unit.source)):
        return unit.prefix, unit.suffix, unit.start, unit.end  # already a piece: the same frame
    text = unit.source
    first_end = text.find("\n")
    if first_end < 0:
        return "", "", 0, len(text)
    if unit.type is BlockType.TABLE:
        second_end = text.find("\n", first_end + 1)  # the header row, then the separator line
        return ("", "", 0, len(text)) if second_end < 0 else (text[: second_end + 1], "", second_end + 1, len(text))
    fence = _FENCE.match(text)
    if fence is None:
        return "", "", 0, len(text)
    last_start = text.rfind("\n") + 1
    closing = re.compile(rf"(?:[ \t]*>)*[ \t]*{re.escape(fence[2][0])}{{{len(fence[2])},}}[ \t]*")
    if closing.fullmatch(text, last_start):
        return text[: first_end + 1], "\n" + text[last_start:], first_end + 1, max(first_end + 1, last_start - 1)
    # An unclosed fence: every piece gets a closing fence anyway, so each is valid on its own (indented
    # like the opening one, without its list marker).
    indent = _LIST_MARKER.sub(lambda m: " " * len(m.group()), fence[1])
    return text[: first_end + 1], f"\n{indent}{fence[2]}", first_end + 1, len(text)


def _untitled(opening: str) -> str:
    """A code block's opening fence line without what follows its language (a title, a file name,
    highlighted lines): ```` ```python title="app.py" {3} ```` -> ```` ```python ````."""
    fence = _FENCE.match(opening)
    if fence is None:
        return opening
    rest = opening[fence.end():]
    language = rest.split(None, 1)[0] if rest.strip() and not rest.lstrip().startswith(("{", "[")) else ""
    if "=" in language or language.startswith(("{", "[")):
        language = ""
    return f"{fence.group(0)}{language}\n" if opening.endswith("\n") else f"{fence.group(0)}{language}"


def _pack_lines(
    spans: list[tuple[int, int, int]], budget: int, first_budget: int | None
) -> list[tuple[int, int, int]] | None:
    """Consecutive lines packed into evenly sized pieces of at most ``budget`` tokens; with ``first_budget``
    the first piece is as full as that allows (a lead-in shares its chunk). None if no line fits it."""
    first: list[tuple[int, int, int]] = []
    if first_budget is not None and spans:
        start, end, tokens = spans[0]
        if tokens > first_budget:
            return None
        k = 1
        while k < len(spans) and tokens + 1 + spans[k][2] <= first_budget:
            end, tokens = spans[k][1], tokens + 1 + spans[k][2]
            k += 1
        first, spans = [(start, end, tokens)], spans[k:]
    if not spans:
        return first
    total = sum(t for _, _, t in spans) + len(spans) - 1
    aim = min(budget, math.ceil(total / math.ceil(total / budget) * 1.15))
    # Then merge neighbours that still fit one chunk together: two pieces of a block never share one.
    return first + _greedy_merge(_greedy_merge(spans, aim, 1), budget, 1)


@functools.lru_cache(maxsize=16)
def _protected_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The ``$$ … $$`` spans of a block's text: looked for once per block (the pieces of a big block
    ask for the spans of its whole text, which a look each time made quadratic)."""
    return tuple(m.span() for m in _MATH.finditer(text)) if "$$" in text else ()


def _segments(
    text: str, start: int, end: int, pattern: re.Pattern[str], protected: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Non-blank spans of text[start:end] between separator matches (not inside protected spans)."""
    spans: list[tuple[int, int]] = []
    pos = start
    for m in pattern.finditer(text, start, end):
        if protected:
            k = bisect.bisect_right(protected, (m.start(), len(text) + 1)) - 1
            if k >= 0 and protected[k][0] < m.start() < protected[k][1]:
                continue  # never cut inside $$ … $$
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    # Leading/trailing whitespace belongs to no piece; a span of only whitespace is dropped.
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def _greedy_merge(
    spans: list[tuple[int, int, int]], aim: int, join_cost: int, text: str | None = None, budget: int = 0
) -> list[tuple[int, int, int]]:
    """Merge consecutive spans while the estimated size stays within `aim` (a big span stays alone).

    With `text` (prose), a cut right after a lead-in (a line or sentence ending in ``:``) is avoided:
    the next span joins it while both fit `budget`, else the lead-in(s) open the next piece."""

    def lead_in(span: tuple[int, int, int]) -> bool:
        return text is not None and _LEAD_IN.search(text, max(span[0], span[1] - 16), span[1]) is not None

    out: list[tuple[int, int, int]] = []
    members: list[tuple[int, int, int]] = []  # the spans merged into out[-1]
    leads = 0  # how many spans at the end of `members` are lead-ins (each span is looked at once)
    for span in spans:
        t = span[2]
        is_lead = lead_in(span)
        if out:
            ps, pe, pt = out[-1]
            if pt + join_cost + t <= aim or (leads and pt + join_cost + t <= budget):
                out[-1] = (ps, span[1], pt + join_cost + t)
                members.append(span)
                leads = leads + 1 if is_lead else 0
                continue
            moved = members[max(1, len(members) - leads):]  # the lead-ins that end it, never all of it
            moved_tokens = sum(m[2] + join_cost for m in moved)
            if moved and moved_tokens + t <= budget:
                out[-1] = (ps, _prev_end(text, ps, moved[0][0]), pt - moved_tokens)
                out.append((moved[0][0], span[1], moved_tokens + t))
                members = moved + [span]
                leads = len(members) if is_lead else 0
                continue
        out.append(span)
        members = [span]
        leads = 1 if is_lead else 0
    return out


def _prev_end(text: str | None, start: int, pos: int) -> int:
    """The end of the text before `pos` (not before `start`), without the whitespace that separates them."""
    end = pos
    while text is not None and end > start and text[end - 1].isspace():
        end -= 1
    return end
