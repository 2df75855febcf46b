"""The state database behind one interface: the same records, cache and generation on SQLite (the
default) and on a real PostgreSQL server (RAG_STATE_URL)."""

import os
import threading

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.errors import ConfigurationError
from rag_assets.index.generation import bump_generation, read_generation
from rag_assets.models import Catalog
from rag_assets.index.stage_store import CHUNKS, INDEXED, StageStore
from rag_assets.index.state_db import StateDB
from rag_assets_tests.support.postgres_server import requires_postgres
from rag_assets_tests.support.postgres_server import PG_BIN, createdb, postgres_server
from rag_assets_tests.index.test_stage_store import ref


@pytest.fixture(scope="module")
def pg_base():
    if PG_BIN is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: apt-get install postgresql")
    pytest.importorskip("psycopg2", reason="psycopg2 not installed (pip install -e '.[dev]')")
    with postgres_server(databases=()) as base:
        yield base


_DATABASES = iter(range(1000))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def settings(request, tmp_path):
    if request.param == "sqlite":
        return Settings.from_env({}, state_dir=tmp_path / "state")
    url = createdb(request.getfixturevalue("pg_base"), f"state_{next(_DATABASES)}")
    return Settings.from_env({"RAG_STATE_URL": url}, state_dir=tmp_path / "state")


def test_records_failures_catalog_cache_and_generation(settings):
    stages = StageStore.for_settings(settings.paths)
    assert stages.db.is_sqlite == (settings.state_url is None)
    stages.write_many(CHUNKS, [(f"d{i}.md", "h", [{"i": i, "text": "é ✓"}], "fp") for i in range(700)])
    assert stages.read(CHUNKS, "d3.md")["payload"] == [{"i": 3, "text": "é ✓"}]
    assert len(stages.headers()) == 700
    stages.write(CHUNKS, "d3.md", "h2", [], "fp")  # an upsert, not a second row
    assert stages.headers(["d3.md"])["d3.md"][CHUNKS] == ("h2", "fp")
    stages.record_failure("d4.md", "h", INDEXED, "store down")
    assert stages.failure("d4.md", "h")["error"] == "store down"
    stages.write_catalog(Catalog("/docs", [ref("a.md"), ref("b.md")], []))
    assert [d.doc_path for d in stages.read_catalog().documents] == ["a.md", "b.md"]
    a = stages.read_catalog().documents[0]
    stats = stages.catalog_stats()  # through the driver's own cursor
    assert stats.files == {d.doc_path: (d.size_bytes, d.mtime_ns, d.inode) for d in stages.read_catalog().documents}
    assert stats.docs_dir == "/docs" and not stats.imports and stats.errors == []
    assert stages.catalog_by_doc_path(["a.md", "gone.md"]) == {"a.md": a}

    cache = EmbeddingCache.for_settings(settings.paths)
    cache.put_many("m", ["x", "y"], np.eye(2, 3, dtype=np.float32))
    cache.put_many("m", ["x"], np.ones((1, 3), dtype=np.float32))  # the first writer's vector stays
    assert np.array_equal(cache.get_many("m", ["x"])["x"], [1, 0, 0]) and cache.count("m") == 2

    assert read_generation(settings) == "empty"
    generation = bump_generation(settings)
    assert read_generation(settings) == generation != "empty"


def test_concurrent_writers_of_one_database(settings):
    """Several threads (as several workers would) write records and vectors at once."""
    errors = []

    def worker(n: int) -> None:
        try:
            stages = StageStore.for_settings(settings.paths)
            cache = EmbeddingCache.for_settings(settings.paths)
            for i in range(30):
                stages.write(CHUNKS, f"w{n}-{i}.md", "h", [], "fp")
                cache.put_many("m", [f"shared-{i}", f"w{n}-{i}"], np.ones((2, 4), dtype=np.float32))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(StageStore.for_settings(settings.paths).headers()) == 120
    assert EmbeddingCache.for_settings(settings.paths).count("m") == 30 + 120


def test_a_bad_state_url_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="RAG_STATE_URL"):
        StateDB("not a url")
    with pytest.raises(ConfigurationError, match="cannot open the state database"):
        StateDB("postgresql+psycopg2://nobody@127.0.0.1:9/none?connect_timeout=2")


