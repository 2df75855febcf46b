"""What a chunk embeds and keyword-indexes: the ``title > h1 > h2`` header within its budget, then the
indexable text (build_index_text, clip_heading)."""

from __future__ import annotations

from rag_assets.vocabulary.markup import indexable_text, strip_heading_attributes


# The header every chunk's embedded text starts with has a budget: a 1,200-character H1 repeated in
# front of every chunk would leave the body no room in the model's 256 word pieces (it would be cut
# off) and would shred the page into tiny chunks. Each title or heading keeps its first
# HEADER_ENTRY_MAX_CHARS characters, the whole header its first HEADER_MAX_CHARS (~80 tokens, under a
# third of the model's input). Characters, not tokens, so every reader of stored metadata (the keyword
# index) rebuilds exactly the embedded text without a tokenizer, and a 1 MB title costs nothing.
HEADER_ENTRY_MAX_CHARS = 160
HEADER_MAX_CHARS = 320


def clip_heading(text: str, limit: int = HEADER_ENTRY_MAX_CHARS) -> str:
    """A title or heading cut to `limit` characters at a word boundary, with an ellipsis."""
    flat = " ".join(text[: limit * 4].split())  # never splits a huge string in full
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2:] else cut) + "…"


def build_index_text(title: str, breadcrumb: list[str], text: str) -> str:
    """What is embedded and keyword-indexed: ``title > h1 > h2`` header, blank line, chunk text.

    Markup that is not prose (heading attributes, include directives: rag_assets.vocabulary.markup) is
    left out; the header keeps within its budget (HEADER_ENTRY_MAX_CHARS, HEADER_MAX_CHARS).
    """
    title = clip_heading(strip_heading_attributes(title[: HEADER_ENTRY_MAX_CHARS * 4]))
    text = indexable_text(text)
    parts = [title] if title else []
    for entry in breadcrumb:
        entry = clip_heading(strip_heading_attributes(entry[: HEADER_ENTRY_MAX_CHARS * 4]))
        # The page's H1 usually repeats the title; saying it twice only skews both retrievers.
        if entry and entry.casefold() != title.casefold():
            parts.append(entry)
    header = clip_heading(" > ".join(parts), HEADER_MAX_CHARS)
    return f"{header}\n\n{text}" if header and text else header or text


def _clip_heading_line(line: str) -> str:
    """`## A very long heading…`: the markdown heading repeated in a chunk's text, within budget."""
    marks, _, rest = line.partition(" ")
    if not marks.strip("#") and rest:
        return f"{marks} {clip_heading(rest)}"
    return clip_heading(line)
