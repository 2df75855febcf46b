"""Documents from code take the road of files: Dagster partitions and runs, stage records, a later
`rag ingest` of the folder keeps them, re-ingesting replaces, deleting removes (a real instance, Chroma,
the local model)."""

import json
import subprocess
import sys

import dagster as dg
import pytest

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


@pytest.mark.system
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


def test_load_documents_reports_the_contract_fields(rag_env, dagster_home, caplog):
    """The pipeline-API contract: an empty document is skipped with a warning (its text), and a call
    with nothing to load is a ValueError (its test)."""
    import logging

    from rag_assets import Document

    pipeline = RAGPipeline.from_settings()
    with pytest.raises(ValueError, match="content.*required"):
        pipeline.load_documents(documents=[Document(metadata={})])
    with pytest.raises(ValueError, match="documents.*required"):
        pipeline.load_documents(documents=[])
    with caplog.at_level(logging.WARNING, logger="rag_assets.pipeline"):
        out = pipeline.load_documents([DOCS[0], {"id": "empty", "content": "  "}, {**DOCS[1], "metadata": {}}],
                                      batch_size=1)
    assert out["documents_loaded"] == 2 and out["documents_failed"] == 1 and not out["storage_complete"]
    assert out["errors"] == ["document 1: content is required (non-empty markdown text); skipped"]
    assert any(r.levelname == "WARNING" and "document 1: content is required" in r.getMessage() for r in caplog.records)
    assert out["embeddings_generated"] >= 2 and out["execution_time_ms"] > 0


def _texts(pipeline, doc_path):
    return [text for _cid, text, meta in RAGPipeline.from_settings().retriever.store.iter_all()
            if meta["doc_path"] == doc_path]


def test_an_explicit_deletion_of_most_documents_is_done_or_refused_never_reported_as_done(rag_env, dagster_home):
    """Issue 36 item 4: deleting 25 of 31 documents from code removed their files, not their vectors
    (documents_deleted 0, no error): the deletion guard refused silently."""
    from rag_assets.errors import DeletionRefusedError
    from rag_assets.indexing.service import ingest

    assert ingest().documents_processed == 3  # the folder's own documents
    pipeline = RAGPipeline.from_settings()
    docs = [{"id": f"notes/n{i:02d}", "content": f"# Note {i}\n\nThe tally for item {i} is {i * 7} pieces."}
            for i in range(31)]
    assert pipeline.ingest(docs).documents_processed == 31
    doomed = [d["id"] for d in docs[:25]]
    paths = [f"_from_code/{i}.md" for i in doomed]

    # another file vanished too: the guard keeps everything, and says so; the files come back
    (rag_env / "docs" / "rate-limits.md").rename(rag_env / "rate-limits.md")
    with pytest.raises(DeletionRefusedError, match="nothing was deleted: refusing to remove 26 of 34"):
        pipeline.delete_documents(doomed)
    assert all((rag_env / "docs" / p).is_file() for p in paths) and _texts(pipeline, paths[0])
    (rag_env / "rate-limits.md").rename(rag_env / "docs" / "rate-limits.md")

    deleted = pipeline.delete_documents(doomed)
    assert deleted["documents_deleted"] == 25 and deleted["doc_paths"] == paths and deleted["vectors_deleted"] >= 25
    assert not any(_texts(pipeline, p) for p in paths) and _texts(pipeline, "_from_code/notes/n30.md")
    assert not [h for h in RAGPipeline.from_settings().search("tally for item 3", "hybrid", 10) if h.doc_path in paths]
    after = ingest()  # the next `rag ingest` finds nothing to fail on
    assert (after.documents_failed, after.errors, after.documents_deleted) == (0, [], 0)


