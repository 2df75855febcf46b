"""A document's blocks split into sections, one per heading (plus the intro before the first)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_assets.vocabulary.markup import push_heading
from rag_assets.models import Block, BlockType


@dataclass
class _Section:
    heading_line: str  # "## Title", or "" before the first heading ("## A\n\n### B" when A has no body of its own)
    title: str  # the heading text; before the first heading, the page title (or "")
    breadcrumb: list[str]
    body: list[Block]


def _sections(blocks: list[Block], page_title: str) -> list[_Section]:
    # The intro before the first heading is about the page as a whole: it is filed under the title,
    # so it is not a chunk with no section (build_index_text does not repeat the title in the header).
    sections = [_Section("", page_title, [page_title] if page_title else [], [])]
    stack: list[tuple[int, str]] = []  # (level, text) from the top heading down
    first = next((b for b in blocks if b.type is BlockType.HEADING), None)
    if page_title and (first is None or (first.heading_level or 1) > 1):
        # No H1 opens the body: the site shows the title as the page's H1 (Docusaurus, Starlight,
        # Mintlify, MkDocs Material), so every breadcrumb starts with it ("Build > Building").
        stack.append((0, page_title))
    for block in blocks:
        if block.type is BlockType.HEADING:
            level = block.heading_level or 1
            title = push_heading(stack, level, block.text)
            line = f"{'#' * level} {block.text}".rstrip()  # the stored text keeps the source line
            last = sections[-1]
            if len(sections) > 1 and not last.body and last.title.casefold() != page_title.casefold():
                # A heading with nothing under it before this one (## Requirements, then ### Functional;
                # or a step whose only content was a picture): the reader sees both, so the first chunk
                # under this one says both. (The page's title as an H1 is the header's already.)
                line = f"{last.heading_line}\n\n{line}"
                sections.pop()
            sections.append(_Section(line, title, [t for _, t in stack], []))
        else:
            sections[-1].body.append(block)
    return sections
