"""`rag evaluate` on a folder with no eval set: a synthetic set generated from the documents, scored per
mode and marked synthetic, exit 0 (offline: no chat model configured)."""

import json
import os
import subprocess
import sys

from rag_assets.evaluation.synthetic.tuning import OFFLINE_GENERATOR


def _rag(*args, env=None):
    return subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=600)


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
