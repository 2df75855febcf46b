"""A hostile docs folder: every kind of file a real markdown folder ends up holding.

`build_hostile_corpus(root)` writes it under `root` (the docs folder) and returns
``{doc_path: reason substring}`` for every file that must be REPORTED (in the `errors` of
`rag ingest --json`, with that reason); `GOOD` / `EMPTY` / `SILENT` name the other cases.

Decisions (what is "bad" and what is merely unusual):

- reported, not indexed: invalid YAML frontmatter, a binary file named .md (NUL bytes), text that is
  neither UTF-8 nor UTF-8 with a BOM (no encoding guessing: frontmatter.decode), a file over
  RAG_MAX_FILE_BYTES (refused by its size before a byte is read), a symlink resolving outside the
  docs folder (never opened), a symlink loop / dangling link, a FIFO named .md (not a regular file:
  opening it would block forever), an unreadable file (chmod 000; root reads it anyway, so that
  case exists only for a non-root euid), a YAML alias bomb in frontmatter (refused before it is
  expanded), a file named `..md` (only dots before the extension: not a hidden name, a broken
  one), a file name that is not UTF-8 (it could not be stored as a document path).
- valid markdown, indexed: UTF-8 with BOM, an unclosed code fence (kept, flagged, stops at the next
  heading), a 10,000-row table (an atomic block: split into oversized chunks or kept whole and
  flagged, never lost), `######` nesting, the text `<|endoftext|>` (counted as ordinary text),
  names with spaces, unicode and `...` (`...` is Dagster's range syntax: the partition key is
  mapped, the doc_path is not), a list nested past markdown-it's 10-level limit (the sections
  after it are still sections).
- valid, nothing to index: an empty file, a file that is frontmatter only: 0 chunks, no error.
- a folder symlink loop (`loop-dir/back -> ..`) is walked once, silently.

The deleted-between-discovery-and-parsing case needs a hook inside the run; see
`test_hostile_corpus.py` (it is not written by this builder).
"""

from __future__ import annotations

import os
from pathlib import Path

# doc_path -> a word of its text the index must return for a query (the documents that must be indexed)
GOOD: dict[str, str] = {
    "bom.md": "Zanzibar",
    "unclosed-fence.md": "quokka",
    "big-table.md": "row09999",
    "deep-headings.md": "axolotl",
    "endoftext.md": "narwhal",
    "name with spaces.md": "pangolin",
    "ünïcödé-名前.md": "okapi",
    "wait...what.md": "capybara",
    "deep-list.md": "wombat",
}
# valid, but nothing to index (0 chunks, no error)
EMPTY = ("empty.md", "frontmatter-only.md")
MAX_FILE_BYTES = 5_000_000
HUGE_BYTES = 20 * 1024 * 1024


def _write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def billion_laughs(levels: int = 9) -> str:
    """A markdown file whose frontmatter is the classic alias bomb: each level lists nine aliases of
    the level below, so 9 levels (under 480 bytes) expand to 9^9 = 387 million strings."""
    rows = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "---\n" + "\n".join(rows) + "\n---\n# Body\n\nText.\n"


