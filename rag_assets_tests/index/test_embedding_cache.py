import sqlite3

import numpy as np

from rag_assets.config import Settings
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.index.state_db import StateDB, local_state_url


def test_roundtrip_per_model_and_ignore_duplicates(tmp_path):
    cache = EmbeddingCache(StateDB.open(local_state_url(tmp_path)))
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    cache.put_many("m1", ["h1", "h2"], v)
    cache.put_many("m1", ["h1"], v[:1] + 100)  # a second writer of the same key changes nothing
    got = cache.get_many("m1", ["h1", "h2", "h3"])
    assert set(got) == {"h1", "h2"} and np.array_equal(got["h1"], v[0])
    assert cache.get_many("m2", ["h1"]) == {}
    assert cache.count("m1") == 2


def test_many_keys_beyond_sqlite_parameter_limit(tmp_path):
    cache = EmbeddingCache(StateDB.open(local_state_url(tmp_path)))
    hashes = [f"h{i}" for i in range(1500)]
    cache.put_many("m", hashes, np.ones((1500, 2), dtype=np.float32))
    assert len(cache.get_many("m", hashes)) == 1500


def test_the_old_cache_file_is_imported_once(tmp_path):
    old = sqlite3.connect(tmp_path / "embeddings.sqlite")
    old.execute("CREATE TABLE embeddings (model TEXT, content_hash TEXT, dimension INTEGER, vector BLOB,"
                " PRIMARY KEY (model, content_hash))")
    old.execute("INSERT INTO embeddings VALUES ('m', 'h1', 2, ?)", (np.array([1, 2], dtype=np.float32).tobytes(),))
    old.commit()
    old.close()
    cache = EmbeddingCache.for_settings(Settings.from_env({}, state_dir=tmp_path).paths)
    assert np.array_equal(cache.get_many("m", ["h1"])["h1"], [1, 2])
    assert not (tmp_path / "embeddings.sqlite").exists() and (tmp_path / "embeddings.sqlite.imported").exists()
