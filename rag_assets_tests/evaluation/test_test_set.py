"""JSON test sets of the ingestion contract's shape: loaded entry by entry, scored by module hit@k and
keyword coverage over a real index, and `rag evaluate --test-set FILE.json` on the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag_assets.evaluation.test_set import load_test_set, score_question, score_test_set, TestSetQuestion
from rag_assets.retrieval.retriever import SearchResult
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import subprocess_env

DOCS = {
    "module-1/ch1/embodiment.md": "# Embodiment\n\n## Why a body matters\n\nEmbodiment means the robot's body shapes "
                                  "how it perceives and acts in real-time.\n",
    "module-2/ch1/nodes.md": "# Nodes\n\n## What a node is\n\nA ROS 2 node is a process; nodes talk over topics "
                             "with rclpy publishers and subscribers.\n",
}
TEST_SET = {"version": "1.0", "queries": [
    {"id": "e1", "question": "Why does embodiment matter?", "mode": "normal",
     "expected_modules": ["module-1"], "expected_keywords": ["embodiment", "real-time"]},
    {"id": "e2", "question": "What language is this?", "mode": "selected_text_only",
     "selected_text": "import rclpy\nfrom rclpy.node import Node", "expected_keywords": ["rclpy"]},
    {"id": "e3", "question": "Tell me about Bitcoin", "mode": "selected_text_only",
     "selected_text": "ROS2 uses publish-subscribe.", "expected_refuse": True},
    {"id": "bad", "mode": "normal"},
]}


def _result(doc_path: str, text: str, **meta) -> SearchResult:
    return SearchResult("c", doc_path, "", "", text, 1.0, metadata=meta)


def test_load_keeps_good_entries_and_names_the_bad_one(tmp_path):
    path = tmp_path / "test_set.json"
    path.write_text(json.dumps(TEST_SET))
    loaded = load_test_set(path)
    assert [q.id for q in loaded.questions] == ["e1", "e2", "e3"]
    assert loaded.errors == ['test_set.json: entry 4: needs a non-empty "question"']
    assert loaded.questions[1].retrieval_query.startswith("import rclpy")  # the selection comes first
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="broken.json"):
        load_test_set(tmp_path / "broken.json")


def test_expected_refuse_false_as_text_is_false(tmp_path):
    """Issue 36 item 10: "expected_refuse": "false" counted as true (the question then went unscored)."""
    entries = [{"id": f"r{i}", "question": "Why does embodiment matter?", "expected_modules": ["module-1"],
                "expected_refuse": value} for i, value in enumerate(["false", "False", 0, False, "true", 1, "maybe", 2])]
    path = tmp_path / "flags.json"
    path.write_text(json.dumps({"queries": entries}))
    loaded = load_test_set(path)
    assert [(q.id, q.expected_refuse) for q in loaded.questions] == [
        ("r0", False), ("r1", False), ("r2", False), ("r3", False), ("r4", True), ("r5", True)]
    assert loaded.errors == ["flags.json: entry 7: 'expected_refuse' must be true or false, got 'maybe'",
                             "flags.json: entry 8: 'expected_refuse' must be true or false, got 2"]


def test_module_hit_and_keyword_coverage():
    q = TestSetQuestion("q", "?", expected_modules=("module-1",), expected_keywords=("Embodiment", "latency"))
    row = score_question(q, [_result("module-2/a.md", "nothing"), _result("module-1/b.md", "embodiment here")], k=5)
    assert row == {"module.hit@5": 1.0, "keywords.coverage@5": 0.5}
    assert score_question(q, [_result("x.md", "other", module="module-1")], k=1)["module.hit@1"] == 1.0
    assert score_question(q, [_result("module-2/a.md", "embodiment")], k=1)["module.hit@1"] == 0.0


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("testset")
    write_corpus(root / "docs", DOCS)
    (root / "test_set.json").write_text(json.dumps(TEST_SET))
    env = subprocess_env(root, RAG_COLLECTION="textbook_chunks")
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json", "--collection", "textbook_chunks"],
                          env={k: v for k, v in env.items() if k != "RAG_COLLECTION"}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return root, env


@pytest.mark.system
def test_scoring_over_a_real_index_per_mode(course):
    from rag_assets.config import Settings
    from rag_assets.pipeline import RAGPipeline

    root, env = course
    pipeline = RAGPipeline.from_settings(Settings.from_env(env))
    report = score_test_set(load_test_set(root / "test_set.json").questions, pipeline.search,
                            ["vector", "keyword", "hybrid"], k=1)
    assert report["skipped"] == 1  # the refusal question tests answers, not retrieval
    hybrid = report["modes"]["hybrid"]
    assert hybrid["module.hit@1"] == 1.0 and hybrid["keywords.coverage@1"] == 1.0
    assert hybrid["keywords.coverage@1.questions"] == 2


@pytest.mark.system
def test_rag_evaluate_test_set_json_prints_its_metrics(course):
    root, env = course
    cmd = [sys.executable, "-m", "rag_assets", "evaluate", "--test-set", str(root / "test_set.json"), "--top-k", "2"]
    proc = subprocess.run(cmd + ["--collection", "textbook_chunks"], env={k: v for k, v in env.items()
                          if k != "RAG_COLLECTION"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1  # the malformed entry is reported; the others are scored
    assert "module.hit@2" in proc.stdout and "keywords.coverage@2" in proc.stdout and "hybrid" in proc.stdout
    assert "entry 4" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=300)
    out = json.loads(proc.stdout)
    assert out["modes"]["hybrid"]["module.hit@2"] == 1.0 and out["skipped"] == 1


@pytest.mark.system
def test_a_question_retrieval_refuses_is_named_and_the_rest_are_scored(course):
    """Issue 36 item 8: a question of "???", or one over RAG_MAX_QUERY_CHARS with its selected text,
    ended the whole run with "query has no words", exit 1, nothing scored and the entry not named."""
    root, env = course
    bad = {"version": "1.0", "queries": [
        *TEST_SET["queries"][:2],
        {"id": "marks", "question": "???", "expected_keywords": ["rclpy"]},
        {"id": "long", "question": "What is this about?", "mode": "selected_text_only",
         "selected_text": "rclpy " * 400, "expected_keywords": ["rclpy"]},
    ]}
    (root / "bad_questions.json").write_text(json.dumps(bad))
    cmd = [sys.executable, "-m", "rag_assets", "evaluate", "--test-set", str(root / "bad_questions.json"), "--top-k", "2"]
    proc = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # two questions not scored: partial
    out = json.loads(proc.stdout)
    assert {u["id"] for u in out["unscored"]} == {"marks", "long"}
    assert "no words" in {u["id"]: u["error"] for u in out["unscored"]}["marks"]
    assert out["modes"]["hybrid"]["module.hit@2"] == 1.0 and out["modes"]["hybrid"]["keywords.coverage@2.questions"] == 2
    assert {r["id"] for r in out["rows"]} == {"e1", "e2"}
    assert "question 'marks' not scored" in proc.stderr and "question 'long' not scored" in proc.stderr
    assert "Traceback" not in proc.stderr
