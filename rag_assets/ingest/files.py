"""Reading a document's file safely: never a FIFO, socket or device named like markdown, never one over
the size limit, and never blocking on open. Used by discovery (fingerprints) and the frontmatter stage (reads)."""

from __future__ import annotations

import os
import stat as stat_mod
from pathlib import Path


class DocumentTooLarge(Exception):
    pass


class NotARegularFile(OSError):
    """A FIFO, socket or device named like markdown: refused, never read."""


def check_regular_file(st: os.stat_result, max_file_bytes: int | None) -> None:
    """Refuse what must not be read: not a regular file, or over the size limit."""
    if not stat_mod.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat_mod.S_ISFIFO(st.st_mode) else "a socket" if stat_mod.S_ISSOCK(st.st_mode) else "a device or special file"
        raise NotARegularFile(f"not a regular file ({kind}); refused")
    if max_file_bytes is not None and st.st_size > max_file_bytes:
        raise DocumentTooLarge(
            f"file is {st.st_size:,} bytes, over the {max_file_bytes:,}-byte limit (raise RAG_MAX_FILE_BYTES to index it)"
        )


def open_regular(path: Path | str, max_file_bytes: int | None):
    """Open for reading without ever blocking (O_NONBLOCK: a FIFO would wait for a writer), then
    check on the open descriptor that it is a regular file within the size limit."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        check_regular_file(st, max_file_bytes)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), st
