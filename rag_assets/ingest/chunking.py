"""Heading-aware chunking of structural blocks into retrieval units sized in tiktoken tokens.

Policy:

- A chunk never spans a heading: each heading starts a section (breadcrumb = the heading path).
  The first chunk of a section starts with the heading's markdown line (``## Title``); later chunks
  of the same section do not repeat it. A heading with no body makes no chunk of its own, unless
  the whole document would otherwise have no chunk (then one chunk holds all the heading lines).
  Text before the first heading (the page intro) is a section named after the page title
  (breadcrumb ``[title]``; ``build_index_text`` says the title once), or ``""`` without a title.
- Blocks are packed greedily toward ``target_tokens`` and never past ``max_tokens``; a chunk still
  under ``min_tokens`` may grow up to ``max_tokens``. A chunk that still ends up under
  ``min_tokens`` is merged into its previous neighbour in the section, else its next one, when the
  merge stays within ``max_tokens``; a small last piece that cannot merge is rebalanced with the
  piece before it. A section whose whole body is small stays one small chunk.
- ``target_tokens`` and ``min_tokens`` are measured on what is indexed (``build_index_text``): an
  include directive line (``{* ../../docs_src/x.py hl[3] *}``) and a heading's attribute block
  (``{ #anchor }``) are kept in the stored text but never embedded, so they take no room toward
  the target and do not make a chunk big enough; ``max_tokens`` bounds the stored text.
- A lead-in stays with what it introduces: a paragraph that ends in ``:`` (or "as follows", "for
  example", "like this", "e.g."), or only opens an HTML element, shares its chunk with (the start
  of) the next paragraph, list, code block, table or admonition of its section. When both do not
  fit one chunk: a code block or table that fits alone takes only the lead-in's last sentence(s)
  along; otherwise what follows a short lead-in (at most ``LEAD_IN_MAX_TOKENS``) is split so its
  first piece fits with it. Of a longer paragraph that ends in a lead-in, only its last line(s) or
  sentence(s), up to that size, introduce what follows: they go along with it and the rest of the
  paragraph stays behind. Only a lead-in with no such ending and nothing that fits is left at a
  chunk's end.
- PROSE is cut at paragraph, then line, then sentence, then word boundaries, and as a last resort
  into token slices (always on a character boundary): no text is lost, ``$$ … $$`` math is kept
  whole unless it alone is too big, and a cut right after a line or sentence ending in ``:`` is
  avoided when the next piece fits.
- CODE and TABLE blocks are kept whole when they fit a chunk. One that does not (over
  ``max_tokens`` or failing ``fits``) is split at line boundaries into pieces that fit: each code
  piece is wrapped in the block's own fence (opening line with its info string, and a closing
  fence), each table piece repeats the header row and separator line, so every piece is valid
  markdown; a single line too long for a piece is cut like prose (words, then token slices).
  ``ChunkingStats.blocks_split`` counts these blocks.
- ADMONITION blocks are kept whole when they fit, and split like prose when they do not: they are
  mostly prose, and an oversized one would be silently truncated by the embedder. So an admonition
  is never ``oversized``.
- ``fits(index_text)`` is an extra limit from the embedder's own tokenizer: a chunk is split until
  its index text fits.
- With ``overlap_tokens > 0`` every chunk after the first of a section starts with the last
  ``overlap_tokens`` tokens (cut on a word boundary) of the previous chunk, budgeted for. The overlap
  is dropped from a chunk holding a single code or table piece when keeping it would make that chunk
  too big. A chunk that holds a single token and still does not fit (only possible when the
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
from dataclasses import dataclass, replace
from typing import Any

from rag_assets.ingest.markup import (
    clean_heading_lines, indexable_text, may_hold_include_directive, push_heading, strip_heading_attributes)
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


@dataclass
class ChunkingStats:
    """What chunking had to do to one or more documents (filled in by ``chunk_document``)."""

    blocks_split: int = 0  # CODE/TABLE blocks too big for one chunk, split at line boundaries


def chunk_document(
    doc: ParsedDocument,
    blocks: list[Block],
    counter: TokenCounter,
    config: ChunkingConfig,
    fits: Callable[[str], bool] | None = None,
    stats: ChunkingStats | None = None,
) -> list[Chunk]:
    """Chunk one document's blocks (from ``split_markdown``); chunk_id/content_hash are left empty.

    ``stats``, if given, is added to (so one object can total a batch of documents)."""
    sections = _sections(blocks, strip_heading_attributes(doc.title[: HEADER_ENTRY_MAX_CHARS * 4]).strip())
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
    if stats is not None:
        stats.blocks_split += len(packer.split_blocks)

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
    title: str  # the heading text; before the first heading, the page title (or "")
    breadcrumb: list[str]
    body: list[Block]


def _sections(blocks: list[Block], page_title: str) -> list[_Section]:
    # The intro before the first heading is about the page as a whole: it is filed under the title,
    # so it is not a chunk with no section (build_index_text does not repeat the title in the header).
    sections = [_Section("", page_title, [page_title] if page_title else [], [])]
    stack: list[tuple[int, str]] = []  # (level, text) from the top heading down
    for block in blocks:
        if block.type is BlockType.HEADING:
            level = block.heading_level or 1
            title = push_heading(stack, level, block.text)
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
    start: int  # the unit is source[start:end] (between prefix and suffix)
    end: int
    tokens: int  # tiktoken count of the unit's text (an estimate if packed from sub-pieces)
    type: BlockType
    block_id: int  # units of one block re-join verbatim from `source`
    atomic: bool  # CODE/TABLE: kept whole when it fits, else cut into framed pieces
    # A piece of a split code block or table is framed to be valid markdown on its own: the fence's
    # opening line / the table's header and separator line before it, the closing fence after it.
    prefix: str = ""
    suffix: str = ""
    glue: bool = False  # a lead-in: the next unit must share its chunk

    @property
    def text(self) -> str:
        return f"{self.prefix}{self.source[self.start : self.end]}{self.suffix}"

    @property
    def framed(self) -> bool:
        return bool(self.prefix or self.suffix)


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
_WORD_LEVEL = 3  # index in _LEVELS: where a code or table line too long for a piece is cut
_LINES_OR_SENTENCES = re.compile(r"\n\s*|(?<=[.!?;:。！？])\s+")

# A lead-in introduces what follows ("Install it with:", "… as follows", "For example,"): a reader
# needs both together, so it never ends a chunk whose next chunk holds what it introduces. The
# lookbehind keeps an admonition's closing ":::" from counting as a colon.
_LEAD_IN = re.compile(r"(?:(?<!:)[:：]|\bas follows\.?|\bfor example,?|\blike this\.?|\be\.g\.,?)$", re.IGNORECASE)
# A paragraph that only opens an HTML element (fastapi's `<div class="termy">` around a console
# example) belongs with what the element wraps, just like a lead-in.
_OPENING_TAG = re.compile(r"<[A-Za-z][\w.:-]*(?:\s[^<>]*)?(?<!/)>")
# Up to this size a lead-in has what it introduces split, if need be, to share its chunk; a longer
# paragraph ending in a colon only stays with what follows when both fit. Lead-ins measured on
# fastapi's docs: median 15 tokens, 99th percentile 52. A longer one is more a section of its own,
# and would leave what it introduces too little of the chunk (~130 tokens with the defaults).
LEAD_IN_MAX_TOKENS = 60
_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,})")


class _Packer:
    def __init__(
        self, title: str, counter: TokenCounter, config: ChunkingConfig, fits: Callable[[str], bool] | None
    ):
        self.title = title
        self.counter = counter
        self.config = config
        self.fits = fits
        self._block_ids = 0
        self.split_blocks: set[int] = set()  # ids of CODE/TABLE blocks emitted in more than one piece
        self._indexed: dict[tuple[int, int, int], int] = {}  # tokens of a prose unit's indexed text

    # -- one section ------------------------------------------------------------------------

    def section(self, section: _Section) -> list[_Draft]:
        cfg = self.config
        head = f"{_clip_heading_line(section.heading_line)}\n\n" if section.heading_line else ""
        head_tokens = self.counter.count(head) if head else 0
        overlap_cost = cfg.overlap_tokens + 1 if cfg.overlap_tokens else 0
        # Every piece fits any chunk of the section: the first carries the heading line, later ones the overlap.
        piece_budget = max(_MIN_PIECE_BUDGET, cfg.max_tokens - max(head_tokens, overlap_cost) - _MARGIN)
        # A code block or table (with its lead-in) is only split when it cannot fit even a later chunk,
        # which has no heading line; one that opens the section and does not fit under the heading
        # line is split by _pack.
        whole_budget = max(piece_budget, cfg.max_tokens - overlap_cost - _MARGIN)

        units: list[_Unit] = []
        for block in section.body:
            units.extend(self._units(block, piece_budget, whole_budget))
        groups = self._pack(self._runs(units, piece_budget, whole_budget), head, overlap_cost, piece_budget)
        return self._emit(groups, section, head, piece_budget)

    def _units(self, block: Block, budget: int, whole_budget: int) -> list[_Unit]:
        self._block_ids += 1
        text = block.text
        if block.type in _ATOMIC:
            unit = _Unit(text, 0, len(text), self.counter.count(text), block.type, self._block_ids, True)
            return [unit] if unit.tokens <= whole_budget else self._split_atomic(unit, budget) or [unit]
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

    # -- lead-ins -----------------------------------------------------------------------------

    def _runs(self, units: list[_Unit], budget: int, whole_budget: int) -> list[list[_Unit]]:
        """The units in runs that must share a chunk: a lead-in and (the first piece of) what it introduces.

        A run fits ``budget``, or ``whole_budget`` if it ends in a code block or table. When what follows
        a lead-in does not fit with it: a code block or table takes only the lead-in's last sentence
        along if that fits; else a short lead-in (``_lead_in_max``) has what follows split so its first
        piece fits; else a longer lead-in paragraph is parted, and its last lines or sentences (at most
        ``_lead_in_max``) are the lead-in, as a short one; else the lead-in is left behind."""
        runs: list[list[_Unit]] = []
        run: list[_Unit] = []
        pending = deque(units)
        while pending:
            unit = pending.popleft()
            limit = whole_budget if unit.atomic else budget
            if run and unit.tokens > limit - _size(run) - 1:
                # A code block or table that fits a chunk alone is better kept whole: only the lead-in's
                # last sentence(s) come along, the rest of its paragraph stays behind.
                parted = self._part_lead_in(run[-1], limit - unit.tokens - 1) if unit.atomic else None
                pieces = None
                if parted is None and _size(run) <= self._lead_in_max(budget):
                    pieces = self._resplit(unit, budget - _size(run) - 1, budget)
                elif parted is None:
                    # A long paragraph that ends in a lead-in ("… deposits.\nIt is salty because:"): only
                    # its last line(s) or sentence(s) introduce what follows, and go along with it.
                    parted = self._part_lead_in(run[-1], self._lead_in_max(budget))
                    if parted is not None and unit.tokens > limit - parted[1].tokens - 1:
                        pieces = self._resplit(unit, budget - parted[1].tokens - 1, budget)
                        if pieces is None:
                            parted = None
                if parted is not None:
                    runs.append(run[:-1] + [parted[0]])
                    run = [parted[1]]
                if pieces is not None:
                    unit = pieces[0]
                    pending.extendleft(reversed(pieces[1:]))
                elif parted is None:  # they cannot share a chunk: the lead-in ends its run after all
                    run[-1] = replace(run[-1], glue=False)
                    runs.append(run)
                    run = []
            if pending and self._is_lead_in(unit):
                run.append(replace(unit, glue=True))
                continue
            run.append(unit)
            runs.append(run)
            run = []
        if run:
            runs.append(run)
        return runs

    @staticmethod
    def _lead_in_max(budget: int) -> int:
        # At most half the budget, so what a lead-in introduces keeps at least half a chunk.
        return min(LEAD_IN_MAX_TOKENS, budget // 2)

    @staticmethod
    def _is_lead_in(unit: _Unit) -> bool:
        if unit.atomic:
            return False
        text = unit.text.rstrip()
        return bool(_LEAD_IN.search(text, max(0, len(text) - 16)) or _OPENING_TAG.fullmatch(text))

    def _part_lead_in(self, unit: _Unit, room: int) -> tuple[_Unit, _Unit] | None:
        """A lead-in paragraph cut at a line or sentence boundary into (the rest, its ending of at most
        ``room`` tokens, still glued); None if it has no such ending."""
        if room < 1:
            return None
        spans = _segments(unit.source, unit.start, unit.end, _LINES_OR_SENTENCES, _protected_spans(unit.source))
        k = len(spans)
        while k > 1 and self.counter.count(unit.source[spans[k - 1][0] : unit.end]) <= room:
            k -= 1
        if k == len(spans):
            return None
        rest = replace(unit, end=spans[k - 1][1], tokens=self.counter.count(unit.source[unit.start : spans[k - 1][1]]),
                       glue=False)
        ending = replace(unit, start=spans[k][0], tokens=self.counter.count(unit.source[spans[k][0] : unit.end]))
        return rest, ending

    def _resplit(self, unit: _Unit, first_budget: int, budget: int) -> list[_Unit] | None:
        """``unit`` cut so its first piece has at most ``first_budget`` tokens (None if it cannot be)."""
        if first_budget < _MIN_PIECE_BUDGET:
            return None
        if unit.atomic:
            pieces = self._split_atomic(unit, budget, first_budget)
        else:
            pieces = self._pieces(unit, self._split(unit.source, unit.start, unit.end, unit.tokens, first_budget, 1,
                                                    _protected_spans(unit.source)))
        if not pieces or len(pieces) < 2 or pieces[0].tokens > first_budget:
            return None
        return pieces

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
        spans = self._line_spans(unit.source, start, end, inner)
        if inner_first is not None and spans and spans[0][2] > inner_first > 0:
            # Even the first line is too long to go with the lead-in: cut it, as any over-long line.
            s0, e0, t0 = spans[0]
            spans[:1] = self._split(unit.source, s0, e0, t0, inner_first, _WORD_LEVEL, [])
        pieces = _pack_lines(spans, inner, inner_first)
        if pieces is None:
            return None
        units: list[_Unit] = []
        for k, (s, e, _) in enumerate(pieces):
            piece = _Unit(unit.source, s, e, 0, unit.type, unit.block_id, True, prefix, suffix)
            piece = replace(piece, tokens=self.counter.count(piece.text))
            limit = first_budget if k == 0 and first_budget is not None else budget
            overshoot = piece.tokens - limit
            if overshoot > 0 and len(pieces) > 1:
                # The line-by-line estimate missed a BPE merge: cut this piece again, a little smaller.
                again = self._split_atomic(piece, budget - overshoot, limit - overshoot if k == 0 else None)
                if again is not None:
                    units.extend(again)
                    continue
            units.append(piece)
        if len(units) > 1:
            self.split_blocks.add(unit.block_id)
        return units

    def _line_spans(self, text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
        """The non-blank lines of text[start:end] with their token counts, indentation kept; a line
        over ``budget`` is cut like prose (words, then token slices)."""
        spans: list[tuple[int, int, int]] = []
        pos = start
        while pos < end:
            stop = text.find("\n", pos, end)
            stop = end if stop < 0 else stop
            if text[pos:stop].strip():
                tokens = self.counter.count(text[pos:stop])
                if tokens > budget:
                    spans.extend(self._split(text, pos, stop, tokens, budget, _WORD_LEVEL, []))
                else:
                    spans.append((pos, stop, tokens))
            pos = stop + 1
        return spans

    # -- packing ------------------------------------------------------------------------------

    def _pack(self, runs: list[list[_Unit]], head: str, overlap_cost: int, piece_budget: int) -> list[list[_Unit]]:
        cfg = self.config
        head_tokens = self.counter.count(head) if head else 0
        groups: list[list[_Unit]] = []
        cur: list[_Unit] = []
        cur_tokens = cur_weight = 0
        head_weight = self._head_weight(head, head_tokens)

        def fixed() -> int:  # what the group carries besides its units: heading line or overlap
            return head_tokens if not groups else overlap_cost

        def fixed_weight() -> int:  # the same, as indexed (a heading without its attributes)
            return head_weight if not groups else overlap_cost

        pending = deque(runs)
        while pending:
            run = pending.popleft()
            tokens = _size(run)
            if not groups and not cur and run[-1].atomic and tokens + head_tokens + _MARGIN > cfg.max_tokens \
                    and self.counter.count(head + _join(run)) > cfg.max_tokens:
                # The section opens with a code block or table (and its lead-in) too big for the chunk
                # under the heading line: its first piece goes there, the others follow.
                room = cfg.max_tokens - head_tokens - _MARGIN - tokens + run[-1].tokens
                pieces = self._resplit(run[-1], room, piece_budget)
                if pieces is not None:
                    run = run[:-1] + pieces[:1]
                    tokens = _size(run)
                    pending.extendleft([piece] for piece in reversed(pieces[1:]))
            weight = self._weight(run)
            if cur:
                total = cur_tokens + 1 + tokens + fixed()
                weighed = cur_weight + 1 + weight + fixed_weight()  # the target is about what is indexed
                small = cur_weight + (head_weight if not groups else 0) < cfg.min_tokens
                if total > cfg.max_tokens or (weighed > cfg.target_tokens and not small):
                    groups.append(cur)
                    cur, cur_tokens, cur_weight = [], 0, 0
            cur_tokens += tokens + (1 if cur else 0)
            cur_weight += weight + (1 if cur else 0)
            cur.extend(run)
        if cur:
            groups.append(cur)
        self._merge_small(groups, head_tokens, overlap_cost, head_weight)
        self._rebalance_tail(groups, head_tokens, overlap_cost)
        return groups

    def _head_weight(self, head: str, head_tokens: int) -> int:
        """Tokens of the section's heading line as indexed (without a ``{ #anchor }`` attribute block)."""
        if "{" not in head:
            return head_tokens
        return self.counter.count(clean_heading_lines(head))

    def _weight(self, units: list[_Unit]) -> int:
        """Like ``_size``, counting only what is indexed: an include directive line weighs nothing."""
        return sum(self._indexed_tokens(u) for u in units) + max(len(units) - 1, 0)

    def _indexed_tokens(self, unit: _Unit) -> int:
        if unit.atomic or not may_hold_include_directive(unit.source):
            return unit.tokens
        key = (unit.block_id, unit.start, unit.end)
        if key not in self._indexed:
            text = unit.text
            kept = indexable_text(text)
            self._indexed[key] = unit.tokens if kept == text else (self.counter.count(kept) if kept else 0)
        return self._indexed[key]

    def _merge_small(self, groups: list[list[_Unit]], head_tokens: int, overlap_cost: int, head_weight: int) -> None:
        """A group under min_tokens (as indexed) joins a neighbour when the two fit one chunk: the previous
        one first (text after a code block or table usually comments on it), else the next."""
        cfg = self.config

        def fixed(i: int) -> int:
            return head_tokens if i == 0 else overlap_cost

        def mergeable(i: int) -> bool:  # groups[i] and groups[i + 1] as one chunk
            both = groups[i] + groups[i + 1]
            return _size(both) + fixed(i) <= cfg.max_tokens and not self._is_oversized(both, fixed(i))

        i = 0
        while i < len(groups) and len(groups) > 1:
            if self._weight(groups[i]) + (head_weight if i == 0 else overlap_cost) >= cfg.min_tokens:
                i += 1
            elif i > 0 and mergeable(i - 1):
                groups[i - 1 : i + 1] = [groups[i - 1] + groups[i]]
            elif i + 1 < len(groups) and mergeable(i):
                groups[i : i + 2] = [groups[i] + groups[i + 1]]  # still small? looked at again
            else:
                i += 1

    def _rebalance_tail(self, groups: list[list[_Unit]], head_tokens: int, overlap_cost: int) -> None:
        """A runt last piece (as indexed) that could not merge: move units over to it from the piece before."""
        cfg = self.config
        if len(groups) < 2:
            return
        prev, last = groups[-2], groups[-1]
        prev_fixed = head_tokens if len(groups) == 2 else overlap_cost
        if self._weight(last) >= cfg.min_tokens or self._is_oversized(prev + last, prev_fixed):
            return  # not a runt, or an oversized atomic block involved (never merged)
        while self._weight(last) < cfg.min_tokens:
            k = _last_run_start(prev)  # a lead-in moves together with what it introduces
            moved = prev[k:]
            if _size(moved + last) + overlap_cost > cfg.max_tokens or self._weight(prev[:k]) < cfg.min_tokens:
                sentences = self._sentences(moved[0]) if len(moved) == 1 else []
                if not sentences:
                    break
                prev[k:] = sentences  # a paragraph too big to move whole: move its last sentences
                continue
            if k == 0:
                break
            del prev[k:]
            last[:0] = moved

    def _sentences(self, unit: _Unit) -> list[_Unit]:
        """A prose unit as its lines and sentences ([] if it is atomic or has only one)."""
        if unit.atomic:
            return []
        spans = _segments(unit.source, unit.start, unit.end, _LINES_OR_SENTENCES, _protected_spans(unit.source))
        return self._pieces(unit, [(s, e, self.counter.count(unit.source[s:e])) for s, e in spans])

    def _pieces(self, unit: _Unit, spans: list[tuple[int, int, int]]) -> list[_Unit]:
        """Units for consecutive spans of a prose unit ([] unless there are at least two)."""
        if len(spans) < 2:
            return []
        pieces = [_Unit(unit.source, s, e, t, unit.type, unit.block_id, False) for s, e, t in spans]
        # A piece that ends in a lead-in stays with the next one when pieces are moved or cut apart.
        return [replace(p, glue=self._is_lead_in(p)) for p in pieces[:-1]] + [replace(pieces[-1], glue=unit.glue)]

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
                # Keep the longest prefix that passes (not parting a lead-in from what it introduces,
                # unless nothing else passes); the rest goes back to the front of the queue.
                cuts = range(len(units) - 1, 0, -1)
                for cut in [c for c in cuts if not units[c - 1].glue] + [c for c in cuts if units[c - 1].glue]:
                    draft = self._draft(units[:cut], section, heading, overlap)
                    if draft is not None:
                        drafts.append(draft)
                        rest = units[cut:]
                        if queue and self._weight(rest) < self.config.min_tokens:
                            rest += queue.popleft()  # not a runt of its own: it leads the next chunk
                        queue.appendleft(rest)
                        break
                else:
                    queue.appendleft(units[1:])
                    queue.appendleft(units[:1])
                continue
            unit = units[0]
            if unit.atomic and overlap:
                # A code or table piece rather loses the overlap than gets split again.
                draft = self._draft(units, section, heading, "")
                if draft is not None:
                    drafts.append(draft)
                    continue
            pieces = self._smaller(unit, piece_budget)
            if pieces:
                queue.extendleft(reversed(pieces))
                continue
            # Unsplittable and too big: alone, without overlap if that is what it takes.
            draft = self._draft(units, section, heading, "") if overlap else None
            drafts.append(draft or self._forced_draft(units, section, heading))
        return drafts

    def _smaller(self, unit: _Unit, piece_budget: int) -> list[list[_Unit]]:
        """Groups of smaller pieces of a unit whose chunk failed its size check ([] if it cannot be cut)."""
        if unit.tokens <= 1:
            return []
        if unit.atomic:
            # Over the budget (a whole block in the first chunk, under the heading line), or failing
            # `fits`: halve it. Each piece is a group of its own, so fences do not pile up in one chunk.
            budget = piece_budget if unit.tokens > piece_budget else max(1, (unit.tokens + 1) // 2)
            pieces = self._split_atomic(unit, budget) or []
            return [[piece] for piece in pieces] if len(pieces) > 1 else []
        # Several small pieces let the prefix search in _emit fill the chunk again.
        spans = self._split(unit.source, unit.start, unit.end, unit.tokens, max(1, unit.tokens // 4), 1,
                            _protected_spans(unit.source))
        pieces = self._pieces(unit, spans)
        return [pieces] if pieces else []

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


def _size(units: list[_Unit]) -> int:
    """Estimated tokens of units packed into one chunk (a join costs about a token)."""
    return sum(u.tokens for u in units) + max(len(units) - 1, 0)


def _last_run_start(units: list[_Unit]) -> int:
    """Where the last run of glued units (a lead-in and what it introduces) starts."""
    k = len(units) - 1
    while k > 0 and units[k - 1].glue:
        k -= 1
    return k


def _join(units: list[_Unit]) -> str:
    """Units of one block re-join verbatim from its source, except framed pieces of a split code block
    or table, which stand alone; different blocks (and pieces) join with a blank line."""
    parts: list[str] = []
    i = 0
    while i < len(units):
        unit, j = units[i], i
        if unit.framed:
            parts.append(unit.text)
        else:
            while j + 1 < len(units) and units[j + 1].block_id == unit.block_id and not units[j + 1].framed:
                j += 1
            parts.append(unit.source[unit.start : units[j].end])
        i = j + 1
    return "\n\n".join(parts)


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
    closing = re.compile(rf"[ \t]*{re.escape(fence[2][0])}{{{len(fence[2])},}}[ \t]*")
    if closing.fullmatch(text, last_start):
        return text[: first_end + 1], "\n" + text[last_start:], first_end + 1, max(first_end + 1, last_start - 1)
    # An unclosed fence: every piece gets a closing fence anyway, so each is valid on its own.
    return text[: first_end + 1], f"\n{fence[1]}{fence[2]}", first_end + 1, len(text)


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
    for span in spans:
        t = span[2]
        if out:
            ps, pe, pt = out[-1]
            if pt + join_cost + t <= aim or (lead_in(members[-1]) and pt + join_cost + t <= budget):
                out[-1] = (ps, span[1], pt + join_cost + t)
                members.append(span)
                continue
            k = len(members)
            while k > 1 and lead_in(members[k - 1]):
                k -= 1
            moved = members[k:]
            moved_tokens = sum(m[2] + join_cost for m in moved)
            if moved and moved_tokens + t <= budget:
                out[-1] = (ps, _prev_end(text, ps, moved[0][0]), pt - moved_tokens)
                out.append((moved[0][0], span[1], moved_tokens + t))
                members = moved + [span]
                continue
        out.append(span)
        members = [span]
    return out


def _prev_end(text: str | None, start: int, pos: int) -> int:
    """The end of the text before `pos` (not before `start`), without the whitespace that separates them."""
    end = pos
    while text is not None and end > start and text[end - 1].isspace():
        end -= 1
    return end


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
