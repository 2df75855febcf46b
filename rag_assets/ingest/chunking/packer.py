"""Packing one section's blocks into chunks: units toward ``target_tokens`` and never past ``max_tokens``,
small chunks merged or rebalanced, then each chunk checked at its exact size (and ``fits``) and emitted."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable

from rag_assets.ingest.chunking.config import ChunkingConfig
from rag_assets.vocabulary.index_text import _clip_heading_line, build_index_text
from rag_assets.ingest.chunking.lead_ins import _LeadIns
from rag_assets.ingest.chunking.sections import _Section
from rag_assets.ingest.chunking.splitting import _LEVELS, _protected_spans, _segments
from rag_assets.ingest.chunking.units import (
    _ATOMIC, _MARGIN, _MIN_PIECE_BUDGET, _Draft, _join, _last_run_start, _size, _Unit)
from rag_assets.vocabulary.markup import clean_heading_lines, indexable_text, may_hold_include_directive
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.models import Block, BlockType


class _Packer(_LeadIns):
    """Packs the sections of one document into drafts (``split_blocks`` totals over its sections)."""

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
        head = "".join(f"{_clip_heading_line(line)}\n\n" for line in section.heading_line.split("\n\n") if line)
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
        # the unit's own range: a look at its whole block, once per unit, made one big section quadratic
        if unit.atomic or not may_hold_include_directive(unit.source, unit.start, unit.end):
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
