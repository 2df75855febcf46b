"""Stopping an ingest: Ctrl-C (SIGINT) or SIGTERM ends `rag ingest` (and RAGPipeline.ingest's runs)
within seconds, starts no further run and keeps every document already finished.

How Dagster's in-process execution takes a SIGINT (dagster._utils.interrupts), and what is built on it:

- While a run executes, Dagster holds SIGINT (and maps SIGTERM onto it). Inside a step's code the
  signal raises DagsterExecutionInterruptedError there and then; between steps it is only noted,
  and the next step raises it as it starts. Either way the step fails with an "interrupt" error
  and the run ends; a run whose status is CANCELING at that moment ends CANCELED, any other FAILURE
  ("interrupted unexpectedly"). A signal noted after the last step began is forgotten when the run
  ends: the run simply finishes.
- `execute_in_process(raise_on_error=False)` returns that run's result like any failed run's; that
  is how an interrupted `rag ingest` used to go on to its next run.

So this module watches the signals itself, beside Dagster's handlers and whichever of them is
installed: `signal.set_wakeup_fd` has Python's own C-level handler write every signal's number to
a pipe this module reads in a thread, before any Python-level handler runs. That records the first
signal (the exit code: 130 for SIGINT, 143 for SIGTERM) even when Dagster forgets it, and lets a
second one end the process at once. Between runs (the ingest's own code) SIGINT and SIGTERM raise
KeyboardInterrupt, as Python's default SIGINT handler does. The run loop (execution.py, and the ingest
service, rag_assets.indexing) starts no run once a stop is asked for, and an interrupted run is marked CANCELING before Dagster ends it (its
`rag_interrupt` logger, interrupt_logging.py), so it ends CANCELED: the user asked for it, it did
not fail (an interrupt Dagster took outside any step, which it ends FAILURE "interrupted
unexpectedly", is marked CANCELED after the run: interrupt_logging.cancel_if_stopped). Its finished stages' records are kept; its documents and those of the runs never started
are "not started", and the next `rag ingest` does them.

No Dagster import here: `rag ingest` installs this before importing Dagster.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class IngestInterrupted(KeyboardInterrupt):
    """An ingest stopped by Ctrl-C or SIGTERM: `summary` (an IngestSummary) says what it kept and
    what it did not start; `signum` is the signal. A KeyboardInterrupt, so a caller's Ctrl-C
    handling sees what it expects."""

    def __init__(self, summary: Any, signum: int | None):
        super().__init__(f"ingest stopped by {NAMES.get(signum, 'an interrupt')}")
        self.summary = summary
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)


class StopWatch:
    """The signals received while an ingest runs (see the module docstring)."""

    def __init__(self, exit_at_second: bool, on_exit: Callable[[int], None] | None = None):
        self.exit_at_second = exit_at_second
        self.on_exit = on_exit  # says goodbye before a second signal ends the process
        self.signum: int | None = None
        self.received = 0
        self._lock = threading.Lock()
        # the Dagster instance of the ingest's runs: an interrupted run is marked CANCELING there
        # (interrupt_logging) before Dagster ends it
        self.instance: Any = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _on_signal_number(self, signum: int) -> None:
        if signum not in SIGNALS:
            return
        with self._lock:
            self.received += 1
            first = self.signum is None
            if first:
                self.signum = signum
        if not first and self.exit_at_second:
            if self.on_exit is not None:
                self.on_exit(signum)
            os._exit(128 + signum)


# process-wide, as the signals it records are: the stop watches in force, innermost last
_ACTIVE: list[StopWatch] = []


def active() -> StopWatch | None:
    """The watch of the ingest in progress in this process (None outside one)."""
    return _ACTIVE[-1] if _ACTIVE else None


def _raise_keyboard_interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


@contextmanager
def stop_on_signals(exit_at_second: bool = False, on_exit: Callable[[int], None] | None = None
                    ) -> Iterator[StopWatch | None]:
    """Watch SIGINT and SIGTERM for the block (the innermost of nested blocks is the outer one's
    watch). `exit_at_second`: a second signal ends the process at once (the CLI; a library call
    leaves that to the caller: its second Ctrl-C raises KeyboardInterrupt again). Off the main
    thread signals are the main thread's to handle: yields None. The handlers and wakeup fd that
    were installed are put back afterwards (Dagster's in-process runs leave SIGTERM mapped onto
    SIGINT's handler; a library call must not change how its caller's process ends)."""
    if _ACTIVE:
        yield _ACTIVE[-1]
        return
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    watch = StopWatch(exit_at_second, on_exit)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    old_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    forward = old_fd if old_fd >= 0 else None
    for s in SIGNALS:
        signal.signal(s, _raise_keyboard_interrupt)
    reader = threading.Thread(target=_read_signals, args=(read_end, watch, forward), name="rag-stop-signals",
                              daemon=True)
    reader.start()
    _ACTIVE.append(watch)
    try:
        yield watch
    finally:
        _ACTIVE.remove(watch)
        signal.set_wakeup_fd(old_fd)
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        os.write(write_end, b"\0")  # the reader's cue to finish
        reader.join(timeout=5)
        os.close(write_end)
        os.close(read_end)


def _read_signals(read_end: int, watch: StopWatch, forward: int | None) -> None:
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        for signum in data:
            if signum == 0:
                return
            if forward is not None:  # whoever had the wakeup fd before (an asyncio loop) still hears it
                try:
                    os.write(forward, bytes([signum]))
                except OSError:
                    pass
            watch._on_signal_number(signum)


def say_stopping_at_once(signum: int) -> None:
    """What the CLI prints when a second signal ends it at once."""
    try:
        sys.stderr.write(f"\nrag: {NAMES.get(signum, 'signal')} again: stopped at once; documents already indexed "
                         "are kept, the run in progress is left unfinished (the next `rag ingest` marks it and redoes "
                         "its documents)\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
