"""The pages of one corpus as its index holds them: each page's chunks in order (chunk_index), its
title, and its sections with their heading path and anchor — what the MCP tools and resources list
and read. Built from the chunks of the search snapshot once per index generation (a long-lived
server follows ingests: the next read after a change sees the new pages, never a mix of two)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable

from rag_assets.retrieval.result_fields import anchor

__all__ = ["PageCatalog", "Page", "Section", "anchor"]


@dataclass(frozen=True)
class Section:
    heading: str  # the section's own heading ("" for the text before the first heading)
    breadcrumb: str  # "Page > Section > Subsection"
    anchor: str


@dataclass
class Page:
    path: str
    title: str
    chunks: list[tuple[int, str, str, str]] = field(default_factory=list)  # (chunk_index, section, breadcrumb, text)

    @property
    def sections(self) -> list[Section]:
        seen: dict[str, Section] = {}
        for _, section, crumb, _ in self.chunks:
            if crumb not in seen:
                seen[crumb] = Section(section, crumb, anchor(section))
        return list(seen.values())

    def text(self) -> str:
        return "\n\n".join(text.strip() for *_, text in self.chunks)

    def section_text(self, wanted: str) -> str | None:
        """The text of one section and its subsections: `wanted` is its anchor, its heading or its
        heading path (case-insensitive); None when the page has no such section."""
        key = wanted.strip().lstrip("#").strip().lower()
        match = next((s for s in self.sections if key in (s.anchor, s.heading.lower(), s.breadcrumb.lower())), None)
        if match is None or not key:
            return None
        inside = [text.strip() for _, _, crumb, text in self.chunks
                  if crumb == match.breadcrumb or crumb.startswith(match.breadcrumb + " > ")]
        return "\n\n".join(inside)


class PageCatalog:
    """The pages of one corpus's index, rebuilt when the index generation moves.

    generation(): the index generation now; chunks(): every stored chunk as (id, text, metadata).
    """

    def __init__(self, generation: Callable[[], str], chunks: Callable[[], Iterable[tuple[str, str, dict]]]):
        self._generation = generation
        self._chunks = chunks
        self._lock = threading.Lock()
        self._built_for: str | None = None
        self._pages: dict[str, Page] = {}

    def pages(self) -> dict[str, Page]:
        generation = self._generation()
        with self._lock:
            if generation != self._built_for:
                self._pages = _pages(self._chunks())
                self._built_for = generation
            return self._pages

    def page(self, path: str) -> Page | None:
        pages = self.pages()
        key = path.strip().lstrip("/")
        return pages.get(key) or next((p for p in pages.values()
                                       if p.path.removesuffix(".md").removesuffix(".mdx") == key), None)


def _pages(chunks: Iterable[tuple[str, str, dict]]) -> dict[str, Page]:
    pages: dict[str, Page] = {}
    for _id, text, meta in chunks:
        meta = meta or {}
        path = str(meta.get("doc_path") or "")
        if not path or text is None:
            continue
        page = pages.get(path)
        if page is None:
            page = pages[path] = Page(path, str(meta.get("title") or ""))
        page.chunks.append((int(meta.get("chunk_index") or 0), str(meta.get("section") or ""),
                            str(meta.get("heading_breadcrumb") or ""), text))
    for page in pages.values():
        page.chunks.sort(key=lambda c: c[0])
    return dict(sorted(pages.items()))
