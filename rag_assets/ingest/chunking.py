"""Heading-aware chunking of structural blocks into retrieval units sized in tiktoken tokens.

Policy:

- A chunk never spans a heading: each heading starts a section (breadcrumb = the heading path).
  The first chunk of a section starts with the heading's markdown line (``## Title``); later chunks
  of the same section do not repeat it. A heading with no body makes no chunk of its own, unless
  the whole document would otherwise have no chunk (then one chunk holds all the heading lines).
- Blocks are packed greedily toward ``target_tokens`` and never past ``max_tokens``; a chunk still
  under ``min_tokens`` may grow up to ``max_tokens``, and a small trailing piece of a section is
  merged into (or rebalanced with) the piece before it.
- PROSE is cut at paragraph, then line, then sentence, then word boundaries, and as a last resort
  into token slices (always on a character boundary): no text is lost, and ``$$ … $$`` math is kept
  whole unless it alone is too big.
- CODE and TABLE blocks are atomic: never split, and one that cannot fit (with its section heading
  line) is emitted alone with ``oversized=True``.
- ADMONITION blocks are kept whole when they fit, and split like prose when they do not: they are
  mostly prose, and an oversized one would be silently truncated by the embedder. So an admonition
  is never ``oversized``.
- ``fits(index_text)`` is an extra limit from the embedder's own tokenizer: a non-atomic chunk is
  split until its index text fits; an atomic block that does not fit is flagged ``oversized``.
- With ``overlap_tokens > 0`` every chunk after the first of a section starts with the last
  ``overlap_tokens`` tokens (cut on a word boundary) of the previous chunk, budgeted for. The overlap
  is dropped from a chunk holding a single atomic block when keeping it would make that chunk
  oversized. A chunk that holds a single token and still does not fit (only possible when the
  heading/breadcrumb alone is over the limit) is emitted with ``oversized=True`` rather than looping.
"""

from __future__ import annotations

import bisect
import datetime
import logging
import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_assets.ingest.markup import indexable_text, strip_heading_attributes
from rag_assets.models import Block, BlockType, Chunk, ParsedDocument
from rag_assets.ingest.tokens import TokenCounter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkingConfig:
    min_tokens: int = 40
    target_tokens: int = 100  # the defaults of Settings (rag_assets.config)
    max_tokens: int = 140
    overlap_tokens: int = 0

    @classmethod
    def from_settings(cls, settings) -> "ChunkingConfig":
        """From rag_assets.config.Settings (RAG_CHUNK_*_TOKENS)."""
        return cls(settings.chunk_min_tokens, settings.chunk_target_tokens, settings.chunk_max_tokens,
                   settings.chunk_overlap_tokens)

    def __post_init__(self) -> None:
        if not 0 < self.max_tokens:
            raise ValueError("max_tokens must be positive")
        if not 0 <= self.min_tokens <= self.target_tokens <= self.max_tokens:
            raise ValueError("need 0 <= min_tokens <= target_tokens <= max_tokens")
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise ValueError("need 0 <= overlap_tokens < max_tokens")


# The header every chunk's embedded text starts with has a budget: a 1,200-character H1 repeated in
# front of every chunk would leave the body no room in the model's 256 word pieces (it would be cut
# off) and would shred the page into tiny chunks. Each title or heading keeps its first
# HEADER_ENTRY_MAX_CHARS characters, the whole header its first HEADER_MAX_CHARS (~80 tokens, under a
# third of the model's input). Characters, not tokens, so every reader of stored metadata (the keyword
# index) rebuilds exactly the embedded text without a tokenizer, and a 1 MB title costs nothing.
HEADER_ENTRY_MAX_CHARS = 160
HEADER_MAX_CHARS = 320


def clip_heading(text: str, limit: int = HEADER_ENTRY_MAX_CHARS) -> str:
    """A title or heading cut to `limit` characters at a word boundary, with an ellipsis."""
    flat = " ".join(text[: limit * 4].split())  # never splits a huge string in full
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2:] else cut) + "…"


