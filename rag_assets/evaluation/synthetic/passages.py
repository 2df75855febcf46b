"""A document cut into passages (a section, or a paragraph of a page without headings), each with the
document's own vocabulary around it (Passage.context: the novel words a question may bring)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from rag_assets.evaluation.synthetic.tuning import MIN_WORDS
from rag_assets.evaluation.synthetic.words import _PARAGRAPH_BREAK, _prose_like, content_words, plain_text, words_of
from rag_assets.models import Block, BlockType
from rag_assets.vocabulary.markup import push_heading, strip_heading_attributes


@dataclass(frozen=True)
class Passage:
    """One unit a question is asked about."""

    doc_path: str
    key: str  # stable within the document: the heading path, or "p<N>" for a paragraph
    section: str | None  # the heading (as chunking names the section); None in a document without headings
    breadcrumb: tuple[str, ...]
    title: str
    text: str  # the passage's prose, markdown as in the file (a span is cut from it verbatim)
    has_heading: bool  # a section under a real heading (not the intro filed under the page title)
    # words of the same document that this passage does not use, most frequent first: the topic's
    # vocabulary a user brings to a question (see NOVEL_WORDS)
    context: tuple[str, ...] = ()

    @property
    def uid(self) -> str:
        return f"{self.doc_path}#{self.key}"


_PROSE_TYPES = (BlockType.PROSE, BlockType.ADMONITION)


def document_passages(doc_path: str, title: str, blocks: Sequence[Block]) -> list[Passage]:
    """The passages of one document worth a question (MIN_WORDS words of prose or more)."""
    title = strip_heading_attributes(title or "")
    if not any(b.type is BlockType.HEADING for b in blocks):
        out = []
        for i, block in enumerate(blocks):
            if block.type not in _PROSE_TYPES:
                continue
            for j, paragraph in enumerate(_PARAGRAPH_BREAK.split(block.text)):
                if len(words_of(plain_text(paragraph))) >= MIN_WORDS and _prose_like(plain_text(paragraph)):
                    out.append(Passage(doc_path, f"p{i}.{j}", None, (), title, paragraph.strip(), False))
        return _with_context(out, title)
    sections: list[tuple[str, tuple[str, ...], bool, list[Block]]] = [(title, (title,) if title else (), False, [])]
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.type is BlockType.HEADING:
            heading = push_heading(stack, block.heading_level or 1, block.text)
            sections.append((heading, tuple(h for _, h in stack), True, []))
        else:
            sections[-1][3].append(block)
    out = []
    seen: dict[str, int] = {}
    for heading, crumb, real, body in sections:
        prose = "\n\n".join(b.text for b in body if b.type in _PROSE_TYPES)
        if not heading.strip() or len(words_of(plain_text(prose))) < MIN_WORDS:
            continue
        key = " > ".join(crumb) or heading
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key} ({seen[key]})"
        out.append(Passage(doc_path, key, heading, crumb, title, prose, real))
    return _with_context(out, title)


def _stems(text: str) -> set[str]:
    from rag_assets.retrieval.terms import tokenize  # the search snapshot's own terms (stemmed)

    return set(tokenize(text))


def _with_context(passages: list[Passage], title: str, limit: int = 30) -> list[Passage]:
    """Each passage with the document's frequent words (2+ uses, 4+ letters) that it does not use itself."""
    counts: dict[str, int] = {}
    for text in [title, *(p.text for p in passages)]:
        for word in content_words(plain_text(text)):
            if word.isalpha() and len(word) >= 4:
                counts[word.casefold()] = counts.get(word.casefold(), 0) + 1
    frequent = [w for w, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2]
    out = []
    for p in passages:
        own = _stems(plain_text(p.text) + " " + " ".join(p.breadcrumb))
        context = tuple(w for w in frequent if not (_stems(w) & own))[:limit]
        out.append(replace(p, context=context))
    return out


def passage_of(doc_path: str, candidate: dict) -> Passage:
    """The passage a cached candidate was made from (its text cut to LLM_PASSAGE_CHARS)."""
    p = candidate["passage"]
    return Passage(doc_path, p["key"], p["section"], tuple(p["breadcrumb"]), p["title"], p["text"],
                   p["section"] is not None)
