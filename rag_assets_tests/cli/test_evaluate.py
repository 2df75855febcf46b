"""`rag evaluate` on a folder with no eval set: a synthetic set generated from the documents, scored per
mode and marked synthetic, exit 0 (offline: no chat model configured)."""

import json
import os
import subprocess
import sys

import pytest

from rag_assets.evaluation.synthetic.tuning import OFFLINE_GENERATOR


def _rag(*args, env=None):
    return subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=600)


@pytest.mark.system
def test_rag_evaluate_without_an_eval_set_scores_a_synthetic_one(rag_env, dagster_home):
    ingest = _rag("ingest", "--quiet")
    assert ingest.returncode == 0, ingest.stderr
    assert not (rag_env / "eval").exists()  # no labelled set anywhere

    proc = _rag("evaluate")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("SYNTHETIC eval set (generated from the documents, not labelled by a person)")
    assert "3 questions" in out
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert header.split()[1:] == ["vector", "keyword", "hybrid"]
    recall = next(line for line in out.splitlines() if line.startswith("section.recall@5"))
    assert all(0.0 <= float(v) <= 1.0 for v in recall.split()[1:])
    assert str(rag_env / "eval_results" / "synthetic") in out
    assert "check " not in proc.stderr  # the checks judge labelled sets only

    proc = _rag("evaluate", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["eval_set"]["kind"] == "synthetic" and data["eval_set"]["generator"] == OFFLINE_GENERATOR
    assert len(data["eval_set"]["version"]) == 12 and data["questions"] == 3
    assert set(data["metrics"]) == {"vector", "keyword", "hybrid"}
    assert len(data["rows"]) == 9 and data["checks"] == {}
    first = (rag_env / "eval_results" / "synthetic" / "eval_set.jsonl").read_text()
    assert data["eval_set"]["version"] in first  # the same set, not regenerated: nothing changed


def test_against_a_file_that_is_not_a_saved_run_is_refused_before_anything_runs_and_json_says_so(
        rag_env, dagster_home, capsys):
    """Issue 36 item 10: `--against X --json` printed nothing on stdout (the docs promise an object with
    `errors`); a crafted parquet gave "unexpected error: ValueError" after the evaluation ran, and
    `Infinity` in the JSON."""
    import math

    import pandas as pd

    from rag_assets.cli.main import main

    eval_set = rag_env / "set.jsonl"
    eval_set.write_text(json.dumps({"id": "q1", "question": "How do I add test cases?",
                                    "expected": [{"doc_path": "guide/evaluation.md"}]}) + "\n")
    keys = {"mode": ["hybrid", "hybrid"], "question_id": [1, 2], "question": ["a", "b"]}
    crafted = {
        "text.parquet": pd.DataFrame({**keys, "section.recall@5": ["high", "low"]}),
        "infinite.parquet": pd.DataFrame({**keys, "section.recall@5": [math.inf, 0.5]}),
        "keyless.parquet": pd.DataFrame({"mode": ["hybrid"], "score": [1.0]}),
    }
    expected = {"text.parquet": "column section.recall@5 holds values that are not numbers",
                "infinite.parquet": "column section.recall@5 holds infinite values",
                "keyless.parquet": "no question_id, question column", "set.jsonl": "cannot be read as parquet"}
    for name, frame in crafted.items():
        frame.to_parquet(rag_env / name)
    for name, why in expected.items():
        code = main(["evaluate", "--eval-set", str(eval_set), "--against", str(rag_env / name), "--json"])
        out, err = capsys.readouterr()
        assert code == 2, (name, err)
        error = json.loads(out)["errors"][0]["error"]
        assert error.startswith(f"--against {rag_env / name}: not a saved evaluation run") and why in error, error
        assert err.count("\n") == 1 and why in err
    assert not (rag_env / "eval_results").exists()  # refused before the evaluation ran


def test_json_output_never_holds_nan_or_infinity():
    from rag_assets.cli.common import finite

    payload = {"a": float("inf"), "b": [1.0, float("nan"), {"c": -float("inf")}], "d": "x", "e": 2}
    assert json.loads(json.dumps(finite(payload), allow_nan=False)) == {"a": None, "b": [1.0, None, {"c": None}],
                                                                        "d": "x", "e": 2}
