"""The rendered MDX's lines put back together (rag_assets.ingest.mdx): each run of lines that sat inside a
component dedented together, the lines the renderer inserted kept as they are, blank runs made one; and
a snippet's frontmatter taken off before it is rendered."""

from __future__ import annotations

from rag_assets.ingest.mdx_esm import fence_step

# A line the renderer inserted (an admonition fence for a callout): not part of the children's
# indentation, marked until the dedent is done.
MARK = "\x00"


def without_frontmatter(text: str) -> str:
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end >= 0:
            newline = text.find("\n", end + 4)
            return text[newline + 1 :] if newline >= 0 else ""
    return text


def assemble(lines: list[tuple[str, bool, bool]]) -> str:
    """The output lines joined: each run of lines that sat inside a component dedented together
    (relative indents kept, inserted marker lines not counted), then, outside fenced code, lines a
    removed tag left blank made empty and runs of blank lines made one."""
    dedented: list[str] = []
    run: list[str] = []

    def flush() -> None:
        margin = _common_indent([line for line in run if not line.startswith(MARK)])
        dedented.extend(line[1:] if line.startswith(MARK) else line[margin:] for line in run)
        run.clear()

    for line, inside, _ in lines:
        if inside:
            run.append(line)
            continue
        flush()
        dedented.append(line.removeprefix(MARK))
    flush()
    out: list[str] = []
    fence: tuple[str, int, int] | None = None
    for line in dedented:
        fence, is_code = fence_step(fence, line)
        if not is_code and not line.strip():
            if not out or not out[-1]:
                continue  # no leading blank line, no run of them
            line = ""
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _common_indent(lines: list[str]) -> int:
    widths = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    return min(widths, default=0)
