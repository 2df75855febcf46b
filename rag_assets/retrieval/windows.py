"""Context windows: a matched chunk and its neighbours in its section, up to a token budget.

Chunks are small (40 / 100 / 140 tokens) because small chunks match well; an answer often needs
the text around them. A result's ``context`` is the matched chunk grown, one neighbour at a time,
with the chunks around it in the same section, in document order, while the total stays within
``RAG_CONTEXT_TOKENS`` (``Settings.context_tokens``): a section that fits the budget comes back
whole. It never crosses a section boundary; a document without headings is one section, so there
only the budget limits it.

- *Sections.* The chunks of a document in ``chunk_index`` order form runs: a run ends where the
  heading path changes or where a chunk opens a section (its text starts with a heading line; only
  the first chunk of a section carries it), so two sections of a page with the same heading path
  (two ``## Example`` under one ``# Page``) stay apart. Gaps in ``chunk_index`` (a repeated text
  stored once, an older index) do not end a run.
- *Growth* (``grow``): the following chunk first, then the preceding one, alternating; a side that
  reaches the section's edge or whose next chunk would pass the budget stops and the other side goes
  on alone. Chosen by measurement on covid-qa-dev (benchmarks/context_windows.md): the answer to a
  question more often follows the chunk that matched it than precedes it.
- *Passages* (``passages``): when the ranking also found another chunk of the section that the window
  does not reach (a chunk diversity collapsed into the result), the context is two passages: FIRST_SHARE
  of the budget around the matched chunk, the rest around that chunk, GAP between them, in document
  order (``RAG_CONTEXT_PASSAGES``, 2; 1 = one window). On covid-qa-dev the answer is far from the
  matched chunk for a fifth of the questions, and then mostly in the paper's second- or third-ranked
  chunk: hybrid answer hit@5 0.668 with one window, 0.724 with two, at the same mean cost.
- *Cost.* A window's tokens are its chunks' stored ``token_count``s plus one a join (the blank line;
  tiktoken often merges it into the token before, so the true count is at most this).
- *Text* (``join_texts``): the chunks joined with a blank line, as they were cut (at paragraph
  boundaries, mostly). Only the first chunk of a section holds its heading line, so it is never
  repeated; with chunk overlap (``RAG_CHUNK_OVERLAP_TOKENS``) the repeated lead of each chunk is
  dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

JOIN_TOKENS = 1  # a blank line between two chunks: at most one token
GAP = "[…]"  # between two passages of one section that are not adjacent
GAP_TOKENS = 3  # the marker and its blank lines (tiktoken: 2 more than a plain join)
FIRST_SHARE = 0.6  # of the budget, for the matched chunk's passage when the context has several

_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def opens_section(text: str | None) -> bool:
    """True when a chunk's text starts with a markdown heading line (the first chunk of a section)."""
    return bool(_HEADING_LINE.match(text or ""))


