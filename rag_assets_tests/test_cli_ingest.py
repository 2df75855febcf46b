"""`rag ingest` / `rag ingest-doc` as a user runs them: a subprocess, real files, a real instance."""

import json
import os
import subprocess
import sys

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.store import ChromaStore


def rag(*args, check_codes=(0,)):
    proc = subprocess.run(
        [sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True, env=os.environ.copy(), timeout=600
    )
    assert proc.returncode in check_codes, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def ingest_json(*extra, codes=(0,)):
    proc = rag("ingest", "--json", *extra, check_codes=codes)
    return json.loads(proc.stdout), proc


def store() -> ChromaStore:
    s = Settings.from_env()
    e = load_embedder(s)
    return ChromaStore(path=s.chroma_path, collection=s.collection, embedding_model=e.model_name, dimension=e.dimension)


@pytest.fixture
def env(rag_env, dagster_home):
    return rag_env


def test_ingest_then_noop_then_one_edit_then_delete(env):
    first, _ = ingest_json()
    assert first["documents_discovered"] == 3 and first["documents_processed"] == 3
    assert first["documents_failed"] == 0 and first["errors"] == []
    assert first["embeddings_computed"] == first["chunks_written"] > 0
    total = store().count()

    # the section that plainly answers the question comes back first
    answer = json.loads(rag("query", "How do I add more test cases?", "--top-k", "3", "--json").stdout)
    assert answer["query"] == "How do I add more test cases?"
    top = answer["results"][0]
    assert (top["doc_path"], top["section"]) == ("guide/evaluation.md", "Creating test cases")
    assert set(top) >= {"chunk_id", "doc_path", "section", "heading_breadcrumb", "text", "score"}
    limits = json.loads(rag("query", "What does HTTP 429 mean for the free tier?", "--json").stdout)
    assert limits["results"][0]["doc_path"] == "rate-limits.md"

    # unchanged corpus (even after a touch): no run over documents, no embedding
    os.utime(env / "docs" / "rate-limits.md")
    noop, _ = ingest_json()
    assert noop["documents_unchanged"] == 3 and noop["documents_processed"] == 0
    assert noop["embeddings_computed"] == 0 and len(noop["run_ids"]) == 1

    # one paragraph appended to one section: only the changed chunk is embedded again
    doc = env / "docs" / "guide" / "evaluation.md"
    doc.write_text(doc.read_text() + "\nExport graded results as CSV to share them with reviewers.\n")
    edit, _ = ingest_json()
    assert edit["documents_processed"] == 1 and edit["documents_unchanged"] == 2
    assert edit["embeddings_computed"] == 1 and edit["embeddings_reused"] >= 1
    assert store().count() == total

    # a rename is a delete plus an add that reuses every embedding
    os.rename(env / "docs" / "rate-limits.md", env / "docs" / "limits.md")
    renamed, _ = ingest_json()
    assert renamed["documents_deleted"] == 1 and renamed["embeddings_computed"] == 0
    assert renamed["embeddings_reused"] >= 1
    assert "rate-limits.md" not in store().doc_paths() and "limits.md" in store().doc_paths()

    os.remove(env / "docs" / "limits.md")
    gone, _ = ingest_json()
    assert gone["documents_deleted"] == 1 and gone["vectors_deleted"] >= 1
    assert store().doc_paths() == {"guide/evaluation.md", "guide/streaming.md"}


def test_bad_documents_are_reported_by_name_and_exit_1_without_losing_the_rest(env):
    ingest_json()
    before = store().count()
    (env / "docs" / "bad-yaml.md").write_text("---\ntitle: [oops\n---\nbody\n")
    (env / "docs" / "binary.md").write_bytes(b"\x00\x01\x02PNG")
    report, proc = ingest_json(codes=(1,))
    failed = {e["doc_path"]: e["error"] for e in report["errors"]}
    assert set(failed) == {"bad-yaml.md", "binary.md"}
    assert "invalid YAML" in failed["bad-yaml.md"] and "binary" in failed["binary.md"]
    assert store().count() == before  # nothing already indexed was lost
    human = rag("ingest", check_codes=(1,))
    assert "FAILED bad-yaml.md" in human.stderr


def test_ingest_doc_indexes_one_document(env):
    proc = rag("ingest-doc", "guide/streaming.md", "--json")
    report = json.loads(proc.stdout)
    assert report["documents_processed"] == 1
    assert store().doc_paths() == {"guide/streaming.md"}
    missing = rag("ingest-doc", "nope.md", check_codes=(2,))
    assert "no such document" in missing.stderr


def test_bad_configuration_exits_2_naming_the_variable(env, monkeypatch):
    monkeypatch.setenv("RAG_CHUNK_MAX_TOKENS", "ten")
    proc = rag("ingest", check_codes=(2,))
    assert "RAG_CHUNK_MAX_TOKENS" in proc.stderr