def test_the_search_snapshot_is_shared_through_postgresql(pg_base, tmp_path):
    """Two query processes on two machines (two state folders), one PostgreSQL state: the second reads
    the snapshot the ingest committed from the database (its segments unpacked once, nothing built)
    and follows the next commit; the database keeps only the segments the live manifests name."""
    import sqlalchemy as sa

    from rag_assets.index.state_db import StateDB, snapshot_segments
    from rag_assets.retrieval.snapshot import SearchSnapshot
    from rag_assets_tests.support.corpus import write_corpus
    from rag_assets_tests.support.index_builder import build_index

    url = createdb(pg_base, "state_snapshot")
    first_settings = Settings.from_env({"RAG_STATE_URL": url}, state_dir=tmp_path / "machine-a",
                                       chroma_path=tmp_path / "chroma", docs_dir=tmp_path / "docs")
    write_corpus(tmp_path / "docs")
    build_index(tmp_path / "docs", first_settings)  # commits through the shared state
    second_settings = Settings.from_env({"RAG_STATE_URL": url}, state_dir=tmp_path / "machine-b",
                                        chroma_path=tmp_path / "nowhere")
    a, b = SearchSnapshot(first_settings), SearchSnapshot(second_settings)
    assert [h.chunk_id for h in b.view().search("requests per minute", 3)] == \
        [h.chunk_id for h in a.view().search("requests per minute", 3)] != []
    assert (a.rebuilds, b.rebuilds) == (0, 0)
    assert list((tmp_path / "machine-b" / "keyword" / first_settings.collection).glob("seg-*"))
    write_corpus(tmp_path / "docs", {"parts/valves.md": "# Valves\n\nGrease the ZK-4411 valve every quarter.\n"})
    build_index(tmp_path / "docs", first_settings)
    assert b.view().search("ZK-4411 valve grease", 3) and b.view().generation == read_generation(first_settings)
    with StateDB.for_settings(first_settings.paths).read() as conn:
        published = {row.name for row in conn.execute(sa.select(snapshot_segments.c.name))}
    live = {s["name"] for s in b.view().manifest["segments"]}
    assert live <= published and len(published) <= 2 * len(live) + 1


def test_a_plain_postgresql_url_gets_the_installed_driver_and_a_missing_driver_is_one_line():
    from rag_assets.index.state_db import with_driver

    assert with_driver("postgresql://u:p@h:5432/rag") == "postgresql+psycopg2://u:p@h:5432/rag"
    assert with_driver("postgres://u@h/rag") == "postgresql+psycopg2://u@h/rag"
    assert with_driver("postgresql+psycopg2://u@h/rag") == "postgresql+psycopg2://u@h/rag"
    assert with_driver("sqlite:////tmp/x.sqlite") == "sqlite:////tmp/x.sqlite"
    with pytest.raises(ConfigurationError) as err:
        StateDB("postgresql+pg8000://u:secret@127.0.0.1:1/rag")
    message = str(err.value)
    assert "'pg8000'" in message and "secret" not in message and "\n" not in message


@pytest.mark.postgres
@requires_postgres[0]
@requires_postgres[1]
@requires_postgres[2]
def test_rag_state_url_in_the_plain_form_works_end_to_end(tmp_path):
    from rag_assets_tests.support.postgres_server import createdb, postgres_server

    with postgres_server(databases=()) as base:
        url = createdb(base, "rag_plain").replace("postgresql+psycopg2://", "postgresql://")
        settings = Settings.from_env({"RAG_STATE_URL": url, "RAG_STATE_DIR": str(tmp_path / "state")})
        stages = StageStore.for_settings(settings.paths)
        bump_generation(settings)
        assert read_generation(settings) != "empty" and not stages.db.is_sqlite


def test_a_closed_database_releases_its_files_and_opens_again(tmp_path):
    from rag_assets.index import state_db

    url = state_db.local_state_url(tmp_path / "state")
    db = StateDB.open(url)
    db.set_meta("probe", "1")
    assert url in state_db.open_urls()
    state_db.close(url)
    assert url not in state_db.open_urls()
    held = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")]
    assert not [path for path in held if str(tmp_path / "state") in path]
    again = StateDB.open(url)
    assert again is not db and again.get_meta("probe") == "1"
