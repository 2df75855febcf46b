"""`rag ingest` / `rag ingest-doc` as a user runs them: a subprocess, real files, a real instance."""

import json
import os
import subprocess
import sys

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore

pytestmark = pytest.mark.system


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
    e = load_embedder(s.embedding)
    return ChromaStore(path=s.chroma_path, collection=s.collection, embedding_model=e.model_name, dimension=e.dimension)


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

    # unchanged corpus: no run at all; after a touch: still none (the content hash decides)
    noop, _ = ingest_json()
    assert noop["documents_unchanged"] == 3 and noop["documents_processed"] == 0 and noop["run_ids"] == []
    assert noop["embedding_seconds"] == 0
    os.utime(env / "docs" / "rate-limits.md")
    touched, _ = ingest_json()
    assert touched["documents_unchanged"] == 3 and touched["embeddings_computed"] == 0 and touched["run_ids"] == []

    # one paragraph appended to one section: only the changed chunk is embedded again
    doc = env / "docs" / "guide" / "evaluation.md"
    doc.write_text(doc.read_text() + "\nExport graded results as CSV to share them with reviewers.\n")
    edit, _ = ingest_json()
    assert edit["documents_processed"] == 1 and edit["documents_unchanged"] == 2
    assert edit["embeddings_computed"] == 1 and edit["embeddings_reused"] >= 1
    assert 0 < edit["embedding_seconds"] < edit["duration_seconds"]  # the model's share of the ingest
    assert len(edit["run_ids"]) == 1  # no file appeared or vanished: no catalog run, one document run
    assert ingest_json()[0]["run_ids"] == []  # the edit is now the catalog's "as last seen"
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


def test_counts_add_up(env):
    (env / "docs" / "extra.md").write_text("# Extra\n\nOne more page about retries and timeouts.\n")
    first, _ = ingest_json()
    (env / "docs" / "extra.md").write_text("# Extra\n\nOne more page about retries, timeouts and backoff.\n")
    report, _ = ingest_json()
    assert report["documents_discovered"] == 4
    assert (report["documents_processed"], report["documents_unchanged"], report["documents_failed"]) == (1, 3, 0)


def test_orphaned_vectors_are_removed_even_when_the_state_is_lost(env):
    odd = env / "docs" / "wait...what.md"  # its partition key is rewritten: deletion must go by doc_path
    odd.write_text("# Odd name\n\nMarmalade ellipsis: a page with three dots in its name.\n")
    ingest_json()
    assert "wait...what.md" in store().doc_paths()
    import shutil

    shutil.rmtree(env / "state")
    odd.unlink()
    report, _ = ingest_json()
    assert report["vectors_deleted"] >= 1 and "wait...what.md" not in store().doc_paths()
    hits = json.loads(rag("query", "marmalade ellipsis", "--mode", "keyword", "--json").stdout)["results"]
    assert all(h["doc_path"] != "wait...what.md" for h in hits)
    ingest_json()
    assert "wait...what.md" not in store().doc_paths()


def test_an_empty_or_missing_docs_folder_never_empties_the_index(env, tmp_path):
    ingest_json()
    before = store().count()
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = rag("ingest", "--docs-dir", str(empty), check_codes=(1,))
    assert "refusing to remove 3 of 3 indexed documents" in refused.stderr and str(empty) in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) <= 5, refused.stderr
    assert "--allow-mass-delete" in refused.stderr and "Traceback" not in refused.stderr
    assert store().count() == before

    missing = rag("ingest", "--docs-dir", "/nonexistent/docs", check_codes=(2,))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) <= 5 and "docs folder not found: /nonexistent/docs" in missing.stderr
    as_json = rag("ingest", "--docs-dir", "/nonexistent/docs", "--json", check_codes=(2,))
    assert "docs folder not found" in json.loads(as_json.stdout)["errors"][0]["error"]
    assert store().count() == before

    report, _ = ingest_json("--docs-dir", str(empty), "--allow-mass-delete")
    assert report["documents_deleted"] == 3 and store().count() == 0


def test_a_terminal_sees_progress(env):
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "rag_assets", "ingest"], stdout=subprocess.PIPE, stderr=slave,
                            env=os.environ.copy())
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=300)
    os.close(master)
    text = seen.decode("utf-8", "replace")
    assert proc.returncode == 0
    assert "embed" in text and "chunks" in text and "%" in text, text[-2000:]
    assert "ingest" in text and "documents" in text


def test_an_empty_folder_on_a_fresh_index_is_a_usage_error_naming_it(env, tmp_path):
    empty = tmp_path / "one-level-too-low"
    empty.mkdir()
    proc = rag("ingest", "--docs-dir", str(empty), check_codes=(2,))
    assert str(empty) in proc.stderr and "no markdown files" in proc.stderr and proc.stderr.count("\n") == 1
    assert not store().count()


