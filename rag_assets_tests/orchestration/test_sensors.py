"""docs_sensor evaluated with dg.build_sensor_context on a real (SQLite) instance and real files."""

import json
import os
import time

import dagster as dg
import pytest
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from rag_assets.orchestration.definitions import RESOURCES, defs, docs_sensor, documents_partitions

PAST = time.time() - 3600  # files older than the settle window


@pytest.fixture
def instance(rag_env, dagster_home):
    for path in (rag_env / "docs").rglob("*.md"):
        os.utime(path, (PAST, PAST))
    with dg.DagsterInstance.get() as inst:
        yield inst


def tick(instance, cursor=None) -> dg.SensorResult:
    # the code location's resources, as the daemon hands them to the tick
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=RESOURCES)
    result = docs_sensor(context)
    # what the daemon does with the result
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def kinds(result: dg.SensorResult) -> list[str]:
    return ["catalog" if r.run_key.endswith("-catalog") else "documents" for r in result.run_requests]


def documents_runs(result: dg.SensorResult) -> list[dg.RunRequest]:
    return [r for r in result.run_requests if "-documents-" in r.run_key]


def documents_run(result: dg.SensorResult) -> dg.RunRequest:
    runs = documents_runs(result)
    assert len(runs) == 1, result.run_requests
    return runs[0]


def launch(instance, result: dg.SensorResult) -> list[str]:
    """What the daemon does with the run requests: skip a run key this sensor already launched,
    run the others (in process, one after the other, as the queue would); returns the keys run."""
    job = defs.resolve_implicit_global_asset_job_def()
    launched = []
    for request in result.run_requests:
        tags = {"dagster/run_key": request.run_key, "dagster/sensor_name": "docs_sensor"}
        if instance.get_runs(filters=dg.RunsFilter(tags=tags)):
            continue
        run = job.execute_in_process(
            instance=instance, asset_selection=list(request.asset_selection), tags={**request.tags, **tags},
            run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
        )
        assert run.success
        launched.append(request.run_key)
    return launched


def indexed_text(doc_path: str) -> str:
    from rag_assets.config import Settings
    from rag_assets.embedding import load_embedder
    from rag_assets.index.chroma_store import ChromaStore

    settings = Settings.from_env()
    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    return "\n".join(text for _, text, meta in store.iter_all() if meta["doc_path"] == doc_path)


def write(path, text, mtime=PAST):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def test_first_tick_registers_documents_and_requests_one_run(instance):
    result = tick(instance)
    assert sorted(instance.get_dynamic_partitions(documents_partitions.name)) == [
        "guide/evaluation.md", "guide/streaming.md", "rate-limits.md"
    ]
    assert kinds(result) == ["documents", "catalog"]  # a new file is searchable after one run, not two
    tags = documents_run(result).tags
    assert all(r.tags["rag/run"] == "index" and r.tags["rag/index"] == "default" for r in result.run_requests)
    assert tags[ASSET_PARTITION_RANGE_START_TAG] == "guide/evaluation.md"
    assert tags[ASSET_PARTITION_RANGE_END_TAG] == "rate-limits.md"

    again = tick(instance, result.cursor)
    assert not again.run_requests and again.skip_reason is not None


def test_changed_file_requests_only_its_partition_and_touch_is_ignored(instance, rag_env):
    cursor = tick(instance).cursor
    doc = rag_env / "docs" / "guide" / "streaming.md"
    os.utime(doc, (PAST + 10, PAST + 10))  # touch: new mtime, same content
    touched = tick(instance, cursor)
    assert not touched.run_requests
    write(doc, doc.read_text() + "\nOne more paragraph.\n")
    result = tick(instance, touched.cursor)
    run = documents_run(result)
    assert run.tags[ASSET_PARTITION_RANGE_START_TAG] == run.tags[ASSET_PARTITION_RANGE_END_TAG] == "guide/streaming.md"
    assert not any(r.run_key.endswith("-catalog") for r in result.run_requests)  # no file appeared or vanished
    # idempotent: the same change evaluated twice gives the same run key
    assert documents_run(tick(instance, touched.cursor)).run_key == run.run_key


