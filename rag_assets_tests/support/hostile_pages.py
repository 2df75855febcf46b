"""Pages that attack the cost of ingesting them (issue 36, items 1 and 6), written as an attacker wrote
them: a snippet expansion bomb, a multi-megabyte MDX page on one line, one very large section.

Each builder writes files under a docs folder and returns the doc_path of the hostile page.
"""

from __future__ import annotations

from pathlib import Path

NORMAL_PAGE = "normal.md"
NORMAL_TEXT = "# Normal page\n\nThe harbour master logs every ferry that docks after midnight.\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def normal_page(root: Path) -> str:
    write(root, NORMAL_PAGE, NORMAL_TEXT)
    return NORMAL_PAGE


def snippet_bomb(root: Path, uses: int = 8, levels: int = 5, page: str = "bomb.mdx") -> str:
    """Six snippet files (818 bytes in all with the defaults), each using the next `uses` times, `levels`
    deep, and a page that uses the first `uses` times: 299,592 snippet expansions and megabytes of text
    if expanded, 262,144 warnings if the last level is refused one use at a time."""
    texts = [f"import S{k + 1} from '/snippets/s{k + 1}.mdx';\n\nLevel {k}.\n\n" + f"<S{k + 1} />\n" * uses
             for k in range(1, levels + 1)]
    bottom = "The bottom of the bomb, shown once for every path down to it. "
    room = max(len(bottom), 818 - sum(len(t) for t in texts) - 1)  # 818 bytes in all, as reported
    texts.append((bottom * (room // len(bottom) + 1))[:room] + "\n")
    for k, text in enumerate(texts, start=1):
        write(root, f"snippets/s{k}.mdx", text)
    write(root, page, "---\ntitle: Bomb\n---\nimport S1 from '/snippets/s1.mdx';\n\n" + "<S1 />\n" * uses)
    return page


def single_line_mdx(root: Path, size: int, page: str = "one-line.mdx") -> str:
    """An MDX page of `size` bytes on one line: text between inline components, as a minified
    export or a generated page may hold (4.8 MB of it never finished parsing)."""
    unit = 'Step <Badge color="blue">beta</Badge> then <Tooltip tip="x">y</Tooltip> done. '
    write(root, page, "---\ntitle: One line\n---\n" + unit * max(1, size // len(unit)) + "\n")
    return page


def big_section(root: Path, size: int, page: str = "big-section.md") -> str:
    """One section of `size` bytes: short paragraphs under a single heading, nothing to cut it at."""
    paragraphs = []
    n, length = 0, 0
    while length < size:
        text = f"Paragraph {n} says the valve {n % 97} opens at {n % 13} bar and closes at {n % 7}.\n\n"
        paragraphs.append(text)
        length += len(text)
        n += 1
    write(root, page, "# Big section\n\n## The only section\n\n" + "".join(paragraphs))
    return page


def _repeat(unit: str, size: int, head: str = "# Page\n\n") -> str:
    return head + unit * max(1, size // len(unit)) + "\n"


# name -> (page text of about `size` bytes, the n a linearity check runs at): shapes that held a step
# quadratic in the page's size (issue 36, item 6), each at an n where that step made 4n cost 9-15x n
LINEARITY_SHAPES = {
    # MDX: inline tags on one line (the line's ends were looked for from every tag)
    "tags on one line": (lambda size: _repeat('Step <Badge color="blue">beta</Badge> then <Tooltip tip="x">y</Tooltip>. ', size), 200_000),
    # chunking: one section of short paragraphs (the include-directive look read the whole block per unit)
    "one big section": (lambda size: _repeat("The valve opens at a pressure of two bar and closes again.\n\n", size, "# P\n\n## Only\n\n"), 50_000),
    # MDX: HTML comments on one line (each looked for code spans from the line's start)
    "comments on one line": (lambda size: _repeat("<!-- c --> x ", size), 50_000),
    # chunking: one long paragraph of inline markup, cut into pieces (each looked for $$ in the whole block)
    "one long paragraph": (lambda size: _repeat("[a](b) *c* `d` ", size), 50_000),
    # MDX: code spans and almost-tags in one paragraph
    "code spans": (lambda size: _repeat("`a` and `` b `` or <A {x} ", size), 50_000),
}


def page_path_cpu_seconds(folder: Path, text: str, repeats: int = 2) -> float:
    """CPU seconds (best of `repeats`, this process only, no garbage collection in between) of one page
    through the whole per-page path: read, frontmatter, MDX and snippets, metadata, split, chunk, ids."""
    import gc
    import logging
    import time

    from rag_assets.ingest import document_metadata, frontmatter, ids, markdown, snippets
    from rag_assets.ingest.chunking import ChunkingConfig, chunk_document
    from rag_assets.ingest.discovery import discover
    from rag_assets.ingest.tokens import TokenCounter

    write(folder, "page.mdx", text)
    ref = discover(folder, max_file_bytes=10 * len(text) + 10_000).documents[0]
    counter = TokenCounter.for_name("cl100k_base", folder.parent / "tiktoken")
    best = float("inf")
    logging.disable(logging.WARNING)
    try:
        for _ in range(repeats):
            gc.collect()
            gc.disable()
            try:
                started = time.process_time()
                doc, _ = snippets.render_page(frontmatter.read_document(ref), ref, ref.size_bytes * 10)
                doc = document_metadata.complete(doc, ref, document_metadata.MetadataPolicy(), [])
                chunks = chunk_document(doc, markdown.split_markdown(doc.body), counter, ChunkingConfig())
                ids.distinct_chunks(ids.assign_ids(chunks))
                best = min(best, time.process_time() - started)
            finally:
                gc.enable()
    finally:
        logging.disable(logging.NOTSET)
    return best
