"""A hostile docs folder through the real CLI: every good document indexed and queryable, every
bad one reported by name with its reason, exit status 1, nothing indexed before lost.

The corpus and the decisions about what counts as bad are in hostile_corpus.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest

from rag_assets.config import Settings
from rag_assets.ingest.discovery import discover
from rag_assets.embedding import load_embedder
from rag_assets.errors import DocumentError
from rag_assets.ingest.frontmatter import decode, read_document
from rag_assets.index.chroma_store import ChromaStore
from rag_assets_tests.support.corpus import SAMPLE_DOCS
from rag_assets_tests.support.hostile_corpus import EMPTY, GOOD, build_hostile_corpus, unlock


def run(args: list[str], codes=(0,), timeout=600) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True, env=os.environ.copy(), timeout=timeout)
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def ingest(codes=(0,)) -> dict:
    return json.loads(run([sys.executable, "-m", "rag_assets", "ingest", "--json"], codes).stdout)


def snapshot() -> dict[str, dict[str, str]]:
    """doc_path -> {chunk_id: text} of everything in the collection."""
    s = Settings.from_env()
    e = load_embedder(s.embedding)
    store = ChromaStore(path=s.chroma_path, collection=s.collection, embedding_model=e.model_name, dimension=e.dimension)
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for cid, text, meta in store.iter_all():
        out[meta["doc_path"]][cid] = text
    return dict(out)


@pytest.fixture
def env(rag_env, dagster_home):
    yield rag_env
    unlock(rag_env / "docs")


@pytest.mark.system
def test_hostile_corpus_good_indexed_bad_reported_nothing_lost(env):
    docs = env / "docs"
    first = ingest()
    assert first["documents_processed"] == len(SAMPLE_DOCS)
    before = snapshot()
    assert set(before) == set(SAMPLE_DOCS)

    bad = build_hostile_corpus(docs, outside=env / "outside")
    report = ingest(codes=(1,))
    errors = {e["doc_path"]: e["error"] for e in report["errors"]}
    assert set(errors) == set(bad), f"unexpected report: {json.dumps(report['errors'], indent=1)}"
    for doc_path, reason in bad.items():
        assert reason in errors[doc_path], (doc_path, errors[doc_path])
    assert report["documents_failed"] == len(bad)

    after = snapshot()
    for doc_path in SAMPLE_DOCS:  # nothing previously indexed lost or rewritten
        assert after[doc_path] == before[doc_path]
    for doc_path in GOOD:
        assert after.get(doc_path), f"{doc_path} not indexed"
    for doc_path in EMPTY:
        assert doc_path not in after  # 0 chunks, and no error (checked above)
    if os.geteuid() == 0:
        assert after.get("locked.md")  # root reads a mode-000 file: a good document
    assert set(after) <= set(SAMPLE_DOCS) | set(GOOD) | {"locked.md"}
    everything = "\n".join(t for chunks in after.values() for t in chunks.values())
    assert "PLATYPUS" not in everything  # the file behind the outside symlink was never read
    assert "<|endoftext|>" in after["endoftext.md"][next(iter(after["endoftext.md"]))]

    # the partition key of "wait...what.md" is mapped, the doc_path is not
    assert "wait...what.md" in after

    # every good document answers a query for its own word (keyword mode: exact, model-independent)
    batch = env / "questions.jsonl"
    batch.write_text("".join(json.dumps({"id": p, "question": w}) + "\n" for p, w in GOOD.items()), encoding="utf-8")
    out = run([sys.executable, "-m", "rag_assets", "query", "--batch", str(batch), "--mode", "keyword", "--top-k", "3"])
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert {a["id"]: a["results"][0]["doc_path"] for a in answers} == {p: p for p in GOOD}

    # a second run reports the same bad files again (failures are retried, not forgotten) and
    # touches nothing else
    again = ingest(codes=(1,))
    assert {e["doc_path"] for e in again["errors"]} == set(bad)
    assert again["embeddings_computed"] == 0
    assert snapshot() == after

    # fixing a file clears its error on the next run
    (docs / "latin1.md").write_bytes("# Café\n\nLatin-1 fixed as UTF-8: crème brûlée.\n".encode("utf-8"))
    fixed = ingest(codes=(1,))
    assert "latin1.md" not in {e["doc_path"] for e in fixed["errors"]}
    assert snapshot().get("latin1.md")


def test_huge_file_is_indexed_when_the_limit_allows_it_in_bounded_memory(env, monkeypatch):
    """RAG_MAX_FILE_BYTES is a real switch: above the size the file is refused by its size; with the
    limit raised, discovery hashes it in 1 MiB blocks (peak memory well under the file size)."""
    import resource
    import tracemalloc

    from rag_assets_tests.support.hostile_corpus import HUGE_BYTES, _huge

    big = env / "docs" / "huge.md"
    _huge(big, HUGE_BYTES)
    refused = discover(env / "docs", max_file_bytes=5_000_000)
    assert [e.path for e in refused.errors] == ["huge.md"]
    assert "20,971,520 bytes, over the 5,000,000-byte limit" in refused.errors[0].reason
    assert "RAG_MAX_FILE_BYTES" in refused.errors[0].reason

    tracemalloc.start()
    catalog = discover(env / "docs", max_file_bytes=HUGE_BYTES)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert {d.doc_path for d in catalog.documents} >= {"huge.md"} and not catalog.errors
    assert peak < 4 * (1 << 20), f"discovery peaked at {peak:,} bytes for a {HUGE_BYTES:,}-byte file"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0  # (sanity: rusage available)


@pytest.mark.system
def test_file_deleted_between_discovery_and_parsing(env):
    """The file is removed right after the catalog run discovered it: the run neither crashes nor
    reports a failure for a file that no longer exists; the other documents are indexed, and the
    next ingest drops the vanished partition."""
    victim = env / "docs" / "doomed.md"
    victim.write_text("# Doomed\n\nThis page is deleted mid-run.\n", encoding="utf-8")
    driver = textwrap.dedent(
        f"""
        import os, sys
        from rag_assets.index.stage_store import StageStore
        _write_catalog = StageStore.write_catalog
        def write_catalog(self, catalog):  # the catalog run has seen the file: now it goes
            _write_catalog(self, catalog)
            os.remove({str(victim)!r})
        StageStore.write_catalog = write_catalog
        from rag_assets.cli.main import main
        sys.exit(main(["ingest", "--json"]))
        """
    )
    report = json.loads(run([sys.executable, "-c", driver], codes=(0,)).stdout)
    assert not victim.exists()
    assert report["errors"] == [] and report["documents_processed"] == len(SAMPLE_DOCS)
    assert set(snapshot()) == set(SAMPLE_DOCS)
    follow = ingest()
    assert follow["documents_deleted"] == 1 and follow["errors"] == []


@pytest.mark.system
def test_read_document_failures_name_the_file(tmp_path, monkeypatch):
    """The in-process side of the cases a CLI run cannot stage reliably."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nText.\n", encoding="utf-8")
    refs = {r.doc_path: r for r in discover(docs).documents}

    # vanished after discovery
    (docs / "a.md").unlink()
    with pytest.raises(DocumentError, match="a.md: file vanished after discovery"):
        read_document(refs["a.md"])

    # edited after discovery: never parsed under the old fingerprint
    (docs / "b.md").write_text("# B\n\nText, edited.\n", encoding="utf-8")
    with pytest.raises(DocumentError, match="b.md: file changed while being ingested"):
        read_document(refs["b.md"])

    # unreadable (what chmod 000 gives a non-root user)
    real_open = os.open

    def denied(path, *args, **kwargs):
        if str(path).endswith("b.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(DocumentError, match="b.md: cannot read file: Permission denied"):
        read_document(refs["b.md"])
    assert [e.reason for e in discover(docs).errors] == ["cannot read file: Permission denied"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file; covered by test_read_document_failures_name_the_file")
def test_unreadable_file_is_reported(tmp_path):
    (tmp_path / "locked.md").write_text("# L\n", encoding="utf-8")
    (tmp_path / "locked.md").chmod(0)
    try:
        catalog = discover(tmp_path)
        assert [(e.path, e.reason) for e in catalog.errors] == [("locked.md", "cannot read file: Permission denied")]
    finally:
        (tmp_path / "locked.md").chmod(0o644)


@pytest.mark.parametrize(
    "data, expected",
    [
        ("# Plain UTF-8 ✓\n".encode("utf-8"), "# Plain UTF-8 ✓\n"),
        (b"\xef\xbb\xbf# With BOM\r\n", "# With BOM\n"),
        ("# Café\n".encode("cp1252"), "not valid UTF-8 (byte 5)"),
        ("# UTF-16\n".encode("utf-16"), "UTF-16 text, not UTF-8"),
        (b"# text then a NUL far away" + b" " * 20_000 + b"\x00", "binary file"),
    ],
)
def test_decoding_policy(data, expected):
    """UTF-8, or UTF-8 with a BOM; everything else is reported, never guessed."""
    if expected.startswith("#"):
        assert decode(data, "x.md") == expected
    else:
        with pytest.raises(DocumentError, match=expected.replace("(", r"\(").replace(")", r"\)")):
            decode(data, "x.md")
