"""A search snapshot build from the store made slow, as at 100,000 chunks, for the tests of what a
query does when it meets one."""

import time


def slow_first_build(monkeypatch, seconds: float) -> None:
    """The first snapshot build from the store takes `seconds` longer, under the build lock as a real one
    does (a second reader waits for it): three pages build in well under a second, where 100,000 chunks
    take 30 s and more (docs/benchmarks.md)."""
    from rag_assets.retrieval.snapshot_writer import SnapshotWriter

    real, calls = SnapshotWriter._rebuilt, []

    def rebuilt(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(seconds)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SnapshotWriter, "_rebuilt", rebuilt)
