"""A damaged search snapshot is never served: a segment whose file was truncated, overwritten with
same-size garbage or removed is found when a process opens it (sizes and CRC-32 written in its
meta.json), and the reader (a query, `rag serve`'s warm-up), the next commit, or `rag ingest` with
nothing else to do rebuilds the snapshot from the store; the results are those of the undamaged index.
Before: a truncated vectors.npy made every query fail (EOFError), `rag ingest` found nothing to do and
`rag serve`'s warm-up failed; same-size garbage gave wrong results, silently."""

import logging
import os

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.retrieval.retriever import Retriever
from rag_assets.retrieval.snapshot_builds import builds_for, manifest_segments, snapshot_follows
from rag_assets.retrieval.snapshot_integrity import DamagedSegment
from rag_assets.retrieval.snapshot_segments import Segment
from rag_assets.retrieval.snapshot_writer import SnapshotWriter, ensure_snapshot
from rag_assets.serving.requests import search_request
from rag_assets.serving.service import IndexService
from rag_assets_tests.support.corpus import SAMPLE_DOCS, write_corpus
from rag_assets_tests.support.index_builder import build_index

QUESTIONS = ("HTTP 429 retry-after", "How can I receive the response incrementally as events?")


@pytest.fixture
def indexed(tmp_path):
    write_corpus(tmp_path / "docs")
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    build_index(None, settings)
    retriever = Retriever.from_settings(settings)
    expected = {q: [(r.chunk_id, round(r.score, 5)) for r in retriever.search(q, "hybrid", 5)] for q in QUESTIONS}
    return settings, expected


def live_segment(settings) -> str:
    builds = builds_for(settings)
    return str(builds.segment_folder(manifest_segments(builds.current())[0]))


def truncate(path: str) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)


def scribble(path: str) -> None:
    """Same size, other bytes: the array's header kept, its data garbage."""
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.seek(128)
        fh.write(np.random.default_rng(0).bytes(size - 128))


def ranked(retriever) -> dict:
    return {q: [(r.chunk_id, round(r.score, 5)) for r in retriever.search(q, "hybrid", 5)] for q in QUESTIONS}


@pytest.mark.parametrize("damage", [truncate, scribble, os.remove])
def test_a_reader_never_serves_a_damaged_segment_and_rebuilds_it_from_the_store(indexed, damage, caplog):
    settings, expected = indexed
    folder = live_segment(settings)
    damage(os.path.join(folder, "vectors.npy"))
    with pytest.raises(DamagedSegment, match="vectors.npy"):
        Segment(folder)
    retriever = Retriever.from_settings(settings)
    with caplog.at_level(logging.WARNING, logger="rag_assets.retrieval"):
        assert ranked(retriever) == expected
    assert retriever.snapshot.rebuilds == 1
    assert any("vectors.npy" in r.getMessage() and "building it from the store" in r.getMessage()
               for r in caplog.records)
    assert os.path.basename(folder) not in manifest_segments(builds_for(settings).current())
    again = Retriever.from_settings(settings)  # repaired for every reader
    assert ranked(again) == expected and again.snapshot.rebuilds == 0


def test_rag_ingest_with_nothing_to_do_repairs_a_truncated_segment(indexed):
    settings, expected = indexed
    truncate(os.path.join(live_segment(settings), "vectors.npy"))
    assert not snapshot_follows(settings)  # the no-op check no longer says "nothing to do"
    assert ensure_snapshot(settings) is True
    assert snapshot_follows(settings) and ensure_snapshot(settings) is False
    assert ranked(Retriever.from_settings(settings)) == expected


def test_a_commit_on_a_damaged_segment_rebuilds_first(tmp_path):
    """A commit builds on the live segments (merges and compactions copy their arrays): on a damaged
    one it carried the garbage on, and the dense ranking stayed noise."""
    pages = {f"more/page-{i}.md": f"# Page {i}\n\n## Widgets {i}\n\nWidget {i} answers requests on topic {i}.\n"
             for i in range(20)}
    write_corpus(tmp_path / "docs", {**SAMPLE_DOCS, **pages})
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    build_index(None, settings)
    dense = {q: [r.chunk_id for r in Retriever.from_settings(settings).search(q, "vector", 5)] for q in QUESTIONS}
    scribble(os.path.join(live_segment(settings), "vectors.npy"))
    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    SnapshotWriter(settings, store).remove(["more/page-0.md"])  # an ingest's commit of one removal
    retriever = Retriever.from_settings(settings)
    assert {q: [r.chunk_id for r in retriever.search(q, "vector", 5)] for q in QUESTIONS} == dense
    assert retriever.snapshot.rebuilds == 0  # the commit repaired it: the reader builds nothing


def test_rag_serve_warms_up_over_a_damaged_segment(indexed, caplog):
    settings, expected = indexed
    truncate(os.path.join(live_segment(settings), "vectors.npy"))
    service = IndexService([(Corpus(), settings)])
    with caplog.at_level(logging.WARNING, logger="rag_assets"):
        service.warm()
    assert not [r for r in caplog.records if "warm-up search failed" in r.getMessage()]
    found = service.search(search_request({"query": QUESTIONS[0], "top_k": 5}))
    assert [r["chunk_id"] for r in found["results"]] == [c for c, _ in expected[QUESTIONS[0]]]