def test_deleted_file_requests_the_catalog_run(instance, rag_env):
    cursor = tick(instance).cursor
    (rag_env / "docs" / "rate-limits.md").unlink()
    result = tick(instance, cursor)
    assert kinds(result) == ["catalog"]
    assert "rate-limits.md" not in looked(result.cursor)["files"]


def looked(cursor: str) -> dict:
    """The folder's look a cursor names, read from the state database as another process would."""
    from rag_assets.config import Settings
    from rag_assets.index import folder_snapshots
    from rag_assets.index.state_db import StateDB

    folder_snapshots._CACHE.clear()
    return folder_snapshots.load(StateDB.for_settings(Settings.from_env().paths), "docs_sensor",
                                 json.loads(cursor)["snapshot"])


def stored_looks() -> int:
    import sqlalchemy as sa

    from rag_assets.config import Settings
    from rag_assets.index.state_db import StateDB, folder_snapshots

    with StateDB.for_settings(Settings.from_env().paths).read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(folder_snapshots)).scalar()


def test_the_cursor_names_the_look_and_a_quiet_tick_stores_nothing(instance, rag_env):
    first = tick(instance)
    assert len(first.cursor) < 100  # Dagster writes the cursor with every tick: not ~110 bytes a file
    assert sorted(looked(first.cursor)["files"]) == ["guide/evaluation.md", "guide/streaming.md", "rate-limits.md"]
    stored = stored_looks()
    quiet = tick(instance, first.cursor)
    assert quiet.cursor == first.cursor and stored_looks() == stored
    os.utime(rag_env / "docs" / "rate-limits.md", (PAST + 5, PAST + 5))  # touched: the look moves, no run
    touched = tick(instance, first.cursor)
    assert not touched.run_requests and touched.cursor != first.cursor and stored_looks() == stored + 1


def test_a_tick_evaluated_again_from_an_older_cursor_finds_its_look(instance, rag_env):
    doc = rag_env / "docs" / "guide" / "streaming.md"
    base = tick(instance).cursor
    write(doc, doc.read_text() + "\nFirst edit.\n", mtime=PAST + 10)
    first_edit = tick(instance, base)
    for i in range(3):  # later changes move the process's cached look on
        write(doc, doc.read_text() + f"\nEdit {i}.\n", mtime=PAST + 20 + i)
        tick(instance, first_edit.cursor)
    from rag_assets.index import folder_snapshots

    folder_snapshots._CACHE.clear()  # another process (a restarted code server)
    again = tick(instance, base)
    assert documents_run(again).run_key == documents_run(first_edit).run_key


def test_a_cursor_of_the_earlier_version_is_read_and_replaced(instance, rag_env):
    first = tick(instance)
    full = json.dumps(looked(first.cursor))  # what the cursor held before it named a look
    doc = rag_env / "docs" / "guide" / "streaming.md"
    write(doc, doc.read_text() + "\nAn edit after the upgrade.\n", mtime=PAST + 10)
    result = tick(instance, full)
    run = documents_run(result)
    assert run.tags[ASSET_PARTITION_RANGE_START_TAG] == "guide/streaming.md" == run.tags[ASSET_PARTITION_RANGE_END_TAG]
    assert len(result.cursor) < 100
    assert tick(instance, result.cursor).skip_reason is not None


