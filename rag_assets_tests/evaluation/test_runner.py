"""The runner over a fake search: metric values, ragas offline agreement, skip reasons, saving."""

import json
import math

import pandas as pd
import pytest

from rag_assets.evaluation import ragas_scores
from rag_assets.evaluation.evalset import EvalQuestion, ExpectedSource
from rag_assets.evaluation.runner import evaluate_retrieval
from rag_assets.retrieval.retriever import SearchResult


def R(doc, section, text="text", breadcrumb=None, score=1.0):
    return SearchResult(f"{doc}#{section}#{text[:8]}", doc, section, breadcrumb or section, text, score)


QUESTIONS = [
    EvalQuestion("q1", "alpha?", (ExpectedSource("a.md", "A1"), ExpectedSource("b.md", "B1"))),
    EvalQuestion("q2", "beta?", (ExpectedSource("c.md", "C1"),)),
    EvalQuestion("q3", "gamma?", (ExpectedSource("a.md", "Parent"),)),  # matched via breadcrumb
    EvalQuestion("q4", "delta?", (ExpectedSource("d.md", "D1"),)),  # no results in mode "good"
]

RESULTS = {
    "good": {
        "alpha?": [R("a.md", "A1"), R("a.md", "A1", "second chunk"), R("x.md", "X"), R("b.md", "B1")],
        "beta?": [R("x.md", "X"), R("c.md", "C1")],
        "gamma?": [R("a.md", "Child", breadcrumb="Parent > Child")],
        "delta?": [],
    },
    "bad": {q: [R("x.md", "X"), R("y.md", "Y")] for q in ("alpha?", "beta?", "gamma?", "delta?")},
}


def fake_search(question, mode, top_k):
    if question == "delta?" and mode == "bad":
        raise RuntimeError("index offline")
    return RESULTS[mode][question]


@pytest.fixture(scope="module")
def report():
    return evaluate_retrieval(QUESTIONS, fake_search, modes=("good", "bad"), top_k=10, llm_config=None)


def test_metrics_per_mode(report):
    good = report.metrics["good"]
    # q1: units a#a1, x#x, b#b1 -> rr 1, recall@1 .5, recall@3 1; q2: rr .5; q3: rr 1; q4: no results
    assert good["section.mrr@10"] == pytest.approx((1 + 0.5 + 1 + 0) / 4)
    assert good["section.recall@1"] == pytest.approx((0.5 + 0 + 1 + 0) / 4)
    assert good["section.recall@3"] == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert good["section.precision@3"] == pytest.approx((2 / 3 + 1 / 3 + 1 / 3 + 0) / 4)
    assert good["section.precision_retrieved@10"] == pytest.approx((2 / 3 + 1 / 2 + 1 + 0) / 4)
    assert good["document.recall@1"] == pytest.approx((0.5 + 0 + 1 + 0) / 4)
    assert good["questions"] == 4 and good["search_errors"] == 0
    bad = report.metrics["bad"]
    assert bad["section.hit@10"] == 0.0 and bad["search_errors"] == 1
    row = report.rows[(report.rows["mode"] == "bad") & (report.rows["question_id"] == "q4")].iloc[0]
    assert "index offline" in row["error"] and row["n_results"] == 0
    q1 = report.rows[(report.rows["mode"] == "good") & (report.rows["question_id"] == "q1")].iloc[0]
    assert list(q1["retrieved_units"]) == ["a.md#a1", "x.md#x", "b.md#b1"]
    assert list(q1["expected_units"]) == ["a.md#a1", "b.md#b1"]
    assert list(q1["missed"]) == []
    assert q1["latency_ms"] >= 0


def test_ragas_offline_agrees_with_our_numbers(report):
    for mode in ("good", "bad"):
        rag = report.ragas[mode]
        ours = report.metrics[mode]
        assert rag["id_based_context_recall"] == pytest.approx(ours["section.recall@10"])
        assert rag["id_based_context_precision"] == pytest.approx(ours["section.precision_retrieved@10"])
    rows = report.rows[report.rows["mode"] == "good"].set_index("question_id")
    assert rows.loc["q3", "ragas.id_based_context_recall"] == 1.0  # breadcrumb match mapped to the label id
    assert rows.loc["q1", "ragas.id_based_context_precision"] == pytest.approx(2 / 3)


