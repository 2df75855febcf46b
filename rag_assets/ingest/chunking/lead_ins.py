"""Lead-ins ("Install it with:"): keeping a paragraph that introduces what follows in the chunk of (the
first piece of) what it introduces, parting or re-splitting either when both do not fit."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import replace

from rag_assets.ingest.chunking.splitting import (
    _LEAD_IN, _LINES_OR_SENTENCES, _Splitter, _protected_spans, _segments)
from rag_assets.ingest.chunking.units import _MIN_PIECE_BUDGET, _size, _Unit

# A paragraph that only opens an HTML element (fastapi's `<div class="termy">` around a console
# example) belongs with what the element wraps, just like a lead-in.
_OPENING_TAG = re.compile(r"<[A-Za-z][\w.:-]*(?:\s[^<>]*)?(?<!/)>")
# Up to this size a lead-in has what it introduces split, if need be, to share its chunk; a longer
# paragraph ending in a colon only stays with what follows when both fit. Lead-ins measured on
# fastapi's docs: median 15 tokens, 99th percentile 52. A longer one is more a section of its own,
# and would leave what it introduces too little of the chunk (~130 tokens with the defaults).
LEAD_IN_MAX_TOKENS = 60


class _LeadIns(_Splitter):
    """How _Packer groups units into runs around lead-ins (and cuts prose units into glued pieces)."""

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
