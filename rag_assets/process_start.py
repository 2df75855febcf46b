"""What a process does before its real work: the heavy imports (dagster, chromadb: ~2 s), and
what it starts ahead of the work on the other core (the model, the store).

Dagster-free, so both the `rag` CLI and the warm run worker can use it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from contextlib import contextmanager


@contextmanager
def imports_without_gc():
    """Heavy imports with Python's cycle collector off, then what they built moved out of its reach
    (gc.freeze): they allocate ~350,000 objects that every collection would walk again, for nothing
    (0.25 s of the imports, measured; and of every later collection). A collector the caller had
    turned off stays off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def start_quietly(name: str, work: Callable[[], object]) -> threading.Thread:
    """`work` in a daemon thread, any error dropped: work done ahead that the step needing it
    does again, and reports, when it failed here."""

    def quietly() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - see the docstring
            pass

    thread = threading.Thread(target=quietly, name=name, daemon=True)
    thread.start()
    return thread
