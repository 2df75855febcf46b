"""A command on a pseudo-terminal of its own, as a user's shell runs it: Ctrl-C typed there is the
terminal's SIGINT to the command's process group (not a `kill` of one process), and what it prints
is read as the terminal shows it (progress bars included)."""

from __future__ import annotations

import os
import pty
import signal
import threading
import time
from pathlib import Path


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path | str | None = None):
        pid, fd = pty.fork()
        if pid == 0:  # the child: session leader, the pty its controlling terminal, its stdio
            try:
                if cwd is not None:
                    os.chdir(cwd)
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # whatever the test process had
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self._output = bytearray()
        self._lock = threading.Lock()
        self._status: int | None = None
        self._reader = threading.Thread(target=self._drain, daemon=True)  # a full pty would block the command
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO: the command and its children closed the terminal
                return
            if not data:
                return
            with self._lock:
                self._output += data

    @property
    def output(self) -> str:
        with self._lock:
            return self._output.decode("utf-8", "replace")

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def ctrl_c(self) -> None:
        """Ctrl-C at the keyboard: the terminal sends SIGINT to its foreground process group."""
        self.type(b"\x03")

    def poll(self) -> int | None:
        if self._status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status = os.waitstatus_to_exitcode(status)
        return self._status

    def wait(self, timeout: float) -> int:
        """The exit code (negative: the signal that killed it); AssertionError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout} s; it printed:\n{self.output[-3000:]}")
            time.sleep(0.02)
        self._reader.join(timeout=5)
        return self._status

    def close(self) -> None:
        """Kill what is left (a test that failed half-way) and close the terminal."""
        if self.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait(30)
        try:
            os.close(self.fd)
        except OSError:
            pass

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