def test_llm_metrics_skipped_with_reason_never_zero(report):
    for metric in ragas_scores.LLM_METRICS:
        assert "no LLM configured" in report.skipped[metric]
        assert metric not in report.ragas["good"]
    # no text snippets / reference contexts in these questions
    assert "reference_contexts" in report.skipped[ragas_scores.NONLLM_RECALL]
    assert "ragas.faithfulness" not in report.markdown_table("good")


def test_llm_config_from_settings_and_answer_requirements():
    from rag_assets.config import Settings

    assert ragas_scores.LLMConfig.from_settings(Settings.from_env({"OPENAI_API_KEY": "k"}).evaluation) is None
    cfg = ragas_scores.LLMConfig.from_settings(Settings.from_env({"OPENAI_API_KEY": "secret", "OPENAI_BASE_URL": "http://x/v1"}).evaluation)
    assert cfg.model == ragas_scores.DEFAULT_LLM_MODEL and "secret" not in repr(cfg)
    judge = ragas_scores.LLMConfig.from_settings(Settings.from_env({"OPENAI_API_KEY": "s", "OPENAI_BASE_URL": "http://x/v1",
                                                                     "RAG_EVAL_LLM_MODEL": "judge"}).evaluation)
    assert judge.model == "judge" and judge.embedding_model is None
    sample = ragas_scores.RagasSample("q", reference_answer="ref")
    reasons = ragas_scores.llm_skip_reasons(cfg, [sample])
    assert "generated answer" in reasons["faithfulness"]
    assert ragas_scores.LLM_CONTEXT_RECALL not in reasons  # would run against the endpoint
    assert "no LLM configured" in ragas_scores.llm_skip_reasons(None, [sample])["faithfulness"]


def test_non_llm_metrics_run_with_text_snippets():
    snippet = "Streaming sends server-sent events as the response is produced."
    q = EvalQuestion("t1", "how to stream?", (ExpectedSource(doc_path="s.md", text="server-sent events"),),
                     reference_contexts=(snippet,))
    hits = [R("s.md", "Streaming", snippet), R("z.md", "Z", "totally unrelated words about billing")]
    rep = evaluate_retrieval([q], lambda *_: hits, modes=("m",), llm_config=None)
    assert rep.ragas["m"]["non_llm_context_recall"] == 1.0
    assert rep.ragas["m"]["non_llm_context_precision_with_reference"] == pytest.approx(1.0, abs=1e-6)
    assert rep.metrics["m"]["section.recall@1"] == 1.0
    assert "id_based_context_recall" in rep.skipped  # no doc_path+section labels


def test_worst_table_json_and_save(report, tmp_path):
    worst = report.worst("good", 2)
    assert list(worst["question_id"]) == ["q4", "q2"]  # recall 0 first, then lowest RR
    assert list(worst.loc[0, "missed"]) == ["d.md#d1"]
    with pytest.raises(KeyError):
        report.worst("nope")

    table = report.markdown_table()
    assert table.splitlines()[0] == "| metric | good | bad |"
    assert "| section.mrr@10 | 0.625 | 0.000 |" in table
    assert "| ragas.id_based_context_recall |" in table

    data = json.loads(json.dumps(report.to_json(), allow_nan=False))
    assert data["modes"]["good"]["section.mrr@10"] == 0.625
    assert len(data["rows"]) == 8 and "no LLM configured" in data["skipped"]["faithfulness"]

    paths = report.save(tmp_path / "runs")
    again = report.save(tmp_path / "runs")
    assert paths["parquet"] != again["parquet"]  # never overwrites a timestamped run
    for key in ("parquet", "latest_parquet"):
        frame = pd.read_parquet(paths[key])
        assert len(frame) == 8
        assert list(frame.iloc[0]["retrieved_units"]) == ["a.md#a1", "x.md#x", "b.md#b1"]
        assert frame["section.mrr@10"].notna().all()
    csv = pd.read_csv(paths["csv"])
    assert csv.loc[0, "retrieved_units"] == "a.md#a1 | x.md#x | b.md#b1"
    assert json.loads(paths["latest_json"].read_text())["top_k"] == 10


def test_unresolved_labels_through_report(report):
    index = [("a.md", "A1"), ("a.md", "Parent > Child"), ("b.md", "B1"), ("c.md", "C1")]
    bad = report.unresolved_labels(index)
    assert [(b["question_id"], b["doc_path"]) for b in bad] == [("q4", "d.md")]


