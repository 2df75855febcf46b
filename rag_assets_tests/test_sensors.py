"""docs_sensor evaluated with dg.build_sensor_context on a real (SQLite) instance and real files."""

import json
import os
import time

import dagster as dg
import pytest
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from rag_assets.orchestration.definitions import defs
from rag_assets.orchestration.assets import documents_partitions
from rag_assets.orchestration.sensors import docs_sensor

PAST = time.time() - 3600  # files older than the settle window


@pytest.fixture
def instance(rag_env, dagster_home):
    for path in (rag_env / "docs").rglob("*.md"):
        os.utime(path, (PAST, PAST))
    with dg.DagsterInstance.get() as inst:
        yield inst


def tick(instance, cursor=None) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    result = docs_sensor(context)
    # what the daemon does with the result
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def documents_run(result: dg.SensorResult) -> dg.RunRequest:
    runs = [r for r in result.run_requests if r.run_key.endswith("-documents")]
    assert len(runs) == 1, result.run_requests
    return runs[0]


def write(path, text, mtime=PAST):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def test_first_tick_registers_documents_and_requests_one_run(instance):
    result = tick(instance)
    assert sorted(instance.get_dynamic_partitions(documents_partitions.name)) == [
        "guide/evaluation.md", "guide/streaming.md", "rate-limits.md"
    ]
    assert [r.run_key.rsplit("-", 1)[1] for r in result.run_requests] == ["catalog", "documents"]
    tags = documents_run(result).tags
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
    assert [r.run_key.rsplit("-", 1)[1] for r in result.run_requests] == ["catalog"]
    assert "rate-limits.md" not in json.loads(result.cursor)["files"]


def test_half_written_file_waits_until_it_settles(instance, rag_env):
    cursor = tick(instance).cursor
    fresh = rag_env / "docs" / "draft.md"
    write(fresh, "# Draft\n\nhalf a sent", mtime=time.time())
    first = tick(instance, cursor)
    assert not first.run_requests  # modified a moment ago and never seen before: still being written
    write(fresh, "# Draft\n\nhalf a sentence, now finished.\n", mtime=time.time())
    second = tick(instance, first.cursor)
    assert not second.run_requests  # it moved again: still unstable
    third = tick(instance, second.cursor)  # unchanged since the last look: settled
    assert documents_run(third).tags[ASSET_PARTITION_RANGE_END_TAG] == "draft.md"


def test_a_burst_of_1000_new_files_is_one_run_and_one_tick(instance, rag_env):
    cursor = tick(instance).cursor
    for i in range(1000):
        write(rag_env / "docs" / "bulk" / f"page-{i:04d}.md", f"# Page {i}\n\nBody of page {i}.\n")
    started = time.perf_counter()
    result = tick(instance, cursor)
    elapsed = time.perf_counter() - started
    run = documents_run(result)
    assert run.tags["rag/changed_documents"] == "1000"
    assert run.tags[ASSET_PARTITION_RANGE_START_TAG] == "bulk/page-0000.md"
    assert run.tags[ASSET_PARTITION_RANGE_END_TAG] == "bulk/page-0999.md"
    assert len(instance.get_dynamic_partitions(documents_partitions.name)) == 1003
    assert elapsed < 60, f"a tick must finish inside Dagster's 60 s sensor timeout, took {elapsed:.1f} s"
    print(f"1000-file tick: {elapsed:.2f} s")
