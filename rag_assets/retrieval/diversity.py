"""Diversity of a ranked list: near-duplicates collapse to one result, and one page cannot fill it.

- A result whose section (same page, same heading path) or text (equal after case and whitespace
  folding: the same boilerplate on several pages) is already in the list is dropped: a section
  split into several chunks, or copied across pages, is one answer and takes one place.
- At most ``max_per_page`` results per page (``RAG_MAX_RESULTS_PER_PAGE``, 0 = no cap). Results
  past the cap are deferred, not dropped: they fill the list only when nothing else is left.

Measured on the three development corpora (benchmarks/retrieval_corpora.md): collapsing costs no
recall and lifts the distinct pages in a hybrid top 10 (3.6 -> 5.0 on the Claude docs); a cap of 4
adds ~0.8 page for at most 0.008 R@5; a cap of 2 costs up to 0.125 R@5.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from rag_assets.config import DEFAULTS

T = TypeVar("T")

DEFAULT_MAX_PER_PAGE: int = DEFAULTS["max_results_per_page"]  # RAG_MAX_RESULTS_PER_PAGE's


def diversify(
    ranked: Sequence[T],
    top_k: int,
    *,
    page: Callable[[T], str],
    section: Callable[[T], str],
    text: Callable[[T], str],
    max_per_page: int = DEFAULT_MAX_PER_PAGE,
    mates: dict[str, list[T]] | None = None,
) -> list[T]:
    """The first ``top_k`` results of ``ranked`` (best first) after collapsing and capping.

    ``mates``, when given, receives per section (``section(item)``) the items of it that collapsed
    into the first one, in ranked order, over the whole ranked list: the other places of a section
    the ranking found (a result's context reaches for them: windows.passages)."""
    if max_per_page < 0:
        raise ValueError(f"max_per_page must be >= 0, got {max_per_page}")
    kept: list[T] = []
    deferred: list[T] = []
    sections: set[str] = set()
    texts: set[str] = set()
    per_page: dict[str, int] = {}
    for item in ranked:
        if len(kept) >= top_k and mates is None:
            break
        s, t = section(item), text(item)
        if s in sections:
            if mates is not None:
                mates.setdefault(s, []).append(item)
            continue
        if len(kept) >= top_k or t in texts:
            continue
        sections.add(s)
        texts.add(t)
        p = page(item)
        if max_per_page and per_page.get(p, 0) >= max_per_page:
            deferred.append(item)
            continue
        per_page[p] = per_page.get(p, 0) + 1
        kept.append(item)
    return (kept + deferred)[:top_k]
