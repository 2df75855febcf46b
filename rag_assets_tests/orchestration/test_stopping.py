"""Stop means stop: Ctrl-C or SIGTERM ends an ingest within seconds, starts no further run, keeps every
document already finished and calls the rest "not started", not failed (issue 34 item 3).

Through a real terminal (a pty: Ctrl-C is the terminal's SIGINT to the command's process group) and
`kill -TERM` for the CLI; in process for an ingest from code (RAGPipeline.ingest's runs); the signal
watch on its own for what a second signal does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import dagster as dg
import pytest

from rag_assets.index.stage_store import INDEXED, StageStore
from rag_assets.orchestration import stopping
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import state_env, subprocess_env
from rag_assets_tests.support.terminal import Terminal

PER_RUN = 2
# twelve short pages: six runs of two, a few chunks each
PAGES = {f"topic-{i:02d}.md": f"# Topic {i}\n\n## Overview of topic {i}\n\nTopic {i} covers the zebra{i} procedure "
                              f"in enough words for a chunk of its own: configure, verify and roll back step {i}.\n\n"
                              f"## Details of topic {i}\n\nThe details of topic {i} list every option of zebra{i}, "
                              f"with defaults, limits and what each one changes in practice.\n" for i in range(12)}


def indexed(root, home) -> set[str]:
    """The documents indexed now as an ingest counts them: their index record written and their
    vector_index partition materialized (a run stopped inside that step wrote the records but not the
    materialization: the next ingest redoes those, from the cache, nothing embedded again)."""
    with _instance(home) as instance:
        materialized = instance.get_materialized_partitions(dg.AssetKey("vector_index"))
    return index_records(root) & set(materialized)


def index_records(root) -> set[str]:
    """The documents whose index records are written, with no failure recorded (a run stopped inside
    its index step may have written them without Dagster's materialization)."""
    stages = StageStore.for_settings(_settings(root).paths)
    return stages.doc_paths(INDEXED) - set(stages.failures())


def _instance(home) -> dg.DagsterInstance:
    """The instance at `home`, opened as `rag` opens it (two processes creating a fresh one at once
    would stamp it twice: instance.get_instance's lock)."""
    from rag_assets.orchestration.instance import get_instance

    assert os.environ["DAGSTER_HOME"] == str(home)
    return get_instance()


def _settings(root):
    from rag_assets.config import Settings

    return Settings.from_env(state_env(root))


def _wait_for(condition, what: str, proc=None, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc is None or proc.poll() is None, f"it ended before {what}:\n{getattr(proc, 'output', '')[-3000:]}"
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.3)


def _why(home) -> list[str]:
    """Each run's status, and a failed one's messages (for an assertion's message)."""
    with _instance(home) as instance:
        out = []
        for run in instance.get_runs():
            out.append(f"{run.run_id[:8]} {run.status.value}")
            if run.status == dg.DagsterRunStatus.FAILURE:
                out += [f"  {r.dagster_event.event_type_value}: {r.dagster_event.message}"
                        for r in instance.all_logs(run.run_id) if r.dagster_event and r.dagster_event.message
                        and ("FAILURE" in r.dagster_event.event_type_value or "ENGINE" in r.dagster_event.event_type_value)]
        return out


def _runs(home) -> list[dg.DagsterRun]:
    with _instance(home) as instance:
        return list(instance.get_runs())


@pytest.fixture
def corpus(tmp_path, dagster_home):
    write_corpus(tmp_path / "docs", PAGES)
    env = subprocess_env(tmp_path, DAGSTER_HOME=str(dagster_home), RAG_DOCUMENTS_PER_RUN=str(PER_RUN), TERM="xterm")
    return tmp_path, dagster_home, env


def rag(env, *args, codes=(0,)):
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode in codes, f"{args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.system
def test_ctrl_c_in_a_terminal_and_sigterm_stop_an_ingest_and_the_next_one_finishes_it(corpus):
    root, home, env = corpus
    argv = [sys.executable, "-m", "rag_assets", "ingest"]

    # Ctrl-C typed in the terminal, two runs in
    with Terminal(argv, env) as term:
        _wait_for(lambda: len(indexed(root, home)) >= 2 * PER_RUN, "two finished runs", term)
        kept = indexed(root, home)
        asked = time.monotonic()
        term.ctrl_c()
        code = term.wait(30)
        took = time.monotonic() - asked
        out = term.output
    assert code == 130, out[-3000:]
    assert took < 5, f"{took:.1f} s from Ctrl-C to exit"
    assert "Traceback" not in out, out[-3000:]
    assert "stopped by Ctrl-C" in out and "not started (not failed)" in out and "next `rag ingest` continues" in out
    first = indexed(root, home)
    assert kept <= first and len(first) < len(PAGES)  # every finished document kept; no run started after
    stages = StageStore.for_settings(_settings(root).paths)
    assert stages.failures() == {}  # nothing marked failed that was not attempted
    runs = _runs(home)
    statuses = [r.status for r in runs]
    assert dg.DagsterRunStatus.FAILURE not in statuses and dg.DagsterRunStatus.STARTED not in statuses, _why(home)
    assert statuses.count(dg.DagsterRunStatus.CANCELED) <= 1  # the run Ctrl-C stopped, if one was running
    listed = {c["name"]: c for c in json.loads(rag(env, "corpora", "--json").stdout)["corpora"]}["default"]
    assert listed["last_ingest_outcome"] == "interrupted" and listed["failed"] == 0
    assert listed["indexed"] >= len(first) and listed["last_ingest_documents_not_started"] == len(PAGES) - len(first)

    # the finished documents are searchable
    done = sorted(first)[0]
    number = int(done.split("-")[1].split(".")[0])
    hits = json.loads(rag(env, "query", f"What does the zebra{number} procedure cover?", "--json").stdout)["results"]
    assert hits and hits[0]["doc_path"] == done

    # SIGTERM (a service manager's stop): the same, exit 143
    with Terminal(argv, env) as term:
        _wait_for(lambda: len(indexed(root, home)) >= len(first) + PER_RUN, "another finished run", term)
        asked = time.monotonic()
        os.kill(term.pid, signal.SIGTERM)
        code = term.wait(30)
        took = time.monotonic() - asked
        out = term.output
    assert code == 143 and took < 5, (code, took, out[-3000:])
    assert "stopped by SIGTERM" in out and "Traceback" not in out, out[-3000:]
    second = indexed(root, home)
    assert first < second and StageStore.for_settings(_settings(root).paths).failures() == {}

    # the next `rag ingest` finishes the rest, and redoes nothing
    summary = json.loads(rag(env, "ingest", "--json").stdout)
    assert summary["documents_processed"] == len(PAGES) - len(second), summary
    assert summary["documents_unchanged"] == len(second) and summary["documents_failed"] == 0
    assert indexed(root, home) == set(PAGES)


def test_a_stopped_ingest_from_code_raises_keyboard_interrupt_and_leaves_the_process_as_it_was(
        rag_env, dagster_home, monkeypatch):
    """RAGPipeline.ingest's runs (indexing.service.ingest in the caller's process): Ctrl-C raises IngestInterrupted,
    a KeyboardInterrupt carrying the summary; the run it stopped ends CANCELED; the caller's SIGINT
    and SIGTERM handlers are theirs again (Dagster's runs would leave SIGTERM mapped onto SIGINT's)."""
    from rag_assets.indexing.service import ingest

    write_corpus(rag_env / "docs", PAGES)
    monkeypatch.setenv("RAG_DOCUMENTS_PER_RUN", str(PER_RUN))
    late = []
    mine = {signal.SIGINT: lambda *_: late.append("SIGINT"), signal.SIGTERM: lambda *_: late.append("SIGTERM")}
    previous = {s: signal.signal(s, handler) for s, handler in mine.items()}
    sent = threading.Event()

    def interrupt_after_two_runs():
        _wait_for(lambda: len(indexed(rag_env, dagster_home)) >= 2 * PER_RUN, "two finished runs")
        sent.set()
        os.kill(os.getpid(), signal.SIGINT)

    try:
        threading.Thread(target=interrupt_after_two_runs, daemon=True).start()
        with pytest.raises(KeyboardInterrupt) as stopped:
            ingest()
        assert sent.is_set()
        assert signal.getsignal(signal.SIGINT) is mine[signal.SIGINT]
        assert signal.getsignal(signal.SIGTERM) is mine[signal.SIGTERM]
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    assert isinstance(stopped.value, stopping.IngestInterrupted) and stopped.value.exit_code == 130
    summary = stopped.value.summary
    done = indexed(rag_env, dagster_home)
    assert summary.interrupted == "SIGINT" and summary.documents_failed == 0 and summary.errors == []
    assert summary.documents_processed == len(done)
    assert summary.documents_not_started == summary.documents_discovered - len(done) > 0
    statuses = [r.status for r in _runs(dagster_home)]
    assert dg.DagsterRunStatus.FAILURE not in statuses and dg.DagsterRunStatus.STARTED not in statuses, _why(dagster_home)
    assert late == []  # the signal was the ingest's, not the caller's


def test_a_second_signal_ends_the_command_at_once(monkeypatch):
    """The first SIGINT or SIGTERM is a KeyboardInterrupt where the ingest is (it winds up); a second one,
    while it winds up, ends the process there and then with 128 + its number."""
    exits = []
    monkeypatch.setattr(stopping.os, "_exit", exits.append)
    said = []
    before = {s: signal.getsignal(s) for s in stopping.SIGNALS}
    with stopping.stop_on_signals(exit_at_second=True, on_exit=said.append) as watch:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        _wait_for(lambda: watch.requested, "the first signal read", timeout=10)
        assert watch.signum == signal.SIGINT and not exits
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        _wait_for(lambda: exits, "the second signal's exit", timeout=10)
    assert exits == [128 + signal.SIGTERM] and said == [signal.SIGTERM] and watch.signum == signal.SIGINT
    assert {s: signal.getsignal(s) for s in stopping.SIGNALS} == before
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup fd put back too


def test_a_stopped_ingest_of_documents_from_code_keeps_what_its_finished_runs_indexed(rag_env, dagster_home, monkeypatch):
    """RAGPipeline.ingest stopped two runs in: the documents its finished runs indexed keep their files
    (a failing ingest from code puts every file back; a stop must not undo what it kept), the others'
    files are gone (put back: they did not exist), and the same call again indexes just those.

    A run stopped inside its index step may have written its documents' chunks and records but not
    Dagster's materialization: those files stay too (their chunks are in the store, and a file put
    back would leave them searchable without a page), and the next call redoes them, from the cache."""
    from rag_assets.pipeline import RAGPipeline

    monkeypatch.setenv("RAG_DOCUMENTS_PER_RUN", str(PER_RUN))
    pipeline = RAGPipeline.from_settings()
    docs = [{"document_id": name.removesuffix(".md"), "filename": name, "content": text, "metadata": {"source": "t"}}
            for name, text in PAGES.items()]

    def interrupt_after_two_runs():
        _wait_for(lambda: len({p for p in indexed(rag_env, dagster_home) if "_from_code" in p}) >= 2 * PER_RUN,
                  "two finished runs")
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_after_two_runs, daemon=True).start()
    with pytest.raises(stopping.IngestInterrupted):
        pipeline.ingest(docs)
    from_code = {p.relative_to(rag_env / "docs").as_posix() for p in (rag_env / "docs").rglob("*.md")
                 if "_from_code" in p.parts}
    done = {p for p in indexed(rag_env, dagster_home) if "_from_code" in p}
    written = {p for p in index_records(rag_env) if "_from_code" in p}
    assert done and len(done) < len(PAGES)
    assert len(written - done) <= PER_RUN  # at most the one run stopped inside its index step
    assert from_code == written  # the indexed documents' files kept; the rest put back (they did not exist)
    again = pipeline.ingest(docs)
    assert again.documents_failed == 0 and again.documents_processed == len(PAGES) - len(done), again


