import numpy as np

from rag_assets.embedding_cache import EmbeddingCache


def test_roundtrip_per_model_and_ignore_duplicates(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    cache.put_many("m1", ["h1", "h2"], v)
    cache.put_many("m1", ["h1"], v[:1] + 100)  # a second writer of the same key changes nothing
    got = cache.get_many("m1", ["h1", "h2", "h3"])
    assert set(got) == {"h1", "h2"} and np.array_equal(got["h1"], v[0])
    assert cache.get_many("m2", ["h1"]) == {}
    assert cache.count("m1") == 2


def test_many_keys_beyond_sqlite_parameter_limit(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    hashes = [f"h{i}" for i in range(1500)]
    cache.put_many("m", hashes, np.ones((1500, 2), dtype=np.float32))
    assert len(cache.get_many("m", hashes)) == 1500
