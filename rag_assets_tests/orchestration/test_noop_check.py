"""The Dagster-free answer to a `rag ingest` with nothing to do (orchestration/noop_check.py): given
only after a full ingest left everything current, withdrawn by every kind of change, on a real
SQLite Dagster instance, a real Chroma store and real files."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

from rag_assets.config import Settings
from rag_assets.index.locks import INGEST_LOCK_NAME
from rag_assets.indexing import document_runs, noop_token, service
from rag_assets.orchestration.noop_check import (
    TOKEN_KEY, check_noop, quick_noop, record_noop_token, run_storage_state, sqlite_runs_db,
)
from rag_assets.indexing.service import ingest
from rag_assets.orchestration.instance import get_instance
from rag_assets.index.stage_store import StageStore

from rag_assets_tests.support.environment import subprocess_env


@pytest.fixture
def indexed(rag_env, dagster_home):
    summary = ingest()
    assert summary.documents_processed == 3 and not summary.errors
    return rag_env


def quick():
    return quick_noop(Settings.from_env())


class _Said(io.TextIOBase):
    """A stream that passes everything on and notes (`said`) when a line containing `words` is written."""

    def __init__(self, words: str, to):
        self.words, self.to, self.said = words, to, threading.Event()

    def write(self, text: str) -> int:
        if self.words in text:
            self.said.set()
        return self.to.write(text)

    def flush(self) -> None:
        self.to.flush()


def test_after_a_full_ingest_the_noop_is_answered_with_the_same_counts(indexed):
    summary = quick()
    assert summary is not None
    assert (summary.documents_discovered, summary.documents_unchanged, summary.documents_processed) == (3, 3, 0)
    assert summary.run_ids == [] and summary.errors == []
    assert quick() is not None  # and again: answering writes nothing that spoils it


@pytest.mark.system
def test_the_cli_answers_a_noop_without_importing_dagster(indexed, dagster_home):
    code = ("import sys; from rag_assets.cli.main import main; rc = main(['ingest', '--json']); "
            "print('dagster imported' if 'dagster' in sys.modules else 'no dagster'); sys.exit(rc)")
    env = subprocess_env(indexed, DAGSTER_HOME=str(dagster_home))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("no dagster"), out.stdout
    assert '"documents_unchanged": 3' in out.stdout


def test_a_touched_file_is_still_a_noop_and_its_new_stat_is_remembered(indexed):
    path = indexed / "docs" / "rate-limits.md"
    later = time.time() + 5
    os.utime(path, (later, later))
    assert quick() is not None
    stored = {d.doc_path: d for d in StageStore.for_settings(Settings.from_env().paths).read_catalog().documents}
    assert stored["rate-limits.md"].mtime_ns == path.stat().st_mtime_ns


def _edit(root: Path) -> None:
    (root / "docs" / "rate-limits.md").write_text("# Rate limits\n\n## Tokens per minute\n\nAt most 40,000 tokens.\n")


def _add(root: Path) -> None:
    (root / "docs" / "new.md").write_text("# New page\n\n## Section\n\nA new page about marmalade.\n")


def _delete(root: Path) -> None:
    (root / "docs" / "rate-limits.md").unlink()


def _another_run(root: Path) -> None:
    @dg.asset
    def unrelated():  # any run, e.g. one launched from the UI or by the sensor
        return 1

    assert dg.materialize([unrelated], instance=get_instance()).success


def _wiped_dagster(root: Path) -> None:
    shutil.rmtree(Path(os.environ["DAGSTER_HOME"]) / "storage")


def _wiped_chroma(root: Path) -> None:
    shutil.rmtree(root / "chroma")


CHANGES = {"edit": _edit, "add": _add, "delete": _delete, "another_dagster_run": _another_run,
           "wiped_dagster_storage": _wiped_dagster, "wiped_chroma": _wiped_chroma}


@pytest.mark.system
@pytest.mark.parametrize("change", [*CHANGES, "settings"])
def test_every_kind_of_change_takes_the_full_path_which_then_restores_the_answer(indexed, monkeypatch, change):
    if change == "settings":
        monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "120")
    else:
        CHANGES[change](indexed)
    answer, look = check_noop(Settings.from_env())
    assert answer is None
    if change.startswith("wiped"):
        # in a new process, as in life (this one keeps the deleted databases open)
        out = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout)
        assert summary["run_ids"], "the partitions Dagster lost are materialized again"
        if change == "wiped_chroma":
            assert summary["documents_processed"] == 3 and summary["chunks_written"] > 0
    else:
        # the ingest starts from what the check saw: the folder is not walked a second time
        assert look is not None
        walks = []
        walk = service.discover_for
        monkeypatch.setattr(service, "discover_for", lambda *a, **k: walks.append(a) or walk(*a, **k))
        summary = ingest(look=look)
        assert walks == [], "the folder was walked again"
        assert not summary.errors
        if change in ("edit", "add"):
            assert summary.documents_processed >= 1, summary
        if change == "settings":  # every chunk record is stale: the documents are run again
            assert summary.run_ids, summary
    assert quick() is not None, "the full ingest left everything current and said so"


def test_an_unfinished_dagster_run_means_dont_know(indexed):
    instance = get_instance()
    run = instance.add_run(dg.DagsterRun(job_name="__elsewhere", status=dg.DagsterRunStatus.STARTED))
    assert run_storage_state().unfinished_runs == 1
    assert quick() is None
    instance.report_run_failed(run)
    assert quick() is None  # a run since the answer was recorded: the full path decides once
    ingest()
    assert quick() is not None


@pytest.mark.system
def test_another_ingest_holding_the_lock_means_dont_know(indexed):
    lock_path = Settings.from_env().state_dir / INGEST_LOCK_NAME
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys, time; from filelock import FileLock; l = FileLock({str(lock_path)!r}); "
                               "l.acquire(); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert quick() is None
    finally:
        holder.kill()
        holder.wait()
    assert quick() is not None


@pytest.mark.system
def test_a_look_is_not_used_by_an_ingest_that_waited_for_another(indexed, monkeypatch):
    _edit(indexed)
    _answer, look = check_noop(Settings.from_env())
    assert look is not None
    lock_path = Settings.from_env().state_dir / INGEST_LOCK_NAME
    holder = subprocess.Popen(  # another ingest, which may change the catalog while this one waits
        [sys.executable, "-c", f"import sys; from filelock import FileLock; l = FileLock({str(lock_path)!r}); "
                               "l.acquire(); print('held', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    walks = []
    walk = service.discover_for
    monkeypatch.setattr(service, "discover_for", lambda *a, **k: walks.append(a) or walk(*a, **k))
    # the holder lets go once this ingest says it waits (not after a sleep this ingest's start may outlast)
    waiting = _Said("waiting for it to finish", sys.stderr)
    monkeypatch.setattr(sys, "stderr", waiting)

    def release_when_waited_for():
        if waiting.said.wait(300):  # only a guard against a hang
            holder.stdin.close()

    releaser = threading.Thread(target=release_when_waited_for, daemon=True)
    said_so = False
    try:
        assert holder.stdout.readline().strip() == "held"
        releaser.start()
        summary = ingest(look=look)
    finally:
        said_so = waiting.said.is_set()  # by the ingest: it found the lock held and waited
        waiting.said.set()
        releaser.join(timeout=30)
        holder.wait(timeout=30)
    # (its lock_wait_seconds may round to 0.0: the holder lets go as soon as the ingest says it waits)
    assert said_so and len(walks) == 1, "the look from before the wait was used"
    assert summary.documents_processed == 1


def test_a_run_made_by_another_process_during_an_ingest_means_every_document_is_checked_again(indexed, monkeypatch):
    """After its runs an ingest re-checks only the documents it ran; a run it did not make (the
    sensor's, the UI's) may have left another document stale, so then all are checked."""
    _edit(indexed)
    real = service.run_documents

    def with_a_foreign_run(instance, todo, *args, **kwargs):
        ran = real(instance, todo, *args, **kwargs)
        @dg.asset
        def elsewhere():
            return 1
        assert dg.materialize([elsewhere], instance=instance).success  # a finished run of someone else
        stages = StageStore.for_settings(Settings.from_env().paths)  # ... which failed a document this ingest did not run
        other = next(d for d in stages.read_catalog().documents if d.doc_path not in {r.doc_path for r in todo})
        stages.record_failure(other.doc_path, other.content_hash, "parsed", f"{other.doc_path}: broken meanwhile")
        return ran

    monkeypatch.setattr(service, "run_documents", with_a_foreign_run)
    summary = ingest()
    assert summary.documents_processed == 1
    assert quick() is None, "a no-op answer was recorded over a document left failed by another run"


def test_a_failed_document_means_no_answer_until_it_is_fixed(indexed):
    bad = indexed / "docs" / "bad.md"
    bad.write_text("---\ntitle: [unclosed\n---\n# Bad\n\nText.\n")
    summary = ingest()
    assert [e["doc_path"] for e in summary.errors] == ["bad.md"]
    assert StageStore.for_settings(Settings.from_env().paths).db.get_meta(TOKEN_KEY) == ""
    assert quick() is None
    bad.write_text("---\ntitle: Fixed\n---\n# Fixed\n\nText.\n")
    assert not ingest().errors
    assert quick() is not None


def test_only_a_literal_sqlite_run_storage_is_read(tmp_path):
    cases = {
        "run_storage:\n  module: dagster._core.storage.runs\n  class: SqliteRunStorage\n  config:\n    base_dir: data/h\n":
            Path("data/h/runs.db"),
        "storage:\n  sqlite:\n    base_dir: /x/storage\n": Path("/x/storage/history/runs.db"),
        "storage:\n  postgres:\n    postgres_url: postgresql://u@h/db\n": None,
        "run_storage:\n  class: SqliteRunStorage\n  config:\n    base_dir:\n      env: X\n": None,
        "telemetry:\n  enabled: false\n": None,
        "- not a mapping\n": None,
    }
    for text, expected in cases.items():
        (tmp_path / "dagster.yaml").write_text(text)
        assert sqlite_runs_db(tmp_path) == expected, text


def _staleness_asks(monkeypatch) -> list[list[str]]:
    """The documents each staleness question of the ingest was asked about."""
    asks = []
    real = document_runs.documents_to_run
    for module in (service, document_runs, noop_token):  # every module of the ingest that asks
        monkeypatch.setattr(module, "documents_to_run",
                            lambda instance, refs, *a, **k: asks.append(sorted(r.doc_path for r in refs)) or real(instance, refs, *a, **k))
    return asks


def test_an_ingest_judges_the_documents_it_ran_once_after_its_runs(indexed, monkeypatch):
    """Staleness is judged once to choose the work and once after the runs (a run may fail, a file may
    be saved during its run); the no-op token trusts that judgement rather than asking a third time."""
    _edit(indexed)
    asks = _staleness_asks(monkeypatch)
    summary = ingest()  # no look: the whole folder is judged to choose the work
    assert summary.documents_processed == 1 and not summary.errors
    assert asks == [["guide/evaluation.md", "guide/streaming.md", "rate-limits.md"], ["rate-limits.md"]], asks
    assert quick() is not None, "the no-op token was recorded"


def test_an_edit_after_everything_was_current_asks_only_about_what_changed(indexed, monkeypatch):
    _edit(indexed)
    _add(indexed)
    _answer, look = check_noop(Settings.from_env())
    assert look.base_current
    asks = _staleness_asks(monkeypatch)
    summary = ingest(look=look)
    assert summary.documents_processed == 2 and summary.documents_unchanged == 2 and not summary.errors
    assert asks and all(a == ["new.md", "rate-limits.md"] for a in asks), "only the documents it ran are asked about"
    assert quick() is not None


@pytest.mark.parametrize("change", ["settings", "another_dagster_run", "run_after_the_check", "failed_ingest"])
def test_when_more_than_the_folder_changed_every_document_is_asked_about(indexed, monkeypatch, change):
    _edit(indexed)
    if change == "settings":
        monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "120")
    elif change == "another_dagster_run":
        _another_run(indexed)
    elif change == "failed_ingest":  # a later ingest left a document failed: no token, no base
        stages = StageStore.for_settings(Settings.from_env().paths)
        record_noop_token(Settings.from_env(), stages, None, None)
    _answer, look = check_noop(Settings.from_env())
    if change == "failed_ingest":
        assert look is None  # nothing recorded to narrow it by
    else:
        assert look is not None and look.base_current == (change == "run_after_the_check")
    if change == "run_after_the_check":
        _another_run(indexed)  # between the check and the ingest (no lock wait: the sensor's run)
    asks = _staleness_asks(monkeypatch)
    summary = ingest(look=look)
    assert asks and len(asks[0]) == 3, asks
    assert summary.documents_processed == (3 if change == "settings" else 1) and not summary.errors
    assert quick() is not None


def _catalog_reads(monkeypatch) -> list[int]:
    reads = []
    real = StageStore.read_catalog
    monkeypatch.setattr(StageStore, "read_catalog", lambda self: reads.append(1) or real(self))
    return reads


def test_a_noop_is_answered_from_stats_without_the_stored_catalog(indexed, monkeypatch):
    (indexed / "docs" / "big.md").write_text("x" * 2_000)
    monkeypatch.setenv("RAG_MAX_FILE_BYTES", "1000")  # a refused file: its error is part of the answer
    ingest()
    full = quick()
    assert full is not None and full.documents_failed == 1
    reads = _catalog_reads(monkeypatch)
    assert quick() == full and reads == [], "the stored catalog was read"


def _row_reads(monkeypatch) -> list[list[str]]:
    """The documents whose catalog rows were read one by one (a moved-only look)."""
    reads = []
    real = StageStore.catalog_by_doc_path
    monkeypatch.setattr(StageStore, "catalog_by_doc_path", lambda self, paths: reads.append(list(paths)) or real(self, paths))
    return reads


def test_a_touched_file_is_answered_from_its_own_row_once_then_from_stats_again(indexed, monkeypatch):
    reads, rows = _catalog_reads(monkeypatch), _row_reads(monkeypatch)
    path = indexed / "docs" / "rate-limits.md"
    later = time.time() + 5
    os.utime(path, (later, later))
    # the stats moved: the file's own row and content decide (same content), not the whole catalog
    assert quick() is not None and reads == [] and rows == [["rate-limits.md"]]
    assert quick() is not None and rows == [["rate-limits.md"]]  # ... and the stats it saw are the answer's now
    stored = {d.doc_path: d for d in StageStore.for_settings(Settings.from_env().paths).read_catalog().documents}
    assert stored["rate-limits.md"].mtime_ns == path.stat().st_mtime_ns


def test_a_file_replaced_with_the_same_size_and_mtime_is_not_taken_from_stats(indexed, monkeypatch):
    path = indexed / "docs" / "rate-limits.md"
    st = path.stat()
    text = path.read_text()
    replacement = path.with_name("replacement.tmp")
    replacement.write_text(text.replace("T", "t", 1))  # same size, other bytes, another inode
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, path)
    reads = _catalog_reads(monkeypatch)
    answer, look = check_noop(Settings.from_env())
    assert answer is None and look is not None and look.moved_only and reads == []
    assert [d.doc_path for d in look.seen.documents] == ["rate-limits.md"]
    assert ingest(look=look).documents_processed == 1


def test_a_site_with_snippets_records_no_stat_answer_but_still_answers(rag_env, dagster_home, monkeypatch):
    (rag_env / "docs" / "snippets").mkdir()
    (rag_env / "docs" / "snippets" / "note.mdx").write_text("A shared note about tokens.\n")
    (rag_env / "docs" / "page.mdx").write_text("import Note from '/snippets/note.mdx';\n\n# Page\n\n<Note />\n")
    ingest()
    reads = _catalog_reads(monkeypatch)
    assert quick() is not None and reads == [1]  # the snippet is not in the catalog: stats cannot tell


def test_a_few_partitions_are_asked_about_one_by_one_with_the_same_answer(indexed, monkeypatch):
    from rag_assets.orchestration.definitions import DEFAULT

    instance = get_instance()
    key = DEFAULT.ingestion.vector_index.key
    asked = ["rate-limits.md", "guide/streaming.md", "never-materialized.md"]
    everything = set(instance.get_materialized_partitions(key))
    assert document_runs._materialized(instance, key, asked) == everything & set(asked) == set(asked[:2])
    monkeypatch.setattr(document_runs, "_ONE_BY_ONE_BELOW", 1)  # the other way gives the same
    assert document_runs._materialized(instance, key, asked) == set(asked[:2])


def test_an_edit_after_everything_was_current_does_not_list_every_partition(indexed, monkeypatch):
    """No run since every document was current (the token's base): Dagster's partitions are still
    the catalog's, so an edit neither compares them nor plans its one run from the list of every
    partition (0.4 s each at 100,000)."""
    _edit(indexed)
    answer, look = check_noop(Settings.from_env())
    assert answer is None and look.base_current
    listed = []
    real = dg.DagsterInstance.get_dynamic_partitions
    monkeypatch.setattr(dg.DagsterInstance, "get_dynamic_partitions",
                        lambda self, name: listed.append(name) or real(self, name))
    summary = ingest(look=look)
    assert summary.documents_processed == 1 and len(summary.run_ids) == 1, summary
    assert listed == []
    assert quick() is not None


def test_after_another_run_an_ingest_compares_dagsters_partitions_with_the_catalog(indexed, monkeypatch):
    _another_run(indexed)
    _edit(indexed)
    answer, look = check_noop(Settings.from_env())
    assert answer is None and not look.base_current
    listed = []
    real = dg.DagsterInstance.get_dynamic_partitions
    monkeypatch.setattr(dg.DagsterInstance, "get_dynamic_partitions",
                        lambda self, name: listed.append(name) or real(self, name))
    summary = ingest(look=look)
    assert summary.documents_processed == 1, summary
    assert listed, "the partitions were not compared"


def _recorded(stages: StageStore) -> dict[str, str]:
    from rag_assets.orchestration import noop_check

    keys = (noop_check.TOKEN_KEY, noop_check.BASE_KEY, noop_check.STAT_KEY, noop_check.DOCUMENTS_DIGEST_KEY)
    return {key: stages.db.get_meta(key) for key in keys}


def test_an_edit_reads_only_the_rows_of_the_files_that_moved_and_records_what_a_full_look_would(indexed, monkeypatch):
    _edit(indexed)
    touched = indexed / "docs" / "guide" / "streaming.md"
    later = time.time() + 5
    os.utime(touched, (later, later))
    reads, rows = _catalog_reads(monkeypatch), _row_reads(monkeypatch)
    answer, look = check_noop(Settings.from_env())
    assert answer is None and look.moved_only and look.documents == 3
    assert rows == [["guide/streaming.md", "rate-limits.md"]]
    summary = ingest(look=look)
    assert (summary.documents_discovered, summary.documents_processed, summary.documents_unchanged) == (3, 1, 2)
    assert reads == [], "the whole catalog was read"
    stages = StageStore.for_settings(Settings.from_env().paths)
    kept = _recorded(stages)
    assert all(kept.values()), kept
    # the digests it updated are the ones a full look records
    record_noop_token(Settings.from_env(), stages, stages.read_catalog(), run_storage_state())
    assert _recorded(stages) == kept
    reads.clear()
    assert quick() is not None and reads == [], "the next no-op is answered from stats"


def _imports(root: Path) -> None:
    (root / "docs" / "rate-limits.md").write_text("import Note from './guide/streaming.md';\n\n# Rate limits\n\n<Note />\n")


def _refused(root: Path) -> None:
    os.environ["RAG_MAX_FILE_BYTES"] = "10"


@pytest.mark.parametrize("change", ["add", "delete", "imports", "refused", "too_many_moved", "run_after_the_check"])
def test_what_a_moved_only_look_cannot_see_goes_the_whole_way(indexed, monkeypatch, change):
    from rag_assets.orchestration import noop_check

    monkeypatch.setenv("RAG_MAX_FILE_BYTES", os.environ.get("RAG_MAX_FILE_BYTES", "5000000"))
    _edit(indexed)
    if change == "too_many_moved":
        monkeypatch.setattr(noop_check, "MOVED_AT_MOST", 0)
    elif change != "run_after_the_check":
        {"add": _add, "delete": _delete, "imports": _imports, "refused": _refused}[change](indexed)
    reads = _catalog_reads(monkeypatch)
    answer, look = check_noop(Settings.from_env())
    assert answer is None
    if change == "run_after_the_check":
        assert look.moved_only and reads == []
        _another_run(indexed)
    else:
        assert look is not None and not look.moved_only
    summary = ingest(look=look)
    assert reads, "the whole catalog was not read"
    if change != "refused":
        assert not summary.errors and summary.documents_processed == {"delete": 0, "add": 2}.get(change, 1)
        assert quick() is not None


def test_a_documents_digest_not_kept_beside_the_current_token_is_not_used(indexed, monkeypatch):
    """A token written by a version that kept no digest: the digest left from before is not its."""
    stages = StageStore.for_settings(Settings.from_env().paths)
    stages.db.set_meta(TOKEN_KEY, "written-by-another-version")
    _edit(indexed)
    reads = _catalog_reads(monkeypatch)
    answer, look = check_noop(Settings.from_env())
    assert answer is None and not look.moved_only and reads == [1]
