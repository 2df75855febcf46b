"""A search snapshot build from the store that the test holds open, for the tests of what a query does
when it meets one (a build of 100,000 chunks takes 30 s and more, docs/benchmarks.md; three pages build
in well under a second). The test ends it by an event, once it has seen what it waits for: never a sleep
that must outlast a timeout, which a loaded machine can outlast the other way."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class HeldBuild:
    """The first build from the store in this process, held at its start (under the build lock, as a real
    one runs: a second reader waits for it) until `release` is set."""

    started: threading.Event = field(default_factory=threading.Event)  # the first build holds the lock now
    release: threading.Event = field(default_factory=threading.Event)  # set by the test: the build goes on
    threads: list[int] = field(default_factory=list)  # the thread each build from the store ran in

    def wait_started(self, timeout: float = 300) -> None:
        """Until the first build holds the lock (the timeout only guards against a hang)."""
        assert self.started.wait(timeout), f"no snapshot build from the store started within {timeout} s"


def hold_first_build(monkeypatch, *, held: bool = True) -> HeldBuild:
    """Every build from the store records its thread; the first waits for `release` when `held` (a test
    that only asks where the build ran passes held=False)."""
    from rag_assets.retrieval.snapshot_writer import SnapshotWriter

    build, real = HeldBuild(), SnapshotWriter._rebuilt
    if not held:
        build.release.set()

    def rebuilt(self, *args, **kwargs):
        build.threads.append(threading.get_ident())
        if len(build.threads) == 1:
            build.started.set()
            assert build.release.wait(600), "the test never released the held snapshot build"
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SnapshotWriter, "_rebuilt", rebuilt)
    return build
