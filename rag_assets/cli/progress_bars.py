"""Progress events (rag_assets.progress) drawn as tqdm bars on a terminal.

Two lines: the whole ingest (documents done / to do, across its runs) and the stage at work now
(documents, chunks or questions done / total, with rate and ETA)."""

from __future__ import annotations

import shutil
from typing import TextIO

from tqdm import tqdm

from rag_assets.progress import OVERALL, ProgressEvent


class TerminalProgress:
    def __init__(self, stream: TextIO):
        self.stream = stream
        self._overall: tqdm | None = None
        self._stage_bar: tqdm | None = None
        self._stage: tuple[str, str] | None = None

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage == OVERALL:
            if self._overall is None:
                self._overall = self._bar(event, position=0, leave=True)
            self._overall.total = event.total
            self._update(self._overall, event.done)
            return
        if (event.stage, event.unit) != self._stage or self._stage_bar is None:
            if self._stage_bar is not None:
                self._stage_bar.close()
            self._stage = (event.stage, event.unit)
            self._stage_bar = self._bar(event, position=1 if self._overall is not None else 0, leave=False)
        self._stage_bar.total = event.total
        self._update(self._stage_bar, event.done)

    def _bar(self, event: ProgressEvent, position: int, leave: bool) -> tqdm:
        # a terminal that reports no size (0x0, e.g. a bare pty) would get no bars at all: shutil
        # falls back to $COLUMNS/$LINES, then 80x24
        size = shutil.get_terminal_size()
        # what is already done when the bar appears (e.g. unchanged documents) is its starting point,
        # not work done in no time: the rate counts only what is done while it is shown
        return tqdm(total=event.total, initial=event.done, desc=f"{event.stage:>8}", unit=f" {event.unit}",
                    file=self.stream, position=position, leave=leave, ncols=size.columns, nrows=size.lines,
                    mininterval=0.25)

    @staticmethod
    def _update(bar: tqdm, done: int) -> None:
        if done != bar.n:
            bar.update(done - bar.n)  # through update(): tqdm's rate sees how much moved, and when
        bar.refresh()

    def close(self) -> None:
        for bar in (self._stage_bar, self._overall):
            if bar is not None:
                bar.close()
        self._stage_bar = self._overall = None
