"""A corpus of many small documents, shaped like a documentation site: one `##` section per page.

    python benchmarks/small_docs_corpus.py DEST --docs 1000 [--source DIR]

Every `##` section of the source corpus (default: ../shared/corpora/physical-ai-textbook, read at
run time, never copied into the repo) becomes one page `page-NNNNN.md` with a `# title`, the section
and one sentence unique to the page, so no two pages share a chunk text (every chunk is embedded).
Sections are used round-robin when more pages are asked for than there are sections; each reuse is
made unique by its own sentence. Used by benchmarks/ingest_overhead.py.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "corpora" / "physical-ai-textbook"
_H2 = re.compile(r"^## ", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


def sections(source: Path) -> list[tuple[str, str]]:
    """(page title, `## section` text) for every level-2 section outside code fences, in path order."""
    out: list[tuple[str, str]] = []
    for path in sorted(p for p in Path(source).rglob("*") if p.suffix in (".md", ".mdx")):
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        title = path.stem.replace("-", " ")
        current: list[str] | None = None
        in_fence = False
        for line in lines:
            if _FENCE.match(line):
                in_fence = not in_fence
            if not in_fence and line.startswith("## "):
                if current:
                    out.append((title, "\n".join(current).strip()))
                current = [line]
            elif not in_fence and line.startswith("# "):
                title = line[2:].strip()
                if current:
                    out.append((title, "\n".join(current).strip()))
                current = None
            elif current is not None:
                current.append(line)
        if current:
            out.append((title, "\n".join(current).strip()))
    return [(t, s) for t, s in out if len(s.split()) >= 8]


def build(dest: Path, n: int, source: Path = DEFAULT_SOURCE) -> list[Path]:
    pool = sections(source)
    if not pool:
        raise SystemExit(f"no `##` sections found under {source}")
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        title, section = pool[i % len(pool)]
        unique = f"This page is number {i} of the handbook; its reference code is HB-{i:05d}-{(i * 7919) % 100003}."
        heading, _, body = section.partition("\n")
        text = f"# {title} ({i})\n\n{heading}\n\n{unique}\n\n{body.strip()}\n"
        path = dest / f"page-{i:05d}.md"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    args = parser.parse_args()
    paths = build(args.dest, args.docs, args.source)
    print(f"{len(paths)} pages under {args.dest}")


if __name__ == "__main__":
    main()