def stored_tokens(value, text: str | None) -> int:
    """A chunk's stored ``token_count``, or an estimate (4 characters a token) when it has none."""
    try:
        count = int(value or 0)
    except (TypeError, ValueError):
        count = 0
    return count if count > 0 else max(1, len(text or "") // 4)


def window_tokens(tokens: Sequence[int]) -> int:
    """The cost of these chunks joined: their tokens plus JOIN_TOKENS a join."""
    return int(sum(tokens)) + JOIN_TOKENS * max(len(tokens) - 1, 0)


def grow(tokens: Sequence[int], at: int, budget: int, *, first: str = "after") -> tuple[int, int]:
    """``[start, end)`` of the window around ``tokens[at]`` (the chunks of one section, in document
    order, by token count) within ``budget`` tokens (see the module docstring). The matched chunk is
    always in it, even when it alone is over the budget. ``first``: ``after`` (default), ``before``
    (alternating, that side first), ``forward`` / ``backward`` (all of one side that fits, then the
    other): the variants benchmarks/context_windows.py compares."""
    n = len(tokens)
    if not 0 <= at < n:
        raise IndexError(f"chunk {at} of a section of {n}")
    start, end = at, at + 1
    used = int(tokens[at])
    if budget <= 0:
        return start, end
    sides = {"after": ("a", "b"), "before": ("b", "a"), "forward": ("a",), "backward": ("b",)}.get(first)
    if sides is None:
        raise ValueError(f"first must be after, before, forward or backward, got {first!r}")
    alternate = len(sides) == 2
    open_after, open_before = True, True
    turn = sides[0]
    while open_after or open_before:
        side = turn if (open_after if turn == "a" else open_before) else ("b" if turn == "a" else "a")
        if side == "a":
            cost = int(tokens[end]) + JOIN_TOKENS if end < n else None
            if cost is None or used + cost > budget:
                open_after = False
            else:
                used, end = used + cost, end + 1
        else:
            cost = int(tokens[start - 1]) + JOIN_TOKENS if start > 0 else None
            if cost is None or used + cost > budget:
                open_before = False
            else:
                used, start = used + cost, start - 1
        if alternate:
            turn = "b" if side == "a" else "a"
        # forward / backward: stay on the side until it closes, then the other
    return start, end


def passages(tokens: Sequence[int], anchors: Sequence[int], budget: int, *, share: float | None = None,
             first: str = "after") -> list[tuple[int, int]]:
    """The ``[start, end)`` spans (document order, apart) of a result's context in its section.

    ``anchors``: the matched chunk, then other chunks of the section the ranking found (best first).
    One window around the matched chunk with the whole budget when it reaches every anchor (or
    there is no other anchor); otherwise the matched chunk's window gets ``share`` of the budget and
    each further anchor not inside a window yet gets an equal part of what is left (less GAP_TOKENS
    for the marker between passages), skipped when its chunk alone does not fit (when none fits,
    the one window again takes the whole budget). Windows that meet are merged. The total never
    passes the budget unless the matched chunk alone does."""
    share = FIRST_SHARE if share is None else share
    at = anchors[0]
    whole = grow(tokens, at, budget, first=first)
    others = [a for a in dict.fromkeys(anchors[1:]) if a != at and not whole[0] <= a < whole[1]]
    if budget <= 0 or not others:
        return [whole]
    spans = [grow(tokens, at, int(budget * share), first=first)]
    left = budget - _span_tokens(tokens, *spans[0])
    for i, a in enumerate(others):
        if any(lo <= a < hi for lo, hi in spans):
            continue
        part = left // (len(others) - i) - GAP_TOKENS
        if int(tokens[a]) > part:
            continue
        lo, hi = grow(tokens, a, part, first=first)
        spans.append((lo, hi))
        left -= _span_tokens(tokens, lo, hi) + GAP_TOKENS
    if len(spans) == 1:  # no other hit fits: the one window takes the whole budget
        return [whole]
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:  # overlapping or adjacent: one window
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def passages_tokens(tokens: Sequence[int], spans: Sequence[tuple[int, int]]) -> int:
    """The cost of these spans joined with GAP between them."""
    return sum(_span_tokens(tokens, lo, hi) for lo, hi in spans) + GAP_TOKENS * max(len(spans) - 1, 0)


def _span_tokens(tokens: Sequence[int], lo: int, hi: int) -> int:
    return window_tokens([int(tokens[i]) for i in range(lo, hi)])


def join_texts(texts: Sequence[str], *, overlap: bool = False) -> str:
    """The chunks of a window as one text (a blank line between them); with ``overlap``, a chunk's
    leading copy of the previous chunk's tail is dropped."""
    parts: list[str] = []
    for text in texts:
        text = (text or "").strip("\n")
        if overlap and parts:
            text = _without_overlap(parts[-1], text)
        if text.strip():
            parts.append(text)
    return "\n\n".join(parts)


def join_passages(passages_texts: Sequence[Sequence[str]], *, overlap: bool = False) -> str:
    """Passages (each a run of adjacent chunks' texts) as one text, GAP on a line between them."""
    return f"\n\n{GAP}\n\n".join(t for t in (join_texts(p, overlap=overlap) for p in passages_texts) if t)


def _without_overlap(previous: str, text: str) -> str:
    """``text`` without a lead that repeats the end of ``previous`` (the chunker writes an overlap as
    ``tail + blank line + body``)."""
    tail = previous.rstrip()
    best = None
    for match in re.finditer(r"\n\n", text[: len(tail) + 2]):
        lead = text[: match.start()].strip()
        if lead and tail.endswith(lead):
            best = match.end()
    return text[best:].lstrip("\n") if best is not None else text


@dataclass(frozen=True)
class SectionRuns:
    """The chunks of a collection grouped into sections, for neighbour look-ups by row.

    Built from per-row arrays (any row order): ``order`` lists the rows document by document in
    ``chunk_index`` order; the rows of a section are ``order[bounds[run]:bounds[run + 1]]``."""

    order: np.ndarray  # rows, grouped by section, each section in document order
    run_of: np.ndarray  # row -> its section's number
    position: np.ndarray  # row -> its place in ``order``
    bounds: np.ndarray  # section number -> where it starts in ``order`` (and one past the last)

    @classmethod
    def build(cls, docs: Sequence[str], sections: Sequence[str], chunk_index: Sequence[int],
              opens: Sequence[bool]) -> "SectionRuns":
        n = len(docs)
        if not n:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, np.zeros(1, dtype=np.int64))
        _, doc_ids = np.unique(np.asarray(docs, dtype=object).astype(str), return_inverse=True)
        _, section_ids = np.unique(np.asarray(sections, dtype=object).astype(str), return_inverse=True)
        index = np.asarray(chunk_index, dtype=np.int64)
        order = np.lexsort((np.arange(n), index, doc_ids))  # by document, then chunk_index (then row)
        doc_o, sec_o = doc_ids[order], section_ids[order]
        opens_o = np.asarray(opens, dtype=bool)[order]
        new = np.ones(n, dtype=bool)
        new[1:] = (doc_o[1:] != doc_o[:-1]) | (sec_o[1:] != sec_o[:-1]) | opens_o[1:]
        run_o = np.cumsum(new) - 1
        run_of = np.empty(n, dtype=np.int64)
        run_of[order] = run_o
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        bounds = np.append(np.flatnonzero(new), n).astype(np.int64)
        return cls(order.astype(np.int64), run_of, position, bounds)

    def section_of(self, row: int) -> tuple[np.ndarray, int]:
        """(the rows of ``row``'s section in document order, ``row``'s place among them)."""
        run = int(self.run_of[row])
        lo, hi = int(self.bounds[run]), int(self.bounds[run + 1])
        return self.order[lo:hi], int(self.position[row]) - lo