def test_a_look_gone_from_the_state_database_means_every_file_is_looked_at_again(instance, rag_env):
    import sqlalchemy as sa

    from rag_assets.config import Settings
    from rag_assets.index import folder_snapshots
    from rag_assets.index.state_db import StateDB, folder_snapshots as snapshots_table

    result = tick(instance)
    launch(instance, result)
    with StateDB.for_settings(Settings.from_env().paths).write() as conn:
        conn.execute(sa.delete(snapshots_table))  # e.g. the state folder was wiped
    folder_snapshots._CACHE.clear()
    doc = rag_env / "docs" / "guide" / "streaming.md"
    write(doc, doc.read_text() + "\nEdited while the look was lost.\n", mtime=PAST + 10)
    again = tick(instance, result.cursor)
    run = documents_run(again)  # only the stale document, as on a first tick
    assert run.tags[ASSET_PARTITION_RANGE_START_TAG] == "guide/streaming.md" == run.tags[ASSET_PARTITION_RANGE_END_TAG]
    assert json.loads(again.cursor)["tick"] > json.loads(result.cursor)["tick"]  # run keys stay unique
    assert launch(instance, again)
    assert "Edited while the look was lost" in indexed_text("guide/streaming.md")


def test_a_saved_file_is_taken_in_the_same_tick_once_it_settles(instance, rag_env):
    cursor = tick(instance).cursor
    write(rag_env / "docs" / "draft.md", "# Draft\n\nA finished sentence.\n", mtime=time.time())
    started = time.monotonic()
    result = tick(instance, cursor)
    assert documents_run(result).tags[ASSET_PARTITION_RANGE_END_TAG] == "draft.md"  # not one interval later
    assert time.monotonic() - started < 30  # one short wait for it to settle, well inside the 60 s tick timeout


def test_half_written_file_waits_until_it_settles(instance, rag_env):
    import threading

    cursor = tick(instance).cursor
    fresh = rag_env / "docs" / "draft.md"
    write(fresh, "# Draft\n\nhalf a sent", mtime=time.time())
    stop = threading.Event()

    def keep_writing():  # an editor still saving while the tick looks (until the tick is over)
        while not stop.wait(0.05):
            with open(fresh, "a") as fh:
                fh.write(" more")

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        first = tick(instance, cursor)
    finally:
        stop.set()
        writer.join()
    assert not first.run_requests  # it moved during the look: still being written
    time.sleep(1.2)
    second = tick(instance, first.cursor)  # quiet since: settled
    assert documents_run(second).tags[ASSET_PARTITION_RANGE_END_TAG] == "draft.md"


def test_a_burst_of_1000_new_files_is_one_tick_and_a_few_runs(instance, rag_env):
    cursor = tick(instance).cursor
    for i in range(1000):
        write(rag_env / "docs" / "bulk" / f"page-{i:04d}.md", f"# Page {i}\n\nBody of page {i}.\n")
    started = time.perf_counter()
    result = tick(instance, cursor)
    elapsed = time.perf_counter() - started
    runs = documents_runs(result)  # slices of RAG_DOCUMENTS_PER_RUN (200), in partition order
    assert [r.tags["rag/changed_documents"] for r in runs] == ["200"] * 5
    assert runs[0].tags[ASSET_PARTITION_RANGE_START_TAG] == "bulk/page-0000.md"
    assert runs[-1].tags[ASSET_PARTITION_RANGE_END_TAG] == "bulk/page-0999.md"
    assert len(instance.get_dynamic_partitions(documents_partitions.name)) == 1003
    assert elapsed < 60, f"a tick must finish inside Dagster's 60 s sensor timeout, took {elapsed:.1f} s"
    print(f"1000-file tick: {elapsed:.2f} s")


def test_a_reverted_file_and_a_restored_file_are_indexed_again(instance, rag_env):
    doc = rag_env / "docs" / "guide" / "streaming.md"
    version_a = doc.read_text()
    result = tick(instance)
    launch(instance, result)
    write(doc, version_a.replace("incrementally", "in one piece (version B)"), mtime=PAST + 10)
    result = tick(instance, result.cursor)
    assert launch(instance, result)
    assert "version B" in indexed_text("guide/streaming.md")

    write(doc, version_a, mtime=PAST + 20)  # revert to a version the sensor has seen before
    result = tick(instance, result.cursor)
    assert launch(instance, result), "the revert must launch a run (a new run key)"
    assert "version B" not in indexed_text("guide/streaming.md") and "incrementally" in indexed_text("guide/streaming.md")

    doc.unlink()  # delete, then restore
    result = tick(instance, result.cursor)
    assert launch(instance, result)
    assert indexed_text("guide/streaming.md") == ""
    write(doc, version_a, mtime=PAST + 30)
    result = tick(instance, result.cursor)
    assert launch(instance, result), "the restore must launch runs"
    assert "incrementally" in indexed_text("guide/streaming.md")

    # the same tick evaluated again asks for the same keys: the daemon launches nothing twice
    assert launch(instance, tick(instance, json.dumps(json.loads(result.cursor)))) == []