def test_top_k_cuts_results_and_no_ragas():
    rep = evaluate_retrieval(QUESTIONS[:1], fake_search, modes=("good",), top_k=1, ragas=False)
    assert rep.ks == (1,)
    assert rep.metrics["good"]["section.recall@1"] == 0.5
    assert "section.recall@3" not in rep.metrics["good"]
    assert rep.ragas["good"] == {} and "ragas" in rep.skipped
    assert math.isclose(rep.metrics["good"]["section.ndcg@10"], 1 / (1 + 1 / math.log2(3)))


def test_offline_scoring_works_inside_a_running_event_loop():
    import asyncio

    async def inner():
        sample = ragas_scores.RagasSample("q", retrieved_ids=["a#x", "b#y"], reference_ids=["a#x"])
        return ragas_scores.score_offline([sample])

    result = asyncio.run(inner())
    assert result.scores["id_based_context_precision"] == 0.5
    assert result.scores["id_based_context_recall"] == 1.0


def test_a_question_with_its_own_filters_is_searched_with_them():
    from rag_assets.evaluation.evalset import parse_question

    seen = []

    def search(question, mode, top_k, filters=None):
        seen.append(filters)
        return [R("m2/a.md", "A1")] if filters == {"module": "m2"} else [R("x.md", "X")]

    q = parse_question({"id": "f", "question": "alpha?", "expected": [{"doc_path": "m2/a.md", "section": "A1"}],
                        "filters": {"module": "m2"}})
    rep = evaluate_retrieval([q, QUESTIONS[1]], search, modes=("good",), top_k=1, ragas=False)
    assert seen == [{"module": "m2"}, None] and rep.metrics["good"]["section.recall@1"] == 0.5
    with pytest.raises(ValueError, match="filters must be an object"):
        parse_question({"id": "g", "question": "?", "expected": [{"doc_path": "a.md"}], "filters": "m2"})


def test_results_with_a_context_are_matched_on_it_and_its_size_reported():
    question = EvalQuestion("c1", "where?", (ExpectedSource(doc_path="p.md", text="the answer"),))

    def search(q, mode, top_k):
        results = [R("p.md", "", "the matched chunk"), R("q.md", "", "another chunk")]
        if mode == "context":
            results[0].context, results[0].context_tokens = "the matched chunk\n\nthe answer", 9
            results[1].context, results[1].context_tokens = "another chunk", 3
        return results

    report = evaluate_retrieval([question], search, modes=("chunk", "context"), top_k=10, ragas=False)
    assert report.metrics["chunk"]["section.hit@1"] == 0.0 and math.isnan(report.metrics["chunk"]["context_tokens.mean"])
    assert report.metrics["context"]["section.hit@1"] == 1.0
    assert report.metrics["context"]["context_tokens.mean"] == 6.0
    assert report.rows.set_index("mode").loc["context", "context_tokens"] == 6.0
    assert "context_tokens.mean" in report.markdown_table()


def test_means_carry_intervals_and_hybrid_its_paired_lead_over_each_mode():
    questions = [EvalQuestion(f"p{i}", f"question {i}?", (ExpectedSource("a.md", "A1"),)) for i in range(40)]

    def search(question, mode, top_k):
        i = int(question.split()[1].rstrip("?"))
        hit = [R("a.md", "A1")]
        if mode == "hybrid":
            return hit if i < 30 else [R("x.md", "X")]  # 30 of 40 first
        if mode == "vector":
            return hit if i < 20 else [R("x.md", "X")]  # 20 of 40, all of them among hybrid's 30
        return hit if i < 29 or i == 39 else [R("x.md", "X")]  # keyword: 30 too, two of them others

    rep = evaluate_retrieval(questions, search, modes=("vector", "keyword", "hybrid"), top_k=10, ragas=False)
    span = rep.intervals["hybrid"]["section.mrr@10"]
    assert span.value == rep.metrics["hybrid"]["section.mrr@10"] == 0.75 and span.low < 0.75 < span.high
    assert set(rep.intervals["vector"]) == {f"{lv}.{n}" for lv in ("section", "document")
                                            for n in ("hit@1", "recall@1", "recall@3", "recall@5", "recall@10",
                                                      "mrr@10", "ndcg@10")}
    assert set(rep.differences) == {"vector", "keyword"}
    assert rep.differences["vector"]["section.recall@5"].value == pytest.approx(0.25)
    assert rep.differences["vector"]["section.recall@5"].verdict == "ahead"
    assert rep.differences["keyword"]["section.recall@5"].value == 0.0
    assert rep.differences["keyword"]["section.recall@5"].verdict == "unclear"

    table = rep.differences_table()
    assert table.splitlines()[0] == "| metric | hybrid − vector | hybrid − keyword |"
    assert "| section.recall@5 | +0.250 (" in table and ") ahead |" in table
    assert rep.markdown_table("hybrid").splitlines()[0] == "| metric | value | 95% interval |"
    assert f"| section.mrr@10 | 0.750 | {span.low:.3f}–{span.high:.3f} |" in rep.markdown_table("hybrid")

    data = json.loads(json.dumps(rep.to_json(), allow_nan=False))["confidence"]
    assert data["level"] == 0.95
    assert data["intervals"]["hybrid"]["section.mrr@10"] == {"value": 0.75, "low": span.low, "high": span.high}
    assert data["hybrid_minus"]["vector"]["section.recall@5"]["verdict"] == "ahead"


