"""The Chroma store on a real embedded Chroma, with hand-made unit vectors."""

import numpy as np
import pytest

from rag_assets.errors import ConfigurationError
from rag_assets.ingest.ids import assign_ids
from rag_assets.models import Chunk
from rag_assets.index.chroma_store import ChromaStore, open_in_background


def chunks(doc, texts):
    return assign_ids([
        Chunk(doc_path=doc, chunk_index=i, text=t, section=f"S{i}", heading_breadcrumb=["Top", f"S{i}"], token_count=3,
              block_types=["prose"], index_text=t, metadata={"title": "Doc", "source": "src", "tags": "a, b"})
        for i, t in enumerate(texts)
    ])


def vecs(n, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def store(tmp_path):
    return ChromaStore(path=tmp_path / "chroma", collection="tcol", embedding_model="m", dimension=4)


def test_replace_writes_new_then_deletes_stale_and_skips_unchanged(store):
    first = chunks("a.md", ["one", "two", "three"])
    r = store.replace_document("a.md", first, vecs(3))
    assert (r.written, r.deleted, r.unchanged) == (3, 0, 0)
    second = chunks("a.md", ["one", "two", "THREE changed"])
    r = store.replace_document("a.md", second, vecs(3, seed=1))
    assert (r.written, r.deleted, r.unchanged) == (1, 1, 2)
    assert store.count() == 3
    ids = {cid for cid, _, _ in store.iter_all()}
    assert ids == {c.chunk_id for c in second}


def test_metadata_stored_with_every_vector(store):
    store.replace_document("a.md", chunks("a.md", ["alpha"]), vecs(1))
    (_, text, meta), = list(store.iter_all())
    assert text == "alpha"
    for key in ("doc_path", "title", "section", "heading_breadcrumb", "chunk_index", "token_count",
                "content_hash", "embedding_model", "source", "tags"):
        assert key in meta
    assert meta["heading_breadcrumb"] == "Top > S0" and meta["embedding_model"] == "m"


def test_query_returns_cosine_scores_best_first(store):
    v = vecs(3)
    store.replace_document("a.md", chunks("a.md", ["x", "y", "z"]), v)
    hits = store.query(v[1], top_k=3)
    assert hits[0].text == "y" and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_delete_document_only_touches_that_document(store):
    store.replace_document("a.md", chunks("a.md", ["x", "y"]), vecs(2))
    store.replace_document("b.md", chunks("b.md", ["z"]), vecs(1, seed=2))
    assert store.delete_document("a.md") == 2
    assert store.doc_paths() == {"b.md"}


def test_reopening_with_another_model_is_refused(tmp_path):
    ChromaStore(path=tmp_path / "c", collection="tcol", embedding_model="m", dimension=4)
    with pytest.raises(ConfigurationError, match="RAG_COLLECTION"):
        ChromaStore(path=tmp_path / "c", collection="tcol", embedding_model="other", dimension=8)


def test_empty_store_query(store):
    assert store.query(vecs(1)[0]) == []


def _settings(tmp_path, collection="tcol", host=None):
    from types import SimpleNamespace

    return SimpleNamespace(chroma_host=host, chroma_port=8000, chroma_path=tmp_path / "chroma", collection=collection)


def test_opening_in_background_loads_the_collection_the_store_then_shares(store, tmp_path):
    store.replace_document("a.md", chunks("a.md", ["x", "y"]), vecs(2))
    opening = open_in_background(_settings(tmp_path))
    opening.join(timeout=60)
    assert not opening.is_alive()
    again = ChromaStore(path=tmp_path / "chroma", collection="tcol", embedding_model="m", dimension=4)
    assert again.doc_paths() == {"a.md"} and again.count() == 2


def test_opening_in_background_never_creates_a_collection(store, tmp_path):
    store.replace_document("a.md", chunks("a.md", ["x"]), vecs(1))
    opening = open_in_background(_settings(tmp_path, collection="not_made_here"))
    opening.join(timeout=60)
    import chromadb

    names = {getattr(c, "name", c) for c in chromadb.PersistentClient(path=str(tmp_path / "chroma")).list_collections()}
    assert names == {"tcol"}  # the run creates it, with its model


def test_nothing_is_opened_in_background_for_a_server_or_a_store_not_made_yet(tmp_path):
    assert open_in_background(_settings(tmp_path, host="127.0.0.1")) is None
    assert open_in_background(_settings(tmp_path)) is None
