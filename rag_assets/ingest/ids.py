"""Deterministic chunk ids and content hashes.

content_hash = sha-256 (hex) of the chunk's index text, the exact string that is embedded and
keyword-indexed. It keys the embedding cache: the same text is never embedded twice per model.

chunk_id = "{doc_key}-{first 24 hex digits of sha-256("{doc_path}\\0{content_hash}\\0{occurrence}")}",
where doc_key = the first 12 hex digits of sha-256(doc_path) and occurrence counts earlier chunks of
the same document with the same content hash (0 once distinct_chunks has run).
Ids are content-addressed rather than positional, so editing one section of a document keeps the
ids of every other chunk: only the changed chunks are written and only the vanished ones deleted.
The doc_key prefix says which document a vector belongs to from its id alone, so the store can be
reconciled against the folder by listing ids (no metadata read).
"""

from __future__ import annotations

import hashlib
from collections import Counter

from rag_assets.models import Chunk


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


DOC_KEY_CHARS = 12


def doc_key(doc_path: str) -> str:
    return hashlib.sha256(doc_path.encode()).hexdigest()[:DOC_KEY_CHARS]


def chunk_id(doc_path: str, chunk_content_hash: str, occurrence: int = 0) -> str:
    digest = hashlib.sha256(f"{doc_path}\0{chunk_content_hash}\0{occurrence}".encode()).hexdigest()[:24]
    return f"{doc_key(doc_path)}-{digest}"


def doc_key_of(chunk_id_: str) -> str | None:
    """The document key a chunk id starts with; None for an id of another scheme (older indexes)."""
    key, sep, _ = chunk_id_.partition("-")
    return key if sep and len(key) == DOC_KEY_CHARS else None


def assign_ids(chunks: list[Chunk]) -> list[Chunk]:
    """Fill content_hash and chunk_id on chunks of ONE document, in place; returns them."""
    seen: Counter[str] = Counter()
    for chunk in chunks:
        chunk.content_hash = content_hash(chunk.index_text or chunk.text)
        chunk.chunk_id = chunk_id(chunk.doc_path, chunk.content_hash, seen[chunk.content_hash])
        seen[chunk.content_hash] += 1
    return chunks


def distinct_chunks(chunks: list[Chunk]) -> list[Chunk]:
    """Drop later copies of a text within ONE document (after assign_ids) and renumber.

    A page of 200 identical paragraphs would otherwise put 200 identical vectors into the HNSW
    index, where they crowd the neighbourhood of their text and hide other documents' chunks from
    vector search. One copy finds the page just as well."""
    seen: set[str] = set()
    kept = [c for c in chunks if not (c.content_hash in seen or seen.add(c.content_hash))]
    for index, chunk in enumerate(kept):
        chunk.chunk_index = index
    return kept