def build_index_text(title: str, breadcrumb: list[str], text: str) -> str:
    """What is embedded and keyword-indexed: ``title > h1 > h2`` header, blank line, chunk text.

    Markup that is not prose (heading attributes, include directives: rag_assets.ingest.markup) is
    left out; the header keeps within its budget (HEADER_ENTRY_MAX_CHARS, HEADER_MAX_CHARS).
    """
    title = clip_heading(strip_heading_attributes(title[: HEADER_ENTRY_MAX_CHARS * 4]))
    text = indexable_text(text)
    parts = [title] if title else []
    for entry in breadcrumb:
        entry = clip_heading(strip_heading_attributes(entry[: HEADER_ENTRY_MAX_CHARS * 4]))
        # The page's H1 usually repeats the title; saying it twice only skews both retrievers.
        if entry and entry.casefold() != title.casefold():
            parts.append(entry)
    header = clip_heading(" > ".join(parts), HEADER_MAX_CHARS)
    return f"{header}\n\n{text}" if header and text else header or text


def chunk_document(
    doc: ParsedDocument,
    blocks: list[Block],
    counter: TokenCounter,
    config: ChunkingConfig,
    fits: Callable[[str], bool] | None = None,
) -> list[Chunk]:
    """Chunk one document's blocks (from ``split_markdown``); chunk_id/content_hash are left empty."""
    sections = _sections(blocks)
    packer = _Packer(doc.title, counter, config, fits)
    drafts: list[_Draft] = []
    for section in sections:
        if section.body:
            drafts.extend(packer.section(section))
    if not drafts and sections and sections[-1].heading_line:
        # Only headings: keep them, so the page is still findable by its outline.
        text = "\n\n".join(s.heading_line for s in sections if s.heading_line)
        last = sections[-1]
        only_headings = _Section("", last.title, last.breadcrumb, [Block(BlockType.HEADING, text)])
        drafts.extend(packer.section(only_headings))

    metadata = _document_metadata(doc)
    longest = max([len(doc.title)] + [len(entry) for d in drafts for entry in d.breadcrumb], default=0)
    if longest > HEADER_ENTRY_MAX_CHARS:
        log.warning("%s: a title or heading of %d characters is cut to %d in every chunk's header",
                    doc.doc_path, longest, HEADER_ENTRY_MAX_CHARS)
    return [
        Chunk(
            doc_path=doc.doc_path,
            chunk_index=i,
            text=d.text,
            section=d.section,
            heading_breadcrumb=list(d.breadcrumb),
            token_count=d.tokens,
            block_types=d.block_types,
            oversized=d.oversized,
            index_text=build_index_text(doc.title, d.breadcrumb, d.text),
            metadata=dict(metadata),
        )
        for i, d in enumerate(drafts)
    ]


def _clip_heading_line(line: str) -> str:
    """`## A very long heading…`: the markdown heading repeated in a chunk's text, within budget."""
    marks, _, rest = line.partition(" ")
    if not marks.strip("#") and rest:
        return f"{marks} {clip_heading(rest)}"
    return clip_heading(line)


# ---------------------------------------------------------------------------------------------
# Sections


@dataclass
class _Section:
    heading_line: str  # "## Title", or "" before the first heading
    title: str  # the heading text, "" before the first heading
    breadcrumb: list[str]
    body: list[Block]


def _sections(blocks: list[Block]) -> list[_Section]:
    sections = [_Section("", "", [], [])]
    stack: list[tuple[int, str]] = []  # (level, text) from the top heading down
    for block in blocks:
        if block.type is BlockType.HEADING:
            level = block.heading_level or 1
            title = strip_heading_attributes(block.text)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            line = f"{'#' * level} {block.text}".rstrip()  # the stored text keeps the source line
            sections.append(_Section(line, title, [t for _, t in stack], []))
        else:
            sections[-1].body.append(block)
    return sections


# ---------------------------------------------------------------------------------------------
# Units: the pieces the packer moves around