def test_hybrid_clearly_behind_one_of_its_parts_is_named():
    questions = [EvalQuestion(f"p{i}", f"question {i}?", (ExpectedSource("a.md", "A1"),)) for i in range(40)]

    def search(question, mode, top_k):
        i = int(question.split()[1].rstrip("?"))
        first = {"hybrid": 20, "vector": 20, "keyword": 35}[mode]  # keyword finds 15 more, hybrid loses none
        return [R("a.md", "A1")] if i < first else [R("x.md", "X")]

    rep = evaluate_retrieval(questions, search, modes=("vector", "keyword", "hybrid"), top_k=10, ragas=False)
    behind = rep.hybrid_behind()
    assert [(mode, name) for mode, name, _ in behind] == [
        ("keyword", "section.recall@5"), ("keyword", "section.mrr@10"), ("keyword", "document.recall@5")]
    assert behind[0][2].value == pytest.approx(-15 / 40) and behind[0][2].high < 0


def test_without_hybrid_there_is_no_difference_to_report(report):
    assert report.differences == {} and report.differences_table() == "" and report.hybrid_behind() == []
    assert set(report.intervals) == {"good", "bad"}


def test_a_run_compared_with_the_one_saved_before(tmp_path):
    from rag_assets.evaluation.runner import EvaluationReport

    questions = [EvalQuestion(f"p{i}", f"question {i}?", (ExpectedSource("a.md", "A1"),)) for i in range(30)]
    hits = {"before": 25, "after": 10}

    def search(question, mode, top_k):
        i = int(question.split()[1].rstrip("?"))
        return [R("a.md", "A1")] if i < hits[mode_of_run] else [R("x.md", "X")]

    assert EvaluationReport.latest_saved(tmp_path) is None  # nothing saved yet
    mode_of_run = "before"
    first = evaluate_retrieval(questions, search, modes=("hybrid",), top_k=10, ragas=False)
    first.save(tmp_path)
    previous = EvaluationReport.latest_saved(tmp_path)
    assert previous is not None and len(previous[0]) == 30 and previous[1] == first.created_at.isoformat()

    mode_of_run = "after"
    second = evaluate_retrieval(questions, search, modes=("hybrid",), top_k=10, ragas=False)
    second.compare_with(*previous)
    change = second.changes["hybrid"]["section.mrr@10"]
    assert (change.before, change.now) == (pytest.approx(25 / 30), pytest.approx(10 / 30))
    assert change.verdict == "worse" and second.previous["questions"] == 30
    table = second.changes_table()
    assert table.startswith(f"Since the evaluation of {first.created_at.isoformat()[:16].replace('T', ' ')} UTC, "
                            "over the 30 questions both asked:")
    assert "| hybrid | section.mrr@10 | 0.833 | 0.333 | -0.500 (" in table and "| worse |" in table
    since = json.loads(json.dumps(second.to_json(), allow_nan=False))["confidence"]["since_last"]
    assert since["questions"] == 30 and since["by_mode"]["hybrid"]["section.recall@5"]["verdict"] == "worse"
    assert first.to_json()["confidence"]["since_last"] == {} and first.changes_table() == ""

    (tmp_path / "latest.parquet").write_bytes(b"not parquet")
    assert EvaluationReport.latest_saved(tmp_path) is None  # a broken file is no comparison, not an error
