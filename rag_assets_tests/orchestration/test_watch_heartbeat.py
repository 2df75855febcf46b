"""The heartbeat by which `rag watch` tells docs_sensor to stand back: live only while fresh and (on this
host) while its process is alive, whichever folder it follows (the sensor judges that)."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from rag_assets.config import Settings
from rag_assets.orchestration.watch_heartbeat import STALE_AFTER_SECONDS, Heartbeat, heartbeat_path, live_watcher


def settings_for(tmp_path, docs="docs") -> Settings:
    return Settings.from_env({}, docs_dir=tmp_path / docs, state_dir=tmp_path / "state")


def write_beat(settings, **fields):
    beat = {"pid": os.getpid(), "host": socket.gethostname(), "docs_dir": str(settings.docs_dir), "beat": time.time()}
    heartbeat_path(settings).parent.mkdir(parents=True, exist_ok=True)
    heartbeat_path(settings).write_text(json.dumps({**beat, **fields}))


def test_a_running_watcher_is_live_and_its_heartbeat_goes_with_it(tmp_path):
    settings = settings_for(tmp_path)
    assert live_watcher(settings) is None
    with Heartbeat(settings, interval=0.05):
        first = live_watcher(settings)["beat"]
        deadline = time.monotonic() + 60  # only a guard: the next beat comes 0.05 s later on a quiet machine
        while live_watcher(settings)["beat"] == first:  # kept fresh while it runs
            assert time.monotonic() < deadline, "the heartbeat was not renewed"
            time.sleep(0.02)
        assert live_watcher(settings)["beat"] > first
    assert not heartbeat_path(settings).exists()


@pytest.mark.system
def test_a_stale_or_a_dead_watchers_heartbeat_is_not_live_and_one_of_another_folder_is(tmp_path):
    settings = settings_for(tmp_path)
    write_beat(settings, beat=time.time() - STALE_AFTER_SECONDS - 1)
    assert live_watcher(settings) is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_beat(settings, pid=dead.pid)
    assert live_watcher(settings) is None  # killed without removing its file: not holding the sensor back
    write_beat(settings, docs_dir=str(tmp_path / "elsewhere"))
    assert live_watcher(settings)["docs_dir"] == str(tmp_path / "elsewhere")  # its runs index into this state
    write_beat(settings)
    assert live_watcher(settings) is not None
    heartbeat_path(settings).write_text("{not json")
    assert live_watcher(settings) is None