def test_a_stop_inside_the_index_step_keeps_the_files_of_the_chunks_it_wrote(rag_env, dagster_home, monkeypatch):
    """The stop lands in the third run after its index step wrote the chunks and records, before Dagster
    recorded the materialization: those two files stay with their chunks (CI once met this by chance),
    the documents of no run are put back, and the next call finishes the two from the cache."""
    from rag_assets.orchestration import document_assets
    from rag_assets.pipeline import RAGPipeline

    monkeypatch.setenv("RAG_DOCUMENTS_PER_RUN", str(PER_RUN))
    real_run_index, calls = document_assets.run_index, []

    def run_index_then_stop(*args, **kwargs):
        report = real_run_index(*args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)  # the KeyboardInterrupt arrives here, inside the step
        return report

    monkeypatch.setattr(document_assets, "run_index", run_index_then_stop)
    pipeline = RAGPipeline.from_settings()
    docs = [{"document_id": name.removesuffix(".md"), "filename": name, "content": text} for name, text in PAGES.items()]
    with pytest.raises(stopping.IngestInterrupted) as stopped:
        pipeline.ingest(docs)
    from_code = {p.relative_to(rag_env / "docs").as_posix() for p in (rag_env / "docs").rglob("*.md")
                 if "_from_code" in p.parts}
    done = {p for p in indexed(rag_env, dagster_home) if "_from_code" in p}
    written = {p for p in index_records(rag_env) if "_from_code" in p}
    assert len(done) == 2 * PER_RUN and len(written) == 3 * PER_RUN and done < written
    assert from_code == written
    assert stopped.value.summary.documents_processed == len(done)
    monkeypatch.setattr(document_assets, "run_index", real_run_index)
    again = pipeline.ingest(docs)
    assert again.documents_failed == 0 and again.documents_processed == len(PAGES) - len(done), again
    assert again.embedding_count == (len(PAGES) - len(written)) * 2  # the stopped run's chunks came from the cache