def _huge(path: Path, size: int) -> None:
    """A valid markdown file of `size` bytes, written in blocks (the builder stays small too)."""
    line = b"Filler paragraph of a very large generated document, repeated many times over.\n"
    block = line * ((1 << 20) // len(line))
    with open(path, "wb") as fh:
        fh.write(b"# Huge\n\n")
        written = 8
        while written + len(block) <= size:
            fh.write(block)
            written += len(block)
        fh.write(b"x" * (size - written))


def build_hostile_corpus(root: Path, *, outside: Path | None = None, include_fifo: bool = True) -> dict[str, str]:
    """Write the hostile files under `root`; returns {doc_path: expected reason substring} of the bad ones.

    `outside` is a folder outside `root` for the symlink target (default: root's sibling `outside`).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    outside = Path(outside) if outside is not None else root.parent / f"{root.name}-outside"
    outside.mkdir(parents=True, exist_ok=True)
    bad: dict[str, str] = {}

    # --- reported --------------------------------------------------------------------------
    _write(root, "bad-yaml.md", "---\ntitle: [unclosed\ntags: {a: b\n---\n# Body\n\nSome text.\n")
    bad["bad-yaml.md"] = "invalid YAML frontmatter"
    _write(root, "binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    bad["binary.md"] = "binary file"
    _write(root, "latin1.md", "# Café\n\nUn café crème, s'il vous plaît. Ça coûte 3 €.\n".encode("cp1252"))
    bad["latin1.md"] = "not valid UTF-8"
    _huge(root / "huge.md", HUGE_BYTES)
    bad["huge.md"] = "RAG_MAX_FILE_BYTES"
    secret = _write(outside, "secret.md", "# Secret\n\nThe launch code is PLATYPUS-4711.\n")
    (root / "leak.md").symlink_to(secret)
    bad["leak.md"] = "outside the docs folder"
    (root / "loop.md").symlink_to(root / "loop2.md")
    (root / "loop2.md").symlink_to(root / "loop.md")
    bad["loop.md"] = "cannot resolve path"
    bad["loop2.md"] = "cannot resolve path"
    (root / "dangling.md").symlink_to(root / "does-not-exist.md")
    bad["dangling.md"] = "cannot resolve path"
    if include_fifo and hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe.md")
        bad["pipe.md"] = "not a regular file"
    _write(root, "yaml-bomb.md", billion_laughs())
    bad["yaml-bomb.md"] = "alias bomb"
    _write(root, "..md", "# Only dots\n\nA name with nothing before its extension.\n")
    bad["..md"] = "nothing before its extension"
    with open(os.path.join(os.fsencode(root), b"latin1-name-caf\xe9.md"), "wb") as fh:
        fh.write(b"# Latin-1 file name\n\nThe content is fine, the name is not UTF-8.\n")
    bad["latin1-name-caf\\xe9.md"] = "not valid UTF-8, so it cannot be stored"
    locked = _write(root, "locked.md", "# Locked\n\nNobody may read this.\n")
    locked.chmod(0)
    if os.geteuid() != 0:  # root reads a mode-000 file: then it is simply a good document
        bad["locked.md"] = "Permission denied"

    # --- valid and indexed --------------------------------------------------------------------
    _write(root, "bom.md", "\ufeff---\ntitle: With a BOM\n---\n# BOM\n\nZanzibar spice routes, saved by a Windows editor.\n")
    _write(
        root,
        "unclosed-fence.md",
        "# Unclosed\n\nA quokka smiles.\n\n```python\nprint('never closed')\n\n## Next section\n\nStill quokka text after.\n",
    )
    rows = "\n".join(f"| row{i:05d} | value {i} | {i * 7 % 1000} |" for i in range(10_000))
    _write(root, "big-table.md", f"# Big table\n\n| key | value | n |\n|---|---|---|\n{rows}\n")
    deep = "".join(f"{'#' * level} Level {level}\n\nAxolotl notes at depth {level}.\n\n" for level in range(1, 7))
    _write(root, "deep-headings.md", deep + "####### Seven hashes is a paragraph, not a heading\n")
    _write(
        root,
        "endoftext.md",
        "# Special tokens\n\nA narwhal wrote <|endoftext|> in the middle of a sentence, and <|im_start|> too.\n",
    )
    _write(root, "name with spaces.md", "# Spaces\n\nThe pangolin rolls into a ball.\n")
    _write(root, "ünïcödé-名前.md", "# Unicode\n\nThe okapi — ✓ — lives in the forest. 名前.\n")
    _write(root, "wait...what.md", "# Dots\n\nThe capybara relaxes in hot springs.\n")
    deep_list = "\n".join("  " * i + f"- level {i + 1}" for i in range(12))
    _write(root, "deep-list.md", f"# Setup\n\n{deep_list}\n\n## Install\n\nThe wombat digs.\n\n## Remove\n\nGone.\n")

    # --- valid, nothing to index --------------------------------------------------------------
    _write(root, "empty.md", b"")
    _write(root, "frontmatter-only.md", "---\ntitle: Only frontmatter\ntags: [x]\n---\n")

    # --- walked once, silently ----------------------------------------------------------------
    (root / "loop-dir").mkdir(exist_ok=True)
    (root / "loop-dir" / "back").symlink_to("..", target_is_directory=True)
    return bad


def unlock(root: Path) -> None:
    """Undo chmod 000 so the folder can be deleted by a non-root user."""
    locked = Path(root) / "locked.md"
    if locked.exists():
        locked.chmod(0o644)
