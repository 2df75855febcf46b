"""A real Chroma server for tests (`chroma run` on 127.0.0.1 and a free port, its own folder)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMA = Path(sys.executable).with_name("chroma")
requires_chroma = pytest.mark.skipif(not CHROMA.exists(), reason="the chroma CLI is not installed next to this Python")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChromaServer:
    def __init__(self, path: Path, port: int, log: Path):
        self.path, self.port, self.log = path, port, log
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> "ChromaServer":
        self.proc = subprocess.Popen(
            [str(CHROMA), "run", "--host", "127.0.0.1", "--port", str(self.port), "--path", str(self.path)],
            stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"chroma run exited: {self.log.read_text(errors='replace')[-2000:]}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"chroma server not up after {timeout} s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)
        self.proc = None