def test_documents_that_cannot_be_indexed_fail_by_name_and_leave_nothing_behind(rag_env, dagster_home, monkeypatch,
                                                                                caplog):
    """Issue 35 item 4 (a document rejected under RAG_REQUIRED_METADATA stayed in _from_code/, and every
    later `rag ingest` exited 1; without metadata doc_type was "_from_code"), issue 36 item 5 (a document
    over the file-size limit came back "already indexed with this content"), and the ingestion
    contract's WARNING for ambiguous markdown."""
    import logging
    import shutil

    from rag_assets.indexing.service import ingest

    shutil.rmtree(rag_env / "docs")
    (rag_env / "docs").mkdir()
    monkeypatch.setenv("RAG_REQUIRED_METADATA", "source")
    monkeypatch.setenv("RAG_MAX_FILE_BYTES", "3000")
    pipeline = RAGPipeline.from_settings()
    docs = [
        {"id": "faq/refunds", "metadata": {"source": "Support"},
         "content": "# Refunds\n\nRefunds take five days.\n\n```python\nrefund(order)\n"},  # the fence never closes
        {"document_id": "plain", "content": "# Plain\n\nOpening hours are nine to five.", "metadata": {"source": "Bot"}},
        {"document_id": "m1", "filename": "missing.md", "content": "# Missing\n\nNo source here."},
        {"id": "big", "content": "# Big\n\nSmall body.", "metadata": {"source": "Bot", "notes": "x" * 4000}},
    ]
    with caplog.at_level(logging.WARNING, logger="rag_assets"):
        result = pipeline.ingest(docs)
    assert (result.documents_processed, result.documents_failed) == (2, 2)
    assert result.failed_ids == ["m1", "big"]
    assert result.errors[0] == ("missing.md: missing required metadata 'source' (RAG_REQUIRED_METADATA): add it to "
                                "the frontmatter; nothing was written")
    assert result.errors[1].startswith("big: 4,") and "over the 3,000-byte limit for a document (RAG_MAX_FILE_BYTES)" \
        in result.errors[1]
    assert not any("already indexed" in w for w in result.warnings)
    assert sorted(p.name for p in (rag_env / "docs" / "_from_code").rglob("*.md")) == ["plain.md", "refunds.md"]
    fence = "faq/refunds:5: ambiguous markdown: a code fence that never closes; kept as one block up to the next heading"
    today = __import__("datetime").date.today().isoformat()
    filled = ("no doc_type, last_update_date in its metadata: indexed with doc_type {!r} (its folder's, else the default), "
              f"last_update_date '{today}' (the day it was ingested); give them, or set "
              "RAG_REQUIRED_METADATA=source,doc_type,last_update_date to refuse such documents")
    assert result.warnings == [f"faq/refunds: {filled.format('faq')}", f"plain: {filled.format('document')}", fence]
    assert any(r.levelname == "WARNING" and "_from_code/faq/refunds.md:" in r.getMessage()
               and "never closes" in r.getMessage() for r in caplog.records)
    doc_types = {meta["doc_path"]: meta["doc_type"] for _c, _t, meta in pipeline.retriever.store.iter_all()}
    assert doc_types == {"_from_code/faq/refunds.md": "faq", "_from_code/plain.md": "document"}

    after = ingest()  # what `rag ingest` runs: nothing left to fail on
    assert (after.documents_failed, after.errors) == (0, [])


def test_a_document_whose_run_fails_is_put_back_as_it_was(rag_env, dagster_home, monkeypatch):
    """A failure only the run finds (here the embedding service refusing every request) leaves the
    folder as it was: the earlier version's file back, a new document's file gone."""
    import shutil

    from rag_assets.indexing.service import ingest
    from rag_assets_tests.support.openai_server import Fault, OpenAIStubServer

    shutil.rmtree(rag_env / "docs")
    (rag_env / "docs").mkdir()
    with OpenAIStubServer(api_key="sk-test-code-docs") as server:
        monkeypatch.setenv("RAG_EMBEDDER", "openai")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-code-docs")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_OPENAI_MAX_RETRIES", "1")
        pipeline = RAGPipeline.from_settings()
        first = pipeline.ingest([{"id": "a", "content": "# A\n\nThe first version."}])
        assert first.documents_processed == 1
        folder = rag_env / "docs" / "_from_code"
        before = (folder / "a.md").read_text()

        server.always(Fault.status(400))
        failed = pipeline.ingest([{"id": "a", "content": "# A\n\nThe second version."},
                                  {"id": "b", "content": "# B\n\nA new one."}])
        assert (failed.documents_processed, failed.documents_failed, failed.failed_ids) == (0, 2, ["a", "b"])
        assert [e.split(":")[0] for e in failed.errors] == ["a", "b"]
        assert (folder / "a.md").read_text() == before and not (folder / "b.md").exists()
        server.always(None)
        after = ingest()
        # its early stages are redone for the version put back; nothing is embedded or written again
        assert (after.documents_failed, after.errors, after.embeddings_computed, after.chunks_written) == (0, [], 0, 0)
        assert _texts(pipeline, "_from_code/a.md") and "first version" in _texts(pipeline, "_from_code/a.md")[0]
