"""The server files: how `rag query` finds a running `rag serve` for its corpus (standard library only,
so the CLI's quick path imports nothing heavy).

`rag serve` writes ``serve-<pid>.json`` into the state folder of every corpus it serves: its URL, host,
port, pid, when it started, whether a bearer token is required (never the token itself), the corpora
and the docs folder and collection it serves for that corpus. One file per server, so two servers of
one corpus never touch each other's: when one stops it removes its own, and `rag query` goes on using
the other (with one shared file, the second server's stop deleted the first's and `rag query` silently
stopped using it). A file whose pid is gone (a server killed with SIGKILL) is ignored, and removed by
the next server that starts there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PREFIX = "serve-"


def path_for(state_dir: Path | str, pid: int) -> Path:
    return Path(state_dir) / f"{PREFIX}{int(pid)}.json"


def write(state_dir: Path | str, info: dict[str, Any]) -> Path:
    """Write this server's file atomically (a reader never sees half of it); info["pid"] names it.
    Files of servers that are gone are removed on the way."""
    path = path_for(state_dir, info["pid"])
    path.parent.mkdir(parents=True, exist_ok=True)
    for other in _files(state_dir):
        found = _read(other)
        if found is None or not _alive(found.get("pid")):
            other.unlink(missing_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def remove(state_dir: Path | str, pid: int) -> None:
    """Remove this server's file (pid): never another server's."""
    path_for(state_dir, pid).unlink(missing_ok=True)


def read_all(state_dir: Path | str) -> list[dict[str, Any]]:
    """Every server file here, live or not, the last started first."""
    found = [info for info in map(_read, _files(state_dir)) if info is not None]
    return sorted(found, key=lambda info: str(info.get("started", "")), reverse=True)


def read(state_dir: Path | str) -> dict[str, Any] | None:
    """The last started server's file here, live or not (None: none)."""
    found = read_all(state_dir)
    return found[0] if found else None


def live(state_dir: Path | str) -> list[dict[str, Any]]:
    """The server files whose process is alive, the last started first."""
    return [info for info in read_all(state_dir) if _alive(info.get("pid"))]


def read_live(state_dir: Path | str) -> dict[str, Any] | None:
    """The last started live server's file, else None."""
    found = live(state_dir)
    return found[0] if found else None


def _files(state_dir: Path | str) -> list[Path]:
    try:
        return [p for p in Path(state_dir).iterdir() if p.name.startswith(PREFIX) and p.name.endswith(".json")]
    except OSError:
        return []


def _read(path: Path) -> dict[str, Any] | None:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("url"), str) else None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    except OverflowError:
        return False
    return True
