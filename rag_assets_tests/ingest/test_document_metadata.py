"""Every document carries source, doc_type and last_update_date; requirements fail documents by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rag_assets.errors import InvalidDocumentError
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.document_metadata import MetadataPolicy, complete, file_date
from rag_assets.ingest.frontmatter import read_document
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import subprocess_env

DOCS = {
    "faq/billing.md": "# Billing questions\n\nHow invoices work.\n",
    "intro.md": "---\nsource: Core Rules v3.1\ndoc_type: core-rules\nlast_update_date: 2025-03-04\n---\n# Intro\n\nHello.\n",
    "bad-date.md": "---\nlast_update_date: next tuesday\n---\n# Bad\n\nText.\n",
}


def _docs(tmp_path, policy=MetadataPolicy()):
    root = write_corpus(tmp_path / "docs", DOCS)
    out = {}
    for ref in discover(root).documents:
        try:
            out[ref.doc_path] = complete(read_document(ref), ref, policy).metadata
        except InvalidDocumentError as exc:
            out[ref.doc_path] = exc
    return out


def test_fallbacks_fill_source_doc_type_date_and_the_sidebar_fields(tmp_path):
    docs = _docs(tmp_path)
    faq = docs["faq/billing.md"]
    assert faq["source"] == "Billing questions" and faq["doc_type"] == "faq"  # the title, the first folder
    assert len(faq["last_update_date"]) == 10 and faq["last_update_date"][4] == "-"  # the file's date (no git)
    assert faq["sidebar_label"] == "Billing questions" and faq["sidebar_position"] == 0
    assert faq["learning_objectives"] == []
    intro = docs["intro.md"]
    assert (intro["source"], intro["doc_type"], intro["last_update_date"]) == ("Core Rules v3.1", "core-rules", "2025-03-04")
    assert isinstance(docs["bad-date.md"], InvalidDocumentError) and "next tuesday" in str(docs["bad-date.md"])
    assert _docs(tmp_path / "b", MetadataPolicy(default_doc_type="guide"))["faq/billing.md"]["doc_type"] == "guide"


def test_required_keys_and_allowed_doc_types_fail_documents_by_name(tmp_path):
    docs = _docs(tmp_path, MetadataPolicy(required=("source", "doc_type"), doc_types=("core-rules", "faq")))
    assert isinstance(docs["faq/billing.md"], InvalidDocumentError)
    assert "faq/billing.md" in str(docs["faq/billing.md"]) and "'source', 'doc_type'" in str(docs["faq/billing.md"])
    assert docs["intro.md"]["doc_type"] == "core-rules"
    allowed = _docs(tmp_path / "c", MetadataPolicy(doc_types=("core-rules",)))
    assert "not one of core-rules" in str(allowed["faq/billing.md"])


def test_last_update_date_comes_from_the_last_git_commit(tmp_path):
    root = write_corpus(tmp_path / "docs", {"page.md": "# Page\n\nText.\n"})
    env = {**os.environ, "GIT_AUTHOR_DATE": "2021-06-07T12:00:00", "GIT_COMMITTER_DATE": "2021-06-07T12:00:00",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "docs"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, env=env)
    (ref,) = discover(root).documents
    assert complete(read_document(ref), ref, MetadataPolicy()).metadata["last_update_date"] == "2021-06-07"


@pytest.mark.system
def test_rag_ingest_with_required_metadata_names_the_document_and_indexes_the_rest(tmp_path):
    write_corpus(tmp_path / "docs", DOCS)
    env = subprocess_env(tmp_path, RAG_REQUIRED_METADATA="source,doc_type,last_update_date")
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    failed = {e["doc_path"]: e["error"] for e in out["errors"]}
    assert set(failed) == {"faq/billing.md", "bad-date.md"}
    assert "missing required metadata 'source', 'doc_type', 'last_update_date'" in failed["faq/billing.md"]
    assert out["documents_processed"] == 1  # intro.md is indexed
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=env["RAG_CHROMA_PATH"], settings=ChromaSettings(anonymized_telemetry=False))
    metas = client.get_collection("rag_chunks").get(include=["metadatas"])["metadatas"]
    assert metas and {m["doc_path"] for m in metas} == {"intro.md"}
    assert all(m["source"] == "Core Rules v3.1" and m["last_update_date"] == "2025-03-04" for m in metas)


def test_the_git_head_is_asked_once_for_many_documents_and_again_later(tmp_path, monkeypatch):
    from rag_assets.ingest import document_metadata

    root = write_corpus(tmp_path / "docs", {f"p{i}.md": f"# Page {i}\n\nText {i}.\n" for i in range(50)})
    asked = []
    monkeypatch.setattr(document_metadata, "_read_git_head", lambda d: asked.append(d) or "")
    for ref in discover(root).documents:
        complete(read_document(ref), ref, MetadataPolicy())
    assert asked == [str(root)]  # was one `git rev-parse` a document
    monkeypatch.setattr(document_metadata, "_HEAD_TTL_SECONDS", 0.0)  # "later": a commit since is seen
    (ref, *_) = discover(root).documents
    complete(read_document(ref), ref, MetadataPolicy())
    assert len(asked) == 2


def test_a_date_with_trailing_text_or_in_the_future_is_replaced_by_the_files_date_with_a_warning(tmp_path, caplog):
    """Issue 36, item 10: `2024-01-05garbage` and a future last_update_date were accepted silently."""
    root = write_corpus(tmp_path / "docs", {
        "garbage.md": "---\nlast_update_date: 2024-01-05garbage\n---\n# G\n\nText.\n",
        "future.md": "---\nlast_update_date: 2999-01-01\n---\n# F\n\nText.\n",
        "timed.md": "---\nlast_update_date: \"2024-01-05 10:00:00 +0100\"\n---\n# T\n\nText.\n",
        "zulu.md": "---\nlast_update_date: \"2024-01-05T10:00:00Z\"\n---\n# Z\n\nText.\n",
    })
    refs = {r.doc_path: r for r in discover(root).documents}
    warnings: list[str] = []
    with caplog.at_level("WARNING"):
        meta = {p: complete(read_document(r), r, MetadataPolicy(), warnings).metadata for p, r in refs.items()}
    today = file_date(refs["garbage.md"])
    assert meta["garbage.md"]["last_update_date"] == today and meta["future.md"]["last_update_date"] == today
    assert meta["timed.md"]["last_update_date"] == meta["zulu.md"]["last_update_date"] == "2024-01-05"
    assert sorted(warnings) == [
        f"future.md: last_update_date '2999-01-01' lies in the future: the file's date {today} is used",
        f"garbage.md: last_update_date '2024-01-05garbage' is not a date (use YYYY-MM-DD): the file's date {today} is used",
    ]
    assert sorted(r.getMessage() for r in caplog.records) == sorted(warnings)  # logged as they arise
