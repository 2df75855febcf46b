from rag_assets.retrieval.across import merge_rankings
from rag_assets.retrieval.retriever import SearchResult


def results(prefix: str, relevances: list[float]) -> list[SearchResult]:
    return [SearchResult(chunk_id=f"{prefix}{i}", doc_path=f"{prefix}/{i}.md", section="", heading_breadcrumb="",
                         text="t", score=10.0 - i, relevance=r) for i, r in enumerate(relevances)]


def test_the_corpus_that_answers_comes_first_and_keeps_its_order():
    merged = merge_rankings({"rules": results("r", [0.62, 0.55, 0.50]), "faq": results("f", [0.21, 0.20, 0.19])}, 4)
    assert [h.result.chunk_id for h in merged] == ["r0", "r1", "r2", "f0"]
    assert merged[0].corpus == "rules" and merged[0].score > merged[-1].score


def test_two_corpora_that_both_answer_interleave():
    merged = merge_rankings({"a": results("a", [0.60, 0.58]), "b": results("b", [0.59, 0.57])}, 4)
    assert [h.corpus for h in merged] == ["a", "b", "a", "b"]


def test_different_models_fall_back_to_reciprocal_ranks():
    merged = merge_rankings({"a": results("a", [0.9, 0.8]), "b": results("b", [0.1, 0.1])}, 2, same_model=False)
    assert {h.result.chunk_id for h in merged} == {"a0", "b0"}


def test_raw_scores_do_not_decide():
    a = results("a", [0.3])
    a[0].score = 1000.0  # a BM25 score of another scale
    merged = merge_rankings({"a": a, "b": results("b", [0.6])}, 2)
    assert merged[0].corpus == "b"
