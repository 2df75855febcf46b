"""Whether a segment of the search snapshot is as it was written: its meta.json records each file's
size and CRC-32 (snapshot_segments.save_segment), and a process checks them when it opens the segment
(its files read once, at ~1 GB/s: a few ms at the bundled corpus's 1,968 chunks, ~0.2 s at 100,000).
A file of another size or content, or a missing one, is a DamagedSegment naming it; the reader or
writer that meets one rebuilds the snapshot from the store and never serves it. Before, a truncated
vectors.npy made every query fail (EOFError, /search a 500, `rag serve`'s warm-up failed, `rag ingest`
found nothing to do) and same-size garbage gave wrong results, silently. Segments written before the
checksums are checked by size (each array's header against its file). CRC-32 finds damage (a disk, a
copy, a stray write), not a deliberate forgery: anyone who can write the state folder can rewrite
the index anyway.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

_READ = 1 << 20
META = "meta.json"


class DamagedSegment(Exception):
    """A segment's file is missing or not as it was written (size or checksum): the segment must not
    be served; the snapshot is rebuilt from the store. The message names the file and what is wrong."""


def file_checksum(path: Path) -> int:
    """CRC-32 of a file's bytes (damage, not tampering, is what it detects)."""
    crc = 0
    with open(path, "rb") as fh:
        while block := fh.read(_READ):
            crc = zlib.crc32(block, crc)
    return crc


def verify_segment(folder: Path, meta: dict, *, content: bool = True) -> None:
    """Every file of the segment is as it was written (DamagedSegment otherwise); content=False
    checks the sizes only (a stat each: what `rag ingest` looks at when it has nothing else to do)."""
    files = meta.get("files")
    if files is None:  # written before the checksums: each array's header must fit its file
        import numpy as np

        for path in sorted(Path(folder).glob("*.npy")):
            try:
                np.load(path, mmap_mode="r")
            except (ValueError, EOFError, OSError) as exc:
                raise DamagedSegment(f"{path}: {type(exc).__name__}: {exc}") from None
        return
    for name, (size, crc) in files.items():
        path = Path(folder) / name
        try:
            found = path.stat().st_size
            if found != size:
                raise DamagedSegment(f"{path}: {found:,} bytes, written as {size:,}")
            if content and file_checksum(path) != crc:
                raise DamagedSegment(f"{path}: its bytes are not those written (checksum)")
        except FileNotFoundError:
            raise DamagedSegment(f"{path}: missing") from None


def damage(folder: Path) -> str | None:
    """What is wrong with a segment's files by their sizes (None: nothing seen), without opening it."""
    folder = Path(folder)
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        verify_segment(folder, meta, content=False)
    except FileNotFoundError:
        return f"{folder}: missing" if not folder.is_dir() else f"{folder / META}: missing"
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError) as exc:
        return f"{folder / META}: not as written ({exc})"
    except DamagedSegment as exc:
        return str(exc)
    return None
