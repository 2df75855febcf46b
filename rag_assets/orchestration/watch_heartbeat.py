"""The heartbeat of `rag watch`: a small file in the corpus's state folder that says a watcher is
indexing into that state, and which folder it follows, so docs_sensor stands back (one set of runs per
change, not two; and never a second folder indexed into the same state).

The watcher rewrites it every HEARTBEAT_SECONDS and removes it when it stops. A heartbeat counts as
live when it is younger than STALE_AFTER_SECONDS and, on this host, its process is alive: a watcher
that was killed stops holding the sensor back within seconds.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

HEARTBEAT_FILE = "watch.json"
HEARTBEAT_SECONDS = 2.0
STALE_AFTER_SECONDS = 10.0


def heartbeat_path(settings) -> Path:
    return Path(settings.state_dir) / HEARTBEAT_FILE


def live_watcher(settings, now: float | None = None) -> dict | None:
    """The heartbeat ({pid, host, docs_dir, beat}) of the watcher live on this state folder, whichever
    docs folder it follows (its runs index that folder: rag watch hands it to them), or None."""
    try:
        beat = json.loads(heartbeat_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    now = time.time() if now is None else now
    if not isinstance(beat, dict) or now - float(beat.get("beat", 0)) > STALE_AFTER_SECONDS:
        return None
    if beat.get("host") == socket.gethostname() and not _alive(int(beat.get("pid", 0))):
        return None
    return beat


class Heartbeat:
    """Context manager: keeps this process's heartbeat fresh until the block ends, then removes it."""

    def __init__(self, settings, interval: float = HEARTBEAT_SECONDS):
        self.path = heartbeat_path(settings)
        self.docs_dir = str(settings.docs_dir)
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat_until_stopped, name="rag-watch-heartbeat", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            if json.loads(self.path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                self.path.unlink()
        except (OSError, ValueError):
            pass

    def beat(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "docs_dir": self.docs_dir,
                                   "beat": time.time()}), encoding="utf-8")
        os.replace(tmp, self.path)  # atomic: a reader never sees half a file

    def _beat_until_stopped(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except OSError:
                pass  # a full or read-only disk: the sensor takes over once the heartbeat is stale


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
