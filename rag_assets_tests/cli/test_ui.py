"""`rag ui`: `dagster dev` on the project's instance, no temporary DAGSTER_HOME, and it stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

from rag_assets_tests.conftest import instance_yaml, subprocess_env, write_corpus
from rag_assets_tests.support.chroma_server import free_port


def test_rag_ui_serves_the_project_instance_and_stops_on_sigterm(tmp_path):
    write_corpus(tmp_path / "docs")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(tmp_path, f"  sqlite:\n    base_dir: {tmp_path}/storage"))
    # as a user runs it: from the folder holding dagster.yaml (the repo root), DAGSTER_HOME unset
    env = subprocess_env(tmp_path)
    env.pop("DAGSTER_HOME", None)
    port = free_port()
    log = tmp_path / "ui.log"
    cwd = home
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "rag_assets", "ui", "--port", str(port)], cwd=cwd, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError(f"no UI within 120 s:\n{log.read_text()[-3000:]}")
        text = log.read_text()
        assert str(home) in text  # it says which instance it serves
        assert "temporary" not in text.lower() and not list(cwd.glob(".tmp_dagster_home_*"))
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        assert time.monotonic() - started < 60
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