@dataclass(frozen=True)
class _Unit:
    source: str  # the whole text of the block this unit comes from
    start: int  # the unit is source[start:end]
    end: int
    tokens: int  # tiktoken count of source[start:end] (an estimate if packed from sub-pieces)
    type: BlockType
    block_id: int  # units of one block re-join verbatim from `source`
    atomic: bool  # CODE/TABLE: never split

    @property
    def text(self) -> str:
        return self.source[self.start : self.end]


@dataclass
class _Draft:
    text: str
    tokens: int
    section: str
    breadcrumb: list[str]
    block_types: list[str]
    oversized: bool


_ATOMIC = (BlockType.CODE, BlockType.TABLE)
_MIN_PIECE_BUDGET = 8  # floor for the per-piece budget when a huge heading eats the maximum
_MARGIN = 2  # tokens kept free for BPE merges across the joins, which sums of counts do not see
_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
# Split levels for prose, coarsest first, with the tokens one join of that kind is estimated to cost.
_LEVELS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"\n[ \t]*\n\s*"), 1),  # paragraphs
    (re.compile(r"\n\s*"), 1),  # lines (list items, table-like prose)
    (re.compile(r"(?<=[.!?;:。！？])\s+"), 0),  # sentences: the space rides on the next word's token
    (re.compile(r"\s+"), 0),  # words
]


