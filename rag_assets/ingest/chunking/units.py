"""Units, the pieces the packer moves around, and drafts, the chunks it makes of them: their sizes and
how units of one block re-join."""

from __future__ import annotations

from dataclasses import dataclass

from rag_assets.models import BlockType


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
