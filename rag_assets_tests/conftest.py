"""Shared test setup: offline, no telemetry, and every piece of state in temporary folders."""

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from rag_assets.config import apply_offline_defaults
# modules, not names: a test imports its helpers from rag_assets_tests.support, never from here
from rag_assets_tests.support import corpus, dagster_instance, environment, open_stores

apply_offline_defaults()
# one unpacked tiktoken cache for the whole session (the workers inherit it), never the developer's
# data/cache; removed when the process that made it ends
if not os.environ.get("TIKTOKEN_CACHE_DIR"):
    os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="rag-tiktoken-")
    atexit.register(shutil.rmtree, os.environ["TIKTOKEN_CACHE_DIR"], True)

# The longest tests first, dealt out across the pytest-xdist workers: `--dist worksteal` hands each
# worker a contiguous block of the collection, so the long tests are interleaved for every worker to
# start on one, and the short ones at the end of each block are what an idle worker steals.
_LONGEST_FIRST = ("test_readme_commands.py", "test_scale_out.py", "test_web_ui.py", "test_concurrency.py",
                  "test_crash_recovery.py", "test_cli_ingest.py", "test_pipeline.py")
# Module fixtures too costly to build once per worker (the bundled corpus indexed: ~95 CPU-seconds;
# test_mcp_tools.py's 311 pages; test_test_set.py's course, ingested by `rag ingest`): the tests of a
# module that use one are dealt to one worker together.
_BUILT_ONCE = ("bundled", "many", "course")


def pytest_itemcollected(item):
    if "pg_base" in getattr(item, "fixturenames", ()):  # index/test_state_db.py's throwaway PostgreSQL server
        item.add_marker(pytest.mark.postgres)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        name = item.path.name
        return _LONGEST_FIRST.index(name) if name in _LONGEST_FIRST else len(_LONGEST_FIRST)

    ordered = sorted(items, key=rank)  # stable: the order within a file is kept
    units, together = [], {}
    for item in ordered:
        key = next((f"{item.path}::{name}" for name in _BUILT_ONCE if name in item.fixturenames), None)
        if key is None:
            units.append([item])
        elif key in together:
            together[key].append(item)
        else:
            together[key] = [item]
            units.append(together[key])
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = [item for worker in range(workers) for unit in units[worker::workers] for item in unit]


@pytest.fixture
def rag_env(tmp_path, monkeypatch):
    """A docs folder with the sample corpus and every RAG_* path pointing into tmp_path."""
    corpus.write_corpus(tmp_path / "docs")
    for var, value in environment.state_env(tmp_path).items():
        monkeypatch.setenv(var, value)
    for var in environment.USER_CHOICES:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def dagster_home(tmp_path, monkeypatch):
    """A real, persistent (SQLite) Dagster instance in a temporary DAGSTER_HOME: the repository's
    dagster.yaml with its files under home."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(dagster_instance.instance_yaml(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(env, settings) of an index over the sample corpus, built once per test module."""
    from rag_assets_tests.support import index_builder

    return index_builder.build_sample_index(tmp_path_factory.mktemp("built"))


@pytest.fixture(scope="module")
def site_built(tmp_path_factory):
    """(env, settings) of an index over a small docs site whose pages carry version, url, route and
    site_path (support/site_pages.py), built once per test module."""
    from rag_assets_tests.support import site_pages

    return site_pages.build_site_index(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def chat():
    """The OpenAI-compatible chat stub the serving tests' answers come from (support.serving.chat_stub),
    one per test module (serving/ and system/test_serve.py)."""
    from rag_assets_tests.support.serving import chat_stub

    with chat_stub() as srv:
        yield srv


@pytest.fixture(scope="module", autouse=True)
def _stores_released():
    """The embedded Chroma stores and state databases a module opened are closed when it ends
    (support/open_stores.py)."""
    systems, databases = open_stores.open_systems(), open_stores.open_state_databases()
    yield
    open_stores.stop_systems_opened_since(systems)
    open_stores.close_state_databases_opened_since(databases)


@pytest.fixture(autouse=True)
def _test_stores_released(request):
    """A test's own stores (in its tmp_path) are closed when it ends; a module's shared ones live on
    until the module ends (above)."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    under = str(request.getfixturevalue("tmp_path"))  # asked for here: torn down after this fixture
    systems, databases = open_stores.open_systems(), open_stores.open_state_databases()
    yield
    open_stores.stop_systems_opened_since(systems, under)
    open_stores.close_state_databases_opened_since(databases, under)


@pytest.fixture(autouse=True)
def _interrupts_not_left_ignored():
    """A test must not leave this process ignoring SIGINT or SIGTERM: every process a later test
    starts inherits that (dagster dev, a Chroma server, a compute-log tail), and its stop then waits
    out its timeout (30 s for dagster dev) or never comes. In a full xdist run SIGINT was ignored in
    a worker before test_assets' runs (/proc/self/status), and Dagster's in-process execution maps
    SIGTERM onto SIGINT's handler, so SIGTERM was ignored after them; dagster dev does the same
    mapping when it starts with SIGINT ignored."""
    yield
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
