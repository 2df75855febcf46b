"""The issue's second-corpus sequence in this project: `dg scaffold defs rag_assets.MarkdownCorpus faq`,
its docs folder set in defs.yaml, then `dagster definitions validate`, both corpora ingested, queries
kept apart and `rag corpora` listing both. Run on a copy of the project (the scaffold writes into
rag_assets/corpora/), imported ahead of the installed one through PYTHONPATH."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import subprocess_env

pytestmark = pytest.mark.system

REPO = Path(__file__).resolve().parents[2]
DG = str(Path(sys.executable).parent / "dg")
FAQ = {"billing/refunds.md": "# Refunds\n\n## Asking for a refund\n\nA refund is granted within thirty days of "
                             "purchase when the subscription was not used; write to billing with the invoice number.\n",
       "billing/invoices.md": "# Invoices\n\n## Downloading invoices\n\nEvery invoice can be downloaded as a PDF "
                              "from the billing page of the account settings.\n"}


def run(args, cwd, env, timeout=600):
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_a_scaffolded_second_corpus_is_its_own_group_index_and_listing(rag_env, dagster_home, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(REPO / "rag_assets", project / "rag_assets", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(REPO / name, project / name)
    faq = write_corpus(tmp_path / "faq_docs", FAQ)
    env = subprocess_env(tmp_path, PYTHONPATH=str(project), DAGSTER_HOME=str(dagster_home))
    rag = [sys.executable, "-m", "rag_assets"]

    run([DG, "scaffold", "defs", "rag_assets.MarkdownCorpus", "faq"], project, env)
    defs_yaml = project / "rag_assets" / "corpora" / "faq" / "defs.yaml"
    defs_yaml.write_text(defs_yaml.read_text().replace("docs_dir: data/faq", f"docs_dir: {faq}"))
    validated = run([sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"], project, env)
    assert "All code locations passed validation" in validated.stdout + validated.stderr
    shown = run([sys.executable, "-c", "import dagster as dg; from rag_assets import defs; "
                 "print(defs.resolve_asset_graph().get(dg.AssetKey(['faq', 'vector_index'])).group_name)"], project, env)
    assert shown.stdout.strip().splitlines()[-1] == "faq"  # its own group in the UI

    assert json.loads(run([*rag, "ingest", "--json"], project, env).stdout)["documents_processed"] == 3
    assert json.loads(run([*rag, "--corpus", "faq", "ingest", "--json"], project, env).stdout)["documents_processed"] == 2
    # the folder finds its corpus too
    again = json.loads(run([*rag, "ingest", "--docs-dir", str(faq), "--json"], project, env).stdout)
    assert again["documents_unchanged"] == 2 and again["documents_processed"] == 0

    corpora = {c["name"]: c for c in json.loads(run([*rag, "corpora", "--json"], project, env).stdout)["corpora"]}
    assert set(corpora) == {"default", "faq"}
    assert corpora["faq"]["documents"] == 2 and corpora["faq"]["chunks"] > 0 and corpora["faq"]["assets"] == "faq/vector_index"
    assert corpora["default"]["documents"] == 3 and corpora["default"]["collection"] == "rag_chunks"

    question = "How do I get a refund for my subscription?"
    theirs = json.loads(run([*rag, "--corpus", "faq", "query", question, "--json"], project, env).stdout)["results"]
    ours = json.loads(run([*rag, "query", question, "--json"], project, env).stdout)["results"]
    assert theirs[0]["doc_path"] == "billing/refunds.md" and {r["doc_path"] for r in theirs} <= set(FAQ)
    assert not {r["doc_path"] for r in ours} & set(FAQ)
