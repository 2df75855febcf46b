"""Documents from code take the road of files: Dagster partitions and runs, stage records, a later
`rag ingest` of the folder keeps them, re-ingesting replaces, deleting removes (a real instance, Chroma,
the local model)."""

import json
import subprocess
import sys

import dagster as dg

from rag_assets.orchestration.definitions import documents_partitions
from rag_assets.pipeline import RAGPipeline

DOCS = [
    {"id": "rules/overwatch", "content": "# Overwatch\n\n## Overwatch rule\n\nA unit on overwatch fires at the "
                                         "first enemy that moves within 12 inches of it, then stands down.",
     "metadata": {"source": "Core Rules v3.1", "doc_type": "core-rules", "last_update_date": "2025-01-15"}},
    {"id": "faq/overwatch", "content": "# Overwatch FAQ\n\n## Can overwatch trigger twice?\n\nNo: overwatch "
                                       "triggers once per turn, whatever moves afterwards."},
]


def _chunks(pipeline, doc_path):
    return [(cid, text) for cid, text, meta in pipeline.retriever.store.iter_all() if meta["doc_path"] == doc_path]


def test_two_documents_from_python_are_partitions_survive_rag_ingest_and_replace_cleanly(rag_env, dagster_home):
    pipeline = RAGPipeline.from_settings()
    result = pipeline.ingest(DOCS)
    assert result.documents_processed == 2 and result.documents_failed == 0 and result.embedding_count >= 2
    assert result.job_id and result.doc_paths == ["_from_code/rules/overwatch.md", "_from_code/faq/overwatch.md"]
    with dg.DagsterInstance.get() as instance:
        keys = set(instance.get_dynamic_partitions(documents_partitions.name))
        assert set(result.doc_paths) <= keys
        assert instance.get_run_by_id(result.job_id) is not None
    hits = pipeline.search("When does a unit on overwatch fire?", "hybrid", 3)
    assert hits[0].doc_path == "_from_code/rules/overwatch.md"
    assert hits[0].metadata["source"] == "Core Rules v3.1" and hits[0].metadata["doc_type"] == "core-rules"

    # a following `rag ingest` of the folder keeps them (and adds nothing twice)
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["documents_deleted"] == 0
    before = _chunks(pipeline, "_from_code/rules/overwatch.md")
    assert before

    # re-ingesting an id with new content leaves only the new chunks
    again = pipeline.ingest([{**DOCS[0], "content": "# Overwatch\n\n## Overwatch rule\n\nOverwatch was removed "
                                                    "from the rules in version 4."}])
    assert again.documents_processed == 1
    after = _chunks(RAGPipeline.from_settings(), "_from_code/rules/overwatch.md")
    assert after and all("version 4" in text for _, text in after)
    assert not {cid for cid, _ in before} & {cid for cid, _ in after}

    deleted = pipeline.delete_documents(["faq/overwatch", "never-ingested"])
    assert deleted["doc_paths"] == ["_from_code/faq/overwatch.md"] and deleted["not_found"] == ["never-ingested"]
    assert _chunks(RAGPipeline.from_settings(), "_from_code/faq/overwatch.md") == []


def test_load_documents_reports_the_contract_fields(rag_env, dagster_home):
    out = RAGPipeline.from_settings().load_documents(DOCS, batch_size=1)
    assert out["documents_loaded"] == 2 and out["documents_failed"] == 0 and out["storage_complete"]
    assert out["embeddings_generated"] >= 2 and out["execution_time_ms"] > 0 and out["errors"] == []
