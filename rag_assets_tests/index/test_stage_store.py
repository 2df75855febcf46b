"""Stage records, failures and the catalog in the state database (a real SQLite file)."""

from rag_assets.models import Catalog, DiscoveryError, DocumentRef
from rag_assets.index.stage_store import CHUNKS, INDEXED, PARSED, StageStore


def ref(doc_path: str, content_hash: str = "h1", **extra) -> DocumentRef:
    return DocumentRef(doc_path=doc_path, partition_key=doc_path, absolute_path=f"/docs/{doc_path}", module=None,
                       chapter=None, size_bytes=10, mtime=1.0, content_hash=content_hash, **extra)


def test_records_round_trip_and_headers_read_no_payload(tmp_path):
    stages = StageStore(tmp_path)
    stages.write_many(CHUNKS, [(f"d{i}.md", "h", [{"text": "x" * 1000}], "fp") for i in range(1200)])
    assert stages.read(CHUNKS, "d7.md")["payload"] == [{"text": "x" * 1000}]
    heads = stages.headers([f"d{i}.md" for i in range(1200)])  # more keys than one IN (...) may hold
    assert len(heads) == 1200 and heads["d7.md"] == {CHUNKS: ("h", "fp")}
    assert stages.is_current(CHUNKS, "d7.md", "h", "fp") and not stages.is_current(CHUNKS, "d7.md", "h", "other")
    stages.mark(CHUNKS, ["d7.md"], "replacing")
    assert stages.headers(["d7.md"])["d7.md"][CHUNKS] == ("h", "replacing")
    stages.delete_documents(["d7.md"])
    assert stages.read(CHUNKS, "d7.md") is None and "d7.md" not in stages.doc_paths()


def test_failures_are_kept_per_version_and_cleared_by_the_failing_stage(tmp_path):
    stages = StageStore(tmp_path)
    stages.record_failure("a.md", "h1", PARSED, "a.md:2: invalid YAML")
    assert stages.failure("a.md", "h1")["error"] == "a.md:2: invalid YAML"
    assert stages.failure("a.md", "h2") is None  # another version of the file
    stages.clear_failure("a.md", INDEXED)  # another stage's success does not clear it
    assert stages.failure("a.md", "h1") is not None
    stages.clear_failure("a.md", PARSED)
    assert stages.failures() == {}


def test_the_catalog_is_replaced_whole_and_refreshed_per_document(tmp_path):
    stages = StageStore(tmp_path)
    assert stages.read_catalog() is None and stages.catalog_folder() is None
    stages.write_catalog(Catalog("/docs", [], [DiscoveryError("big.md", "too large")]))
    assert stages.catalog_folder() is None  # a catalog of no documents
    stages.write_catalog(Catalog("/docs", [ref("a.md"), ref("b.md")], [DiscoveryError("big.md", "too large")]))
    assert stages.catalog_folder() == "/docs"
    stages.write_catalog(Catalog("/docs", [ref("b.md"), ref("c.md", mtime_ns=5, inode=7)], []))
    catalog = stages.read_catalog()
    assert [d.doc_path for d in catalog.documents] == ["b.md", "c.md"] and catalog.errors == []
    stages.refresh_catalog([ref("c.md", "h2", mtime_ns=9, inode=7), ref("new.md")])  # only files it lists
    by_key = stages.catalog_by_partition_key(["c.md", "new.md"])
    assert list(by_key) == ["c.md"] and (by_key["c.md"].content_hash, by_key["c.md"].mtime_ns) == ("h2", 9)


def test_a_deleted_state_folder_is_not_written_through_a_stale_connection(tmp_path):
    import shutil

    StageStore(tmp_path / "state").write(PARSED, "a.md", "h", {}, "")
    shutil.rmtree(tmp_path / "state")
    (tmp_path / "state").mkdir()
    stages = StageStore(tmp_path / "state")
    assert stages.read(PARSED, "a.md") is None
    stages.write(PARSED, "b.md", "h", {}, "")
    assert (tmp_path / "state" / "state.sqlite").exists() and StageStore(tmp_path / "state").doc_paths() == {"b.md"}


def test_headers_and_failures_of_many_documents_read_the_table_once_and_keep_only_theirs(tmp_path):
    from rag_assets.index import stage_store

    stages = StageStore(tmp_path)
    stages.write_many(CHUNKS, [(f"d{i}.md", "h", [], "fp") for i in range(30)])
    stages.record_failure("d3.md", "h", PARSED, "d3.md: bad")
    stages.record_failure("other.md", "h", PARSED, "other.md: bad")
    asked = [f"d{i}.md" for i in range(0, 30, 3)] + [f"missing{i}.md" for i in range(stage_store._SCAN_FROM)]
    assert stage_store._read_plan(asked) == ([None], set(asked))  # one scan, not IN-lists
    heads = stages.headers(asked)
    assert sorted(heads) == sorted(f"d{i}.md" for i in range(0, 30, 3)) and heads["d3.md"] == {CHUNKS: ("h", "fp")}
    assert list(stages.failures(asked)) == ["d3.md"]
    few = stages.headers(["d1.md", "d2.md"])  # few: by IN-list, the same answer
    assert sorted(few) == ["d1.md", "d2.md"]
