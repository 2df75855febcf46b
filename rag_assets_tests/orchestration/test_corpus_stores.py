"""Upgrading: corpora indexed when every corpus kept its collection in the default corpus's store move
into a store of their own at their next `rag ingest`, with nothing embedded again and nothing lost;
one whose collection was the default corpus's own (a folder named `rag`) stops sharing it, and the
default corpus's index is left exactly as its own documents made it.

The old layout is made the old way: the corpora are ingested in this process with their store
pinned to the default corpus's (what every corpus's settings said before), then the CLI of now runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rag_assets.config import Settings
from rag_assets.corpus import Corpus, register
from rag_assets.index.chroma_store import embedded_collection_id
from rag_assets_tests.support.corpus import write_corpus

FAQ = {f"faq/q{i}.md": f"# Question {i}\n\n## Answer {i}\n\nThe walrus{i} valve opens after {i + 3} turns of the "
                       f"handle and closes again on its own after {i + 1} minutes.\n" for i in range(4)}


def rag(*args, codes=(0,)):
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=600)
    assert proc.returncode in codes, f"{args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def ingest_the_old_way(monkeypatch, name: str, folder) -> Corpus:
    """The corpus registered and ingested with its store where it used to be: the default corpus's."""
    from rag_assets.indexing.service import ingest
    from rag_assets.orchestration.loaded_corpora import corpus_definitions

    settings = Settings.from_env()
    corpus = Corpus.named(name, folder, settings.corpora_dir, base=Settings.from_env)
    register(corpus, settings.corpora_dir)
    with monkeypatch.context() as old:
        old.setattr(Corpus, "store_folder", lambda self: self.base_settings().chroma_path)
        old.setattr("rag_assets.indexing.service.move_to_own_store", lambda corpus: None)  # not yet written then
        summary = ingest(corpus=corpus_definitions(corpus))
    assert summary.documents_failed == 0 and summary.documents_processed == len(list(folder.rglob("*.md")))
    return corpus


def chunk_paths(corpus: str) -> dict[str, int]:
    """doc_path -> chunks, of what `rag query` can find in the corpus (read in a fresh process)."""
    code = ("import json, sys\nfrom collections import Counter\nfrom rag_assets.pipeline import RAGPipeline\n"
            "p = RAGPipeline.from_settings(corpus=sys.argv[1] if sys.argv[1] != 'default' else None)\n"
            "print(json.dumps(Counter(m['doc_path'] for _, _, m in p.retriever.store.iter_all())))")
    out = subprocess.run([sys.executable, "-c", code, corpus], capture_output=True, text=True, env=os.environ.copy(),
                         timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def env(rag_env, dagster_home, monkeypatch):
    monkeypatch.setenv("RAG_LOG_LEVEL", "ERROR")
    return rag_env


@pytest.mark.system
def test_a_corpus_in_the_default_store_moves_into_its_own_with_nothing_embedded_again(env, monkeypatch):
    rag("ingest", "--json")
    default_before = chunk_paths("default")
    corpus = ingest_the_old_way(monkeypatch, "faq", write_corpus(env / "faq_docs", FAQ))
    shared = Settings.from_env().chroma_path
    assert embedded_collection_id(shared, "faq_chunks") is not None and not corpus.own_store.exists()
    assert corpus.settings().chroma_path == shared  # read where its vectors are, until it moves
    before = chunk_paths("faq")
    assert set(before) == set(FAQ)

    moved = rag("--corpus", "faq", "ingest", "--json")
    assert "moved into a store of its own" in moved.stderr and "nothing embedded again" in moved.stderr
    summary = json.loads(moved.stdout)
    assert summary["embeddings_computed"] == 0 and summary["documents_processed"] == 0, summary
    assert summary["documents_unchanged"] == len(FAQ) and summary["documents_failed"] == 0
    assert corpus.settings().chroma_path == corpus.own_store and corpus.own_store.is_dir()
    assert embedded_collection_id(shared, "faq_chunks") is None  # gone from the default corpus's store
    assert chunk_paths("faq") == before and chunk_paths("default") == default_before
    hit = json.loads(rag("--corpus", "faq", "query", "How many turns open the walrus2 valve?", "--json").stdout)
    assert hit["results"][0]["doc_path"] == "faq/q2.md"
    listed = {c["name"]: c for c in json.loads(rag("corpora", "--json").stdout)["corpora"]}
    assert listed["faq"]["store"] == str(corpus.own_store) and listed["faq"]["indexed"] == len(FAQ)
    # and from now on it is an ordinary corpus: nothing to move, nothing to do
    again = rag("--corpus", "faq", "ingest", "--json")
    assert "moved" not in again.stderr and json.loads(again.stdout)["documents_unchanged"] == len(FAQ)


@pytest.mark.system
def test_a_corpus_named_rag_stops_sharing_the_default_corpus_collection(env, monkeypatch):
    """Issue 36 item 3 as it was left on disk: a folder `rag` became corpus `rag`, collection rag_chunks,
    the default corpus's own. Its next ingest gives it a store of its own (indexed from its embedding
    cache) and takes its chunks out of the default corpus's collection; the default's stay."""
    rag("ingest", "--json")
    default_before = chunk_paths("default")
    corpus = ingest_the_old_way(monkeypatch, "rag", write_corpus(env / "rag", FAQ))
    leaked = chunk_paths("default")
    assert set(leaked) == set(default_before) | set(FAQ)  # what the issue saw: results leaked both ways

    moved = rag("--corpus", "rag", "ingest", "--json")
    assert "shared the default corpus's collection" in moved.stderr
    summary = json.loads(moved.stdout)
    assert summary["embeddings_computed"] == 0 and summary["documents_failed"] == 0, summary
    assert summary["documents_processed"] == len(FAQ)  # indexed again, into its own store, from the cache
    assert corpus.settings().chroma_path == corpus.own_store
    assert chunk_paths("default") == default_before  # the default corpus's index as its own documents made it
    assert set(chunk_paths("rag")) == set(FAQ)
    assert json.loads(rag("ingest", "--json").stdout)["documents_unchanged"] == len(default_before)


@pytest.mark.system
def test_a_move_killed_after_its_rename_is_finished_by_the_next_ingest(env, monkeypatch):
    """Killed just after the store move's rename (the copy complete, the old collection not yet
    dropped), the old collection stayed in the default corpus's store for good: the next ingest
    skipped the move (the corpus had a store of its own) and, having nothing to do, took its no-op path."""
    from rag_assets.orchestration import corpus_stores

    rag("ingest", "--json")
    corpus = ingest_the_old_way(monkeypatch, "faq", write_corpus(env / "faq_docs", FAQ))
    shared = Settings.from_env().chroma_path
    before = chunk_paths("faq")

    def killed(*args):
        raise KeyboardInterrupt("killed after the rename")

    with monkeypatch.context() as stopped, pytest.raises(KeyboardInterrupt):
        stopped.setattr(corpus_stores, "drop_collection", killed)
        corpus_stores.move_to_own_store(corpus)
    assert corpus.own_store.is_dir() and embedded_collection_id(shared, "faq_chunks") is not None

    finished = rag("--corpus", "faq", "ingest", "--json")
    assert "left behind" in finished.stderr and embedded_collection_id(shared, "faq_chunks") is None
    assert json.loads(finished.stdout)["documents_failed"] == 0
    assert chunk_paths("faq") == before