class _Packer:
    def __init__(
        self, title: str, counter: TokenCounter, config: ChunkingConfig, fits: Callable[[str], bool] | None
    ):
        self.title = title
        self.counter = counter
        self.config = config
        self.fits = fits
        self._block_ids = 0

    # -- one section ------------------------------------------------------------------------

    def section(self, section: _Section) -> list[_Draft]:
        cfg = self.config
        head = f"{_clip_heading_line(section.heading_line)}\n\n" if section.heading_line else ""
        head_tokens = self.counter.count(head) if head else 0
        overlap_cost = cfg.overlap_tokens + 1 if cfg.overlap_tokens else 0
        piece_budget = max(_MIN_PIECE_BUDGET, cfg.max_tokens - max(head_tokens, overlap_cost) - _MARGIN)

        units: list[_Unit] = []
        for block in section.body:
            units.extend(self._units(block, piece_budget))
        groups = self._pack(units, head_tokens, overlap_cost)
        return self._emit(groups, section, head, piece_budget)

    def _units(self, block: Block, budget: int) -> list[_Unit]:
        self._block_ids += 1
        text = block.text
        if block.type in _ATOMIC:
            return [_Unit(text, 0, len(text), self.counter.count(text), block.type, self._block_ids, True)]
        if block.type is BlockType.ADMONITION:
            tokens = self.counter.count(text)
            if tokens <= budget:
                return [_Unit(text, 0, len(text), tokens, block.type, self._block_ids, False)]
        # Prose (and too-big admonitions) go in as paragraphs, so packing can fill chunks evenly.
        units: list[_Unit] = []
        protected = _protected_spans(text)
        for start, end in _segments(text, 0, len(text), _LEVELS[0][0], protected):
            tokens = self.counter.count(text[start:end])
            if tokens <= budget:
                units.append(_Unit(text, start, end, tokens, block.type, self._block_ids, False))
            else:
                for s, e, t in self._split(text, start, end, tokens, budget, 1, protected):
                    units.append(_Unit(text, s, e, t, block.type, self._block_ids, False))
        return units

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
            return _greedy_merge(spans, aim, join_cost)
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

    # -- packing ------------------------------------------------------------------------------

    def _pack(self, units: list[_Unit], head_tokens: int, overlap_cost: int) -> list[list[_Unit]]:
        cfg = self.config
        groups: list[list[_Unit]] = []
        cur: list[_Unit] = []
        cur_tokens = 0

        def fixed() -> int:  # what the group carries besides its units: heading line or overlap
            return head_tokens if not groups else overlap_cost

        def close(group: list[_Unit], tokens: int, small: bool) -> None:
            # A runt squeezed out by a big next unit joins the previous group if that stays in budget.
            if small and groups and not self._is_oversized(groups[-1], 0):
                prev = groups[-1]
                prev_fixed = head_tokens if len(groups) == 1 else overlap_cost
                if sum(u.tokens + 1 for u in prev) + tokens + prev_fixed <= cfg.max_tokens:
                    prev.extend(group)
                    return
            groups.append(group)

        for unit in units:
            if unit.atomic and unit.tokens + fixed() > cfg.max_tokens and not cur:
                groups.append([unit])  # oversized: alone, never merged
                continue
            if cur:
                total = cur_tokens + 1 + unit.tokens + fixed()
                small = cur_tokens + (head_tokens if not groups else 0) < cfg.min_tokens
                if total > cfg.max_tokens or (total > cfg.target_tokens and not small):
                    close(cur, cur_tokens, small)
                    cur, cur_tokens = [], 0
                    if unit.atomic and unit.tokens + fixed() > cfg.max_tokens:
                        groups.append([unit])
                        continue
            cur_tokens += unit.tokens + (1 if cur else 0)
            cur.append(unit)
        if cur:
            groups.append(cur)  # the tail is handled (merged or rebalanced) just below
        self._rebalance_tail(groups, head_tokens, overlap_cost)
        return groups

    def _rebalance_tail(self, groups: list[list[_Unit]], head_tokens: int, overlap_cost: int) -> None:
        """Avoid a runt last piece: merge it into the previous piece, or move units over to it."""
        cfg = self.config
        if len(groups) < 2:
            return
        prev, last = groups[-2], groups[-1]
        prev_fixed = head_tokens if len(groups) == 2 else overlap_cost

        def size(units: list[_Unit]) -> int:
            return sum(u.tokens for u in units) + max(len(units) - 1, 0)

        if size(last) >= cfg.min_tokens or self._is_oversized(prev + last, prev_fixed):
            return  # not a runt, or an oversized atomic block involved (never merged)
        if size(prev) + 1 + size(last) + prev_fixed <= cfg.max_tokens:
            groups[-2:] = [prev + last]
            return
        while size(last) < cfg.min_tokens and len(prev) > 1:
            moved = prev[-1]
            if size([moved] + last) + overlap_cost > cfg.max_tokens or size(prev[:-1]) < cfg.min_tokens:
                break
            prev.pop()
            last.insert(0, moved)

    def _is_oversized(self, units: list[_Unit], fixed: int) -> bool:
        return any(u.atomic and u.tokens + fixed > self.config.max_tokens for u in units)

    # -- emitting -----------------------------------------------------------------------------

    def _emit(self, groups: list[list[_Unit]], section: _Section, head: str, piece_budget: int) -> list[_Draft]:
        """Turn groups into chunks, checking exact sizes and `fits`; split whatever fails."""
        drafts: list[_Draft] = []
        queue = deque(groups)
        while queue:
            units = queue.popleft()
            heading = head if not drafts else ""
            overlap = self._overlap(drafts[-1].text) if drafts and self.config.overlap_tokens else ""
            draft = self._draft(units, section, heading, overlap)
            if draft is not None:
                drafts.append(draft)
                continue
            if len(units) > 1:
                # Keep the longest prefix that passes; the rest goes back to the front of the queue.
                for cut in range(len(units) - 1, 0, -1):
                    draft = self._draft(units[:cut], section, heading, overlap)
                    if draft is not None:
                        drafts.append(draft)
                        queue.appendleft(units[cut:])
                        break
                else:
                    queue.appendleft(units[1:])
                    queue.appendleft(units[:1])
                continue
            unit = units[0]
            if not unit.atomic and unit.tokens > 1:
                protected = _protected_spans(unit.source)
                # Several small pieces let the prefix search above fill the chunk again.
                pieces = self._split(
                    unit.source, unit.start, unit.end, unit.tokens, max(1, unit.tokens // 4), 1, protected
                )
                if len(pieces) > 1:
                    queue.appendleft([
                        _Unit(unit.source, s, e, t, unit.type, unit.block_id, False) for s, e, t in pieces
                    ])
                    continue
            # Atomic (or unsplittable) and too big: alone, without overlap if that is what it takes.
            draft = self._draft(units, section, heading, "") if overlap else None
            drafts.append(draft or self._forced_draft(units, section, heading))
        return drafts

    def _forced_draft(self, units: list[_Unit], section: _Section, heading: str) -> _Draft:
        draft = self._draft(units, section, heading, "", force=True)
        assert draft is not None  # force=True always returns a draft
        return draft

    def _draft(
        self, units: list[_Unit], section: _Section, heading: str, overlap: str, force: bool = False
    ) -> _Draft | None:
        """The chunk for these units, or None if it breaks max_tokens or `fits` (unless forced)."""
        body = _join(units)
        text = f"{overlap}\n\n{heading}{body}" if overlap else f"{heading}{body}"
        tokens = self.counter.count(text)
        ok = tokens <= self.config.max_tokens and (
            self.fits is None or self.fits(build_index_text(self.title, section.breadcrumb, text))
        )
        if not ok and not force:
            return None
        types = ([BlockType.HEADING.value] if heading else []) + [u.type.value for u in units]
        return _Draft(
            text=text,
            tokens=tokens,
            section=section.title,
            breadcrumb=section.breadcrumb,
            block_types=list(dict.fromkeys(types)),
            oversized=not ok,
        )

    def _overlap(self, previous: str) -> str:
        """The last `overlap_tokens` tokens of the previous chunk, starting on a whole word."""
        ids = self.counter.encode(previous)
        n = self.config.overlap_tokens
        if len(ids) <= n:
            return previous.strip()
        tail = self.counter.encoding.decode_bytes(ids[-n:]).decode("utf-8", errors="ignore")
        before = previous[len(previous) - len(tail) - 1] if len(tail) < len(previous) else " "
        if not tail[:1].isspace() and not before.isspace():
            match = re.search(r"\s", tail)  # the cut fell inside a word: drop that partial word
            tail = tail[match.end() :] if match else ""
        return tail.strip()


def _join(units: list[_Unit]) -> str:
    """Units of one block re-join verbatim from its source; different blocks join with a blank line."""
    parts: list[str] = []
    i = 0
    while i < len(units):
        j = i
        while j + 1 < len(units) and units[j + 1].block_id == units[i].block_id:
            j += 1
        parts.append(units[i].source[units[i].start : units[j].end])
        i = j + 1
    return "\n\n".join(parts)


def _protected_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _MATH.finditer(text)] if "$$" in text else []


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


