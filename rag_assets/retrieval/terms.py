"""The search terms and keys of a stored chunk: what the search snapshot (snapshot.py) indexes and
the evaluation counts, the same for chunks and queries.

``tokenize``: casefold, words of two or more characters, snake_case/dotted identifiers also split into
their parts, English stopwords dropped, Snowball English stemming. ``chunk_index_text`` rebuilds the
text a chunk was embedded from out of its stored metadata (rag_assets.vocabulary.index_text), and
``chunk_headings_text`` its ``title > h1 > h2`` header alone. ``section_key`` and ``text_key`` name a
chunk's section and its normalised text (diversity, duplicates, context windows).
"""

from __future__ import annotations

import hashlib
import re

from rag_assets.vocabulary.index_text import build_index_text

_WORD = re.compile(r"\w+", re.UNICODE)
_SUBWORD_SPLIT = re.compile(r"[_]+")
# bm25s' English list plus a few question words that carry no topic (what/how/...)
_STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there
    these they this to was will with what which who whom how why when where do does did can could
    i you your we our my me us its it's""".split()
)


class _Stemmer:
    """PyStemmer's English Snowball stemmer with a per-process word cache."""

    def __init__(self) -> None:
        import Stemmer

        self._stemmer = Stemmer.Stemmer("english")
        self._stemmer.maxCacheSize = 100_000

    def __call__(self, words: list[str]) -> list[str]:
        return self._stemmer.stemWords(words)


_STEMMER: _Stemmer | None = None


def tokenize(text: str) -> list[str]:
    """Text -> BM25 terms (see the module docstring). Deterministic; the same for chunks and queries."""
    global _STEMMER
    if _STEMMER is None:
        _STEMMER = _Stemmer()
    words: list[str] = []
    for word in _WORD.findall(text.casefold()):
        parts = [p for p in _SUBWORD_SPLIT.split(word) if p]
        if len(parts) > 1:  # content_block_delta -> content_block_delta, content, block, delta
            words.append(word.strip("_"))
        words.extend(parts)
    words = [w for w in words if len(w) > 1 and w not in _STOPWORDS]
    return _STEMMER(words) if words else []


def _breadcrumb(metadata: dict) -> list[str]:
    crumb = str(metadata.get("heading_breadcrumb") or "")
    return [p for p in crumb.split(" > ") if p] if crumb else []


def chunk_index_text(text: str, metadata: dict) -> str:
    """The text a stored chunk was embedded from, rebuilt from its stored metadata."""
    return build_index_text(str(metadata.get("title") or ""), _breadcrumb(metadata), text or "")


def chunk_headings_text(metadata: dict) -> str:
    """A chunk's ``title > h1 > h2`` header alone (what the heading index holds)."""
    return build_index_text(str(metadata.get("title") or ""), _breadcrumb(metadata), "")


def text_key(text: str) -> str:
    """Equal for chunk texts that differ only in case and whitespace (duplicate detection)."""
    return hashlib.sha1(" ".join((text or "").split()).casefold().encode("utf-8")).hexdigest()[:16]


def section_key(metadata: dict) -> str:
    """One value per section of one page: doc_path + the heading path."""
    return f"{metadata.get('doc_path', '')}#{metadata.get('heading_breadcrumb', '')}"