def test_the_sensor_never_empties_the_index(instance, rag_env):
    result = tick(instance)
    launch(instance, result)
    for path in (rag_env / "docs").rglob("*.md"):
        path.unlink()
    skipped = tick(instance, result.cursor)
    assert not skipped.run_requests and "refusing to remove 3 of 3 indexed documents" in str(skipped.skip_reason)
    assert indexed_text("rate-limits.md")  # nothing was removed


def test_a_refused_removal_still_indexes_what_is_new(instance, rag_env):
    result = tick(instance)
    launch(instance, result)
    for path in (rag_env / "docs").rglob("*.md"):
        path.unlink()
    write(rag_env / "docs" / "mine" / "notes.md", "# My notes\n\n## Pumps\n\nReplace the pump seal every spring.\n")
    result = tick(instance, result.cursor)
    kinds_now = kinds(result)
    assert kinds_now == ["documents"]  # no catalog run: nothing is removed
    launch(instance, result)
    assert "pump seal" in indexed_text("mine/notes.md")
    assert "incrementally" in indexed_text("guide/streaming.md")  # the old documents are kept


def test_the_sensor_stands_back_while_rag_watch_follows_the_folder_and_catches_up_after(instance, rag_env):
    from rag_assets.config import Settings
    from rag_assets.orchestration.watch_heartbeat import Heartbeat, live_watcher

    cursor = tick(instance).cursor
    doc = rag_env / "docs" / "guide" / "streaming.md"
    settings = Settings.from_env()
    with Heartbeat(settings):
        assert live_watcher(settings)["pid"] == os.getpid()
        write(doc, doc.read_text() + "\nA paragraph saved while the watcher runs.\n")
        held = tick(instance, cursor)
        assert not held.run_requests and "rag watch" in held.skip_reason.skip_message
        assert held.cursor == cursor  # kept: nothing the watcher leaves undone is lost
    assert live_watcher(settings) is None  # the heartbeat is gone with the watcher
    after = tick(instance, held.cursor)
    run = documents_run(after)
    assert run.tags[ASSET_PARTITION_RANGE_START_TAG] == run.tags[ASSET_PARTITION_RANGE_END_TAG] == "guide/streaming.md"


def test_beside_a_watcher_of_another_folder_on_its_state_the_sensor_does_nothing_and_says_why(instance, rag_env, tmp_path):
    """`rag watch --docs-dir B` indexes B into the corpus's state (its runs carry B); the sensor, whose
    folder is the corpus's own, must not index its folder beside it (each catalog run would remove the
    other's pages): it skips, naming both folders, keeps its cursor, and takes over once the watcher stops."""
    from rag_assets.config import Settings
    from rag_assets.orchestration.watch_heartbeat import Heartbeat

    cursor = tick(instance).cursor
    doc = rag_env / "docs" / "guide" / "streaming.md"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Heartbeat(Settings.from_env(docs_dir=elsewhere)):
        write(doc, doc.read_text() + "\nA paragraph saved while a watcher of another folder runs.\n")
        held = tick(instance, cursor)
        assert not held.run_requests and held.cursor == cursor
        message = held.skip_reason.skip_message
        assert str(elsewhere) in message and str(rag_env / "docs") in message and "stop the watcher" in message
    after = tick(instance, held.cursor)
    assert documents_run(after).tags[ASSET_PARTITION_RANGE_START_TAG] == "guide/streaming.md"
