"""The server file: how `rag query` finds a running `rag serve` for its corpus (standard library only,
so the CLI's quick path imports nothing heavy).

`rag serve` writes ``serve.json`` into the state folder of every corpus it serves: its URL, host,
port, pid, whether a bearer token is required (never the token itself), the corpora and the docs
folder and collection it serves for that corpus. It removes the file when it stops; a file whose pid is
gone (a server killed with SIGKILL) is ignored and replaced by the next server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FILE_NAME = "serve.json"


def path_for(state_dir: Path | str) -> Path:
    return Path(state_dir) / FILE_NAME


def write(state_dir: Path | str, info: dict[str, Any]) -> Path:
    """Write the server file atomically (a reader never sees half of it)."""
    path = path_for(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def remove(state_dir: Path | str, pid: int | None = None) -> None:
    """Remove the server file if it is this process's (pid) — never another live server's."""
    path = path_for(state_dir)
    info = read(state_dir)
    if info is not None and pid is not None and info.get("pid") != pid:
        return
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def read(state_dir: Path | str) -> dict[str, Any] | None:
    try:
        info = json.loads(path_for(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("url"), str) else None


def read_live(state_dir: Path | str) -> dict[str, Any] | None:
    """The server file when its process is alive, else None."""
    info = read(state_dir)
    if info is None:
        return None
    pid = info.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return info
