"""What a process does before its real work: the heavy imports (dagster, chromadb: ~2 s).

Dagster-free, so both the `rag` CLI and the warm run worker can use it.
"""

from __future__ import annotations

import gc
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
