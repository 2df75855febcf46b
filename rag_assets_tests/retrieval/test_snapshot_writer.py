"""Committing the search snapshot: each commit is a new view and a new index generation; documents
replaced or removed never show twice; segments merge geometrically and mostly dead ones are rewritten;
a snapshot that does not follow the index is rebuilt from the store once. Real embedded Chroma, real
state database; 8-d vectors (no model needed to commit)."""

import logging
import math

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.index.generation import bump_generation, read_generation
from rag_assets.ingest.ids import assign_ids
from rag_assets.models import Chunk
from rag_assets.retrieval.snapshot import SearchSnapshot
from rag_assets.retrieval.snapshot_writer import COMPACT_DEAD_SHARE, SnapshotWriter, ensure_snapshot

DIM = 8


@pytest.fixture
def setup(tmp_path):
    settings = Settings.from_env({}, state_dir=tmp_path / "state", chroma_path=tmp_path / "chroma",
                                 docs_dir=tmp_path / "docs", cache_dir=tmp_path / "cache")
    store = ChromaStore(path=settings.chroma_path, collection=settings.collection, embedding_model="test-8d",
                        dimension=DIM)
    return settings, store


def version(doc_path: str, revision: int, sections: int = 2) -> tuple[str, list[Chunk], np.ndarray]:
    chunks = [Chunk(doc_path, i, f"## Part {i}\n\n{doc_path} revision {revision} part {i} about valves", f"Part {i}",
                    ["Doc", f"Part {i}"], 8, ["prose"], index_text=f"Doc > Part {i}\n\n{doc_path} r{revision} p{i}",
                    metadata={"title": "Doc", "module": doc_path.split("/")[0]}) for i in range(sections)]
    assign_ids(chunks)
    rng = np.random.default_rng(revision * 1000 + len(doc_path))
    return doc_path, chunks, rng.standard_normal((sections, DIM)).astype(np.float32)


def write(store: ChromaStore, writer: SnapshotWriter | None, *docs) -> None:
    """What the index step does: the store first, then the snapshot."""
    store.replace_documents(list(docs))
    if writer is not None:
        writer.replace(list(docs))


def texts_by_doc(view) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in range(len(view)):
        out.setdefault(view.table(row).doc_path, []).append(view.text(row))
    return out


def test_each_commit_is_a_view_and_a_generation(setup):
    settings, store = setup
    writer = SnapshotWriter(settings, store)
    reader = SearchSnapshot(settings)
    assert len(reader.view()) == 0 and reader.view().generation == "empty"
    write(store, writer, version("a/one.md", 1), version("b/two.md", 1))
    first = reader.view()
    assert first.generation == read_generation(settings) != "empty"
    assert sorted(texts_by_doc(first)) == ["a/one.md", "b/two.md"]
    write(store, writer, version("a/one.md", 2, sections=3))
    second = reader.view()
    docs = texts_by_doc(second)
    assert len(docs["a/one.md"]) == 3 and all("revision 2" in t for t in docs["a/one.md"])  # never both versions
    assert docs["b/two.md"] == texts_by_doc(first)["b/two.md"]
    assert all("revision 1" in t for t in texts_by_doc(first)["a/one.md"])  # a view does not change under a reader
    writer.remove(["b/two.md"])
    third = reader.view()
    assert sorted(texts_by_doc(third)) == ["a/one.md"] and third.generation == read_generation(settings)
    assert "b/two.md" not in third.documents() and third.documents()["a/one.md"]["module"] == "a"
    assert writer.commits == 3 and writer.rebuilds == 0
    # only the live manifest and the one before it are kept, with their segments
    folder = writer.builds.root
    assert len(list(folder.glob("manifest-*.json"))) == 2
    live = {s["name"] for s in reader.view().manifest["segments"]}
    assert live <= {p.name for p in folder.glob("seg-*")}


def test_segments_merge_geometrically(setup):
    settings, store = setup
    writer = SnapshotWriter(settings, store)
    for i in range(40):
        write(store, writer, version(f"docs/page-{i}.md", 1))
    view = SearchSnapshot(settings).view()
    sizes = [s["rows"] for s in view.manifest["segments"]]
    assert len(sizes) <= math.log(80, 4) + 1, sizes
    assert all(a >= 4 * b for a, b in zip(sizes, sizes[1:])), sizes  # each at least 4 times the next
    docs = texts_by_doc(view)
    assert len(docs) == 40 and all(len(t) == 2 for t in docs.values())
    assert sorted(view.chunk_id(r) for r in range(len(view))) == sorted(store.ids())


def test_a_mostly_dead_segment_is_rewritten(setup):
    settings, store = setup
    writer = SnapshotWriter(settings, store)
    write(store, writer, *[version(f"docs/page-{i}.md", 1) for i in range(8)])
    write(store, writer, *[version(f"docs/page-{i}.md", 2) for i in range(3)])  # 3 of 8 documents: over a quarter
    segments = SearchSnapshot(settings).view().manifest["segments"]
    assert 3 / 8 > COMPACT_DEAD_SHARE
    assert all(not s["dead"] for s in segments) and sum(s["rows"] for s in segments) == 16


def test_a_snapshot_behind_the_index_is_rebuilt_from_the_store_once(setup, caplog):
    settings, store = setup
    write(store, None, version("old/one.md", 1), version("old/two.md", 1))  # an earlier version's ingest
    bump_generation(settings)
    writer = SnapshotWriter(settings, store)
    with caplog.at_level(logging.WARNING, logger="rag_assets.retrieval.snapshot_writer"):
        write(store, writer, version("new/three.md", 1))
    assert writer.rebuilds == 1
    assert any("building it from the store once" in r.getMessage() for r in caplog.records)
    assert sorted(texts_by_doc(SearchSnapshot(settings).view())) == ["new/three.md", "old/one.md", "old/two.md"]
    write(store, writer, version("new/three.md", 2))
    assert writer.rebuilds == 1  # it follows the index again
    assert not ensure_snapshot(settings, store)  # `rag ingest` finds it current
    bump_generation(settings)  # another writer changed the store without committing
    assert ensure_snapshot(settings, store)


def test_a_recreated_collection_starts_over(setup):
    settings, store = setup
    writer = SnapshotWriter(settings, store)
    write(store, writer, version("a/one.md", 1))
    store._client.delete_collection(settings.collection)
    fresh = ChromaStore(path=settings.chroma_path, collection=settings.collection, embedding_model="test-8d",
                        dimension=DIM)
    write(fresh, SnapshotWriter(settings, fresh), version("b/two.md", 1))
    assert sorted(texts_by_doc(SearchSnapshot(settings).view())) == ["b/two.md"]
