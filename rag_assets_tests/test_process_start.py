"""The heavy imports' collector handling (rag_assets/process_start.py)."""

from __future__ import annotations

import gc

from rag_assets.process_start import imports_without_gc


def test_heavy_imports_run_without_the_cycle_collector_which_is_on_again_after():
    frozen = gc.get_freeze_count()
    try:
        with imports_without_gc():
            assert not gc.isenabled()
            kept = [[] for _ in range(1000)]  # what the imports build
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(kept)
        gc.disable()
        with imports_without_gc():
            pass
        assert not gc.isenabled(), "a collector its caller had turned off was turned on"
    finally:
        gc.enable()
        gc.unfreeze()
