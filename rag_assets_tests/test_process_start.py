"""The heavy imports' collector handling and the work started ahead (rag_assets/process_start.py)."""

from __future__ import annotations

import gc

from rag_assets.process_start import imports_without_gc, start_quietly


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


def test_work_started_ahead_runs_in_a_daemon_thread_and_its_error_is_dropped(monkeypatch):
    import threading

    escaped = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)  # where an uncaught error would go
    done = []
    ok = start_quietly("rag-test-ahead", lambda: done.append(1))
    failing = start_quietly("rag-test-ahead-fails", lambda: 1 / 0)
    for thread in (ok, failing):
        thread.join(timeout=120)  # only a guard against a hang
        assert thread.daemon and not thread.is_alive()
    assert done == [1] and escaped == []
