"""Progress of long stages: reported by the plain stage functions, shown by whoever listens.

A stage calls its `Reporter` with a `ProgressEvent` (documents or chunks done out of a total). The
Dagster layer turns events into run-log lines every few seconds; the `rag` CLI listens in-process
(its runs execute in its own process) and draws a progress bar on a terminal. No listener, no cost.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator


@dataclass(frozen=True)
class ProgressEvent:
    stage: str  # "parse", "split", "chunk", "embed", "index", "evaluate"
    done: int
    total: int
    unit: str = "documents"  # or "chunks", "questions"


Reporter = Callable[[ProgressEvent], None]
OVERALL = "ingest"  # the stage name of whole-ingest progress (documents done across its runs)


def no_progress(_event: ProgressEvent) -> None:
    pass


# A process-wide registry on purpose: the listeners are the CLI's progress bars, and the events come
# from inside the Dagster runs it executes in process, which take no callback (run config is data);
# a listener is registered only for the `listening` block that shows it.
_listeners: list[Reporter] = []
_lock = threading.Lock()


def publish(event: ProgressEvent) -> None:
    """Hand an event to every in-process listener (a listener's failure never stops the work)."""
    for listener in list(_listeners):
        try:
            listener(event)
        except Exception:
            pass


@contextmanager
def listening(listener: Reporter) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


class Throttle:
    """True at most once every `seconds` (and always for the last event of a stage)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._last = 0.0

    def due(self, event: ProgressEvent) -> bool:
        now = time.monotonic()
        if event.done >= event.total or now - self._last >= self.seconds:
            self._last = now
            return True
        return False


def describe(event: ProgressEvent, started: float) -> str:
    """"embed: 1,200 / 2,825 chunks (42%), 38.1 chunks/s, ETA 43 s" for a log line."""
    elapsed = max(time.monotonic() - started, 1e-9)
    rate = event.done / elapsed
    text = f"{event.stage}: {event.done:,} / {event.total:,} {event.unit}"
    if event.total:
        text += f" ({100 * event.done / event.total:.0f}%)"
    if event.done and event.done < event.total:
        text += f", {rate:.1f} {event.unit}/s, ETA {max(0.0, (event.total - event.done) / rate):.0f} s"
    return text
