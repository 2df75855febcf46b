"""Hybrid retrieval and a keyword-only hit: an exact rare term the embedder does not rank.

One page mentions the part number XQ-7734-Z, in a context unrelated to the rest of the question.
Dense retrieval ranks that page outside its top k, BM25 ranks it first or close to it; the default
hybrid ranking should still return it within the top k.

- ``streaming``: the question's other words match other pages, so BM25 returns several hits.
- ``code alone``: the question is the code, next to look-alike codes the embedder confuses it
  with; BM25 returns exactly one hit.
- ``both lists like other pages``: the other pages are ranked well by BOTH lists. Rank fusion
  (RAG_FUSION=rrf) lets their summed votes beat the page only BM25 ranks first, by a hair here
  (BM25 1.82 vs 1.79: no clear margin for its confident-hit guard). With the header counted more in
  BM25 (RAG_KEYWORD_HEADING_REPEATS) the streaming pages' headings draw level with the code's page
  (2.16 vs 2.15) and z-scored convex fusion alone no longer keeps it either; the rare-term guard
  (fusion.RARE_TERM_MAX_CHUNKS: only this chunk holds "xq" and "7734") does. With the header counted
  three more times, "Errors while streaming" passes it even in BM25's own list (2.22 vs 2.19), which
  is why the guard looks at BM25's first three, not only its first.
"""

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.retrieval.retriever import Retriever
from rag_assets.index.chroma_store import ChromaStore
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index

RARE = "XQ-7734-Z"
TARGET = "parts/pump-seals.md"
TOP_K = 3

PUMP = {
    TARGET: f"""# Spare parts

## Pump seals

The replacement seal for the garden irrigation pump is catalogued as {RARE}. Order two seals
when the pump starts to drip, and keep one spare in the shed over winter.
""",
}
STREAMING = {
    "guide/events.md": """# Event types

## Streaming event flow

A streamed response starts with message_start, continues with content_block_start, a series of
content_block_delta events carrying the text, content_block_stop, and ends with message_stop.
""",
    "guide/sdk-streaming.md": """# Streaming with the SDKs

## Python and TypeScript helpers

The Python and TypeScript SDKs expose stream helpers that read server-sent events for you and
yield text deltas as they arrive, so you can print a response while it is being generated.
""",
    "guide/errors.md": """# Errors while streaming

## Error events

If an error happens after a stream has started, the API sends an error event inside the event
stream instead of an HTTP status code; handle it like any other server-sent event.
""",
}
# look-alike codes: close to the rare code for the embedder, no BM25 term in common (xq, 7734)
LOOKALIKES = {
    f"codes/code-{i}.md": f"# Code {code}\n\n## About {code}\n\nThe identifier {code} is a reference code. "
    f"Look up {code} in the index of codes.\n"
    for i, code in enumerate(["XR-7735-Y", "XZ-7743-Q", "QX-4477-Z", "XK-7730-V", "XV-7374-Z", "XP-3477-W",
                              "XT-7784-J", "XW-7934-Z", "XB-7714-K", "XE-7764-L", "XU-7737-Z", "XF-1773-M"])
}
STREAMING_QUERY = f"Does the streaming API support {RARE}?"
CODE_QUERY = f"What is {RARE}?"


@pytest.fixture(scope="module")
def embedder():
    return load_embedder(Settings.from_env({}).embedding)


def _retriever(rag_env, embedder, docs: dict[str, str]) -> Retriever:
    write_corpus(rag_env / "docs", docs)
    settings = Settings.from_env()
    build_index(None, settings, embedder=embedder)
    store = ChromaStore(path=settings.chroma_path, collection=settings.collection,
                        embedding_model=embedder.model_name, dimension=embedder.dimension)
    return Retriever(embedder, store, settings)


def _check(retriever: Retriever, query: str) -> None:
    dense = [r.doc_path for r in retriever.search(query, "vector", TOP_K)]
    keyword = [r.doc_path for r in retriever.search(query, "keyword", TOP_K)]
    retrieval = retriever.retrieve(query, "hybrid", TOP_K)
    hybrid = [r.doc_path for r in retrieval.results]
    # the premise: the embedder misses the page, BM25 ranks it in its top k (first, or passed by a
    # hair by a page whose heading holds the question's common words)
    assert TARGET not in dense, (query, dense)
    assert TARGET in keyword, (query, keyword)
    # the property: fusion keeps the keyword-only hit in the top k, next to dense's best
    assert retrieval.fallback_used is False
    assert TARGET in hybrid, (query, hybrid, retrieval.weights)
    assert dense[0] in hybrid, (query, hybrid, dense)
    hit = next(r for r in retrieval.results if r.doc_path == TARGET)
    assert RARE in hit.text and hit.relevance is not None


def test_rare_term_with_common_words_is_kept_by_hybrid(rag_env, embedder):
    _check(_retriever(rag_env, embedder, {**PUMP, **STREAMING}), STREAMING_QUERY)


def test_rare_term_alone_single_bm25_hit_is_kept_by_hybrid(rag_env, embedder):
    retriever = _retriever(rag_env, embedder, {**PUMP, **LOOKALIKES})
    assert len(retriever.search(CODE_QUERY, "keyword", 10)) == 1
    _check(retriever, CODE_QUERY)


def test_rare_term_kept_when_both_lists_like_other_pages(rag_env, embedder):
    assert Settings.from_env().fusion == "convex"  # the default
    _check(_retriever(rag_env, embedder, {**PUMP, **STREAMING, **LOOKALIKES}), STREAMING_QUERY)