def test_ingest_doc_force_reads_a_file_whose_size_and_mtime_were_kept(env):
    ingest_json()
    doc = env / "docs" / "rate-limits.md"
    st = doc.stat()
    text = doc.read_text()
    changed = text.replace("429", "430", 1)
    assert len(changed) == len(text) and changed != text
    with open(doc, "r+") as fh:  # in place: same inode, same size
        fh.write(changed)
    os.utime(doc, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime, as `cp -p` or a backup restore would
    assert json.loads(rag("ingest-doc", "rate-limits.md", "--json").stdout)["documents_processed"] == 0
    forced = json.loads(rag("ingest-doc", "rate-limits.md", "--force", "--json").stdout)
    assert forced["documents_processed"] == 1
    assert any("430" in text for text, meta in zip(*_texts_and_metas()) if meta["doc_path"] == "rate-limits.md")


def _texts_and_metas():
    got = store()._collection.get(include=["documents", "metadatas"])
    return got["documents"], got["metadatas"]


def test_a_closed_pipe_ends_quietly(env, tmp_path):
    ingest_json()
    batch = tmp_path / "many.jsonl"
    batch.write_text("".join(json.dumps({"id": i, "question": f"How many requests per minute, case {i}?"}) + "\n"
                             for i in range(400)))
    proc = subprocess.Popen([sys.executable, "-m", "rag_assets", "query", "--batch", str(batch), "--top-k", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    proc.stdout.read(100)  # `| head -c 100`
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=600) == 141 and "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_another_folder_after_the_demo_is_its_own_corpus_and_the_demo_is_kept(env, tmp_path):
    ingest_json()
    before = store().doc_paths()
    mine = tmp_path / "my-docs"
    (mine / "pumps").mkdir(parents=True)
    (mine / "pumps" / "seals.md").write_text("# Seals\n\n## Replacing a seal\n\nReplace the pump seal every spring.\n")
    (mine / "faq.md").write_text("# FAQ\n\n## Noise\n\nA noisy pump has a worn bearing.\n")
    report, proc = ingest_json("--docs-dir", str(mine))
    assert report["documents_processed"] == 2 and report["documents_deleted"] == 0 and not report["removal_refused"]
    assert "'my_docs'" in proc.stderr
    assert store().doc_paths() == before  # the demo's index as it was
    # moving the default corpus to the folder instead is asked for on purpose: the demo's documents go
    report, proc = ingest_json("--docs-dir", str(mine), "--corpus", "default", codes=(1,))
    assert report["removal_refused"].startswith("refusing to remove 3 of 3 indexed documents")
    report, _ = ingest_json("--docs-dir", str(mine), "--corpus", "default", "--allow-mass-delete")
    assert report["documents_deleted"] == 3 and store().doc_paths() == {"pumps/seals.md", "faq.md"}


def test_the_summary_counts_code_blocks_split_to_fit_a_chunk(env):
    code = "\n".join(f"value_{i} = compute_something(value_{i - 1}, factor={i})" for i in range(1, 200))
    (env / "docs" / "big-code.md").write_text(f"# Big code\n\n## Listing\n\n```python\n{code}\n```\n")
    report, _ = ingest_json()
    # split at line boundaries into fenced pieces, instead of one chunk the model would truncate
    assert report["blocks_split"] == 1 and report["chunks_truncated"] == 0
    (env / "docs" / "big-code.md").write_text(f"# Big code\n\n## Listing\n\nAgain:\n\n```python\n{code}\n```\n")
    text = rag("ingest").stdout
    assert "1 code/table block(s) too big for one chunk were split at line boundaries" in text
    assert "exceed the embedding model's input" not in text



def test_scope_flags_say_what_is_left_out_and_lang_filters(env, monkeypatch):
    docs = env / "docs"
    spanish = {"es/guide/evaluation.md": "# Herramienta de evaluación\n\nLa herramienta de evaluación compara las "
               "respuestas del modelo con los resultados esperados. Cree casos de prueba nuevos desde la consola, "
               "añada las variables de cada caso y ejecute la evaluación completa para ver qué respuestas cumplen.\n",
               "es/guide/streaming.md": "# Respuestas en streaming\n\nCon el streaming, la respuesta llega por partes "
               "mientras el modelo la genera, de modo que su aplicación puede mostrar el texto enseguida. Active la "
               "opción en la petición y lea los eventos que envía el servidor hasta el mensaje final.\n"}
    for rel, text in spanish.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text, encoding="utf-8")
    out = rag("ingest", "--exclude", "rate-limits.md").stdout
    assert "left out of scope: 3 page(s): 2 translation, 1 exclude (the corpus's language: en)" in out
    assert "2 translated page(s) not indexed: `rag ingest --languages all`" in out
    assert "each page and why: `rag corpora --left-out default`" in out
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "all-MiniLM-L6-v2")  # the collection's model, whatever is installed
    summary, _ = ingest_json("--languages", "all", "--exclude", "rate-limits.md")
    assert summary["left_out"] == {"exclude": 1} and summary["documents_processed"] == 2
    results = json.loads(rag("query", "--lang", "es", "--json", "¿Cómo creo casos de prueba?").stdout)["results"]
    assert results and {r["doc_path"] for r in results} <= set(spanish)
    assert "RAG_LANGUAGES: 'spanish' is not a language code" in rag("ingest", "--languages", "spanish", check_codes=(2,)).stderr
