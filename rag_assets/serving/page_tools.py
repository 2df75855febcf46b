"""Pages for an agent, in answers that fit its context: list_pages and the page resources a part at a
time (a cursor goes on from the last page listed; the count of the whole comes with each part), and
read_page of a long page a part at a time (each part ends with the offset of the next).

Why bounded: two small sites are 331 pages; listed whole with their sections they were 143 KB in one
answer, and a long page read whole can be more. A part stops at LIST_BUDGET_BYTES of pages (or the
`limit` asked for) and READ_CHARS characters of text."""

from __future__ import annotations

import json
from typing import Any, Iterator
from urllib.parse import quote

from rag_assets.serving.requests import BadRequest, ListRequest, PageRequest, encode_cursor
from rag_assets.serving.service import IndexService

LIST_BUDGET_BYTES = 8_000  # of page entries in one list_pages answer (the answer repeats them as text: ~17 KB)
SECTIONS_LISTED = 12  # section headings a page entry names (more: read_page lists them)
READ_CHARS = 12_000  # characters of a page in one read_page answer (~3,000 tokens)
RESOURCES_PER_LIST = 100  # page resources in one resources/list answer


def page_uri(corpus: str, path: str) -> str:
    return f"rag://{corpus}/{quote(path, safe='/')}"


def read(service: IndexService, request: PageRequest) -> str:
    """The page, or one of its sections, from `offset` on: at most READ_CHARS characters, cut at a
    paragraph, then a line saying what is left and the offset to ask for."""
    corpus = request.corpus or service.default_corpus
    page = service.catalog(corpus).page(request.path)
    if page is None:
        raise BadRequest(f"no page {request.path!r} in corpus {corpus} (list_pages lists them)")
    text = page.text()
    if request.section is not None and request.section.strip():
        text = page.section_text(request.section)
        if text is None:
            names = ", ".join(s.anchor for s in page.sections if s.anchor) or "none"
            raise BadRequest(f"page {page.path} has no section {request.section!r} (its sections: {names})")
    if request.offset > len(text):
        raise BadRequest(f"offset must be at most {len(text)} (the length of {page.path}"
                         f"{' > ' + request.section if request.section else ''}), got {request.offset}")
    end = _cut(text, request.offset, READ_CHARS)
    part = text[request.offset:end]
    if end < len(text):
        part += (f"\n\n[{page.path}: characters {request.offset:,}-{end:,} of {len(text):,} shown; "
                 f"read_page with offset={end} reads on]")
    return part


def _cut(text: str, start: int, most: int) -> int:
    """Where a part of at most `most` characters from `start` ends: at a paragraph break in its second
    half when there is one, else at a line break, else at `most`."""
    end = start + most
    if end >= len(text):
        return len(text)
    for mark in ("\n\n", "\n"):
        at = text.rfind(mark, start + most // 2, end)
        if at > start:
            return at + len(mark)
    return end


def listing(service: IndexService, request: ListRequest) -> dict[str, Any]:
    """One part of the page list: the pages after the cursor, up to `limit` or LIST_BUDGET_BYTES of
    entries; `total`: the pages of the whole list (corpus and prefix applied); `next_cursor`: where
    the next part starts (None: this is the last)."""
    names = [request.corpus] if request.corpus else service.names
    for name in names:
        service.settings(name)  # an unknown corpus: UnknownCorpus before any work
    prefix = (request.prefix or "").strip().lstrip("/")
    every = list(_pages(service, names, prefix))
    start = _key(names, request.after) if request.after else None
    rest = [(name, page) for name, page in every if start is None or _key(names, (name, page.path)) > start]
    pages: list[dict[str, Any]] = []
    used = 0
    for name, page in rest:
        sections = [s.heading for s in page.sections if s.heading]
        entry = {"corpus": name, "path": page.path, "title": page.title, "uri": page_uri(name, page.path),
                 "sections": sections[:SECTIONS_LISTED]}
        if len(sections) > SECTIONS_LISTED:
            entry["more_sections"] = len(sections) - SECTIONS_LISTED
        size = len(json.dumps(entry, ensure_ascii=False))
        if len(pages) >= request.limit or (pages and used + size > LIST_BUDGET_BYTES):
            break
        pages.append(entry)
        used += size
    more = len(pages) < len(rest)
    return {"corpora": [{"name": row["name"], "pages": row["pages"], "default": row["default"]}
                        for row in service.corpora() if row["name"] in names],
            "pages": pages, "total": len(every),
            "next_cursor": encode_cursor(pages[-1]["corpus"], pages[-1]["path"]) if more and pages else None}


def _key(names: list[str], at: tuple[str, str]) -> tuple[int, str]:
    """A page's place in the list: its corpus's place, then its path."""
    corpus, path = at
    return (names.index(corpus) if corpus in names else -1, path)


def _pages(service: IndexService, names: list[str], prefix: str) -> Iterator:
    """(corpus, page) of these corpora in list order (corpus, then path), the prefix applied."""
    for name in names:
        for page in service.catalog(name).pages().values():
            if not prefix or page.path.startswith(prefix):
                yield name, page


def resources(service: IndexService, cursor: tuple[str, str] | None) -> tuple[list[dict[str, Any]], str | None]:
    """One part of the page resources (RESOURCES_PER_LIST) after the cursor, and the next cursor."""
    names = service.names
    start = _key(names, cursor) if cursor else None
    out, last, more = [], None, False
    for name, page in _pages(service, names, ""):
        if start is not None and _key(names, (name, page.path)) <= start:
            continue
        if len(out) >= RESOURCES_PER_LIST:
            more = True
            break
        out.append({"uri": page_uri(name, page.path), "name": f"{name}:{page.path}", "title": page.title or None,
                    "mime_type": "text/markdown", "description": f"{page.title or page.path} ({name})"})
        last = (name, page.path)
    return out, (encode_cursor(*last) if more and last else None)