def _greedy_merge(spans: list[tuple[int, int, int]], aim: int, join_cost: int) -> list[tuple[int, int, int]]:
    """Merge consecutive spans while the estimated size stays within `aim` (a big span stays alone)."""
    out: list[tuple[int, int, int]] = []
    for s, e, t in spans:
        if out and out[-1][2] + join_cost + t <= aim:
            ps, _, pt = out[-1]
            out[-1] = (ps, e, pt + join_cost + t)
        else:
            out.append((s, e, t))
    return out


# ---------------------------------------------------------------------------------------------
# Metadata


def _scalar(value: Any) -> str | int | float | bool | None:
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date subclass
        return value.isoformat()
    return None


def _document_metadata(doc: ParsedDocument) -> dict[str, Any]:
    """Document fields every chunk carries: title/description/tags plus scalar frontmatter keys."""
    meta: dict[str, Any] = {
        "title": strip_heading_attributes(doc.title[: HEADER_ENTRY_MAX_CHARS * 4]),
        "description": doc.description,
        "tags": ", ".join(str(t) for t in doc.tags),
    }
    for key, value in doc.metadata.items():
        key = str(key)
        if key in meta:
            continue  # the parsed fields win over raw frontmatter of the same name
        scalar = _scalar(value)
        if scalar is not None:
            meta[key] = scalar
        elif isinstance(value, (list, tuple)):
            items = [_scalar(v) for v in value]
            if all(v is not None for v in items):
                meta[key] = ", ".join(str(v) for v in items)
    return meta
