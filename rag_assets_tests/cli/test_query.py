"""`rag query`: single question (text and --json) and --batch JSONL, in process via cli.main."""

import json
import os
import subprocess
import sys

import pytest

from rag_assets.cli.main import main
from rag_assets_tests.support.environment import USER_CHOICES


@pytest.fixture
def env(built, monkeypatch):
    for key, value in built[0].items():
        monkeypatch.setenv(key, value)
    for var in ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST", "RAG_RETRIEVAL_MODE"):
        monkeypatch.delenv(var, raising=False)
    return built


def test_query_json(env, capsys):
    assert main(["query", "What does HTTP 429 mean?", "--mode", "keyword", "--top-k", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["query"] == "What does HTTP 429 mean?" and out["mode"] == "keyword"
    first = out["results"][0]
    assert first["doc_path"] == "rate-limits.md"
    assert {"chunk_id", "doc_path", "section", "heading_breadcrumb", "text", "score"} <= set(first)


def test_query_json_and_batch_give_each_result_its_context(env, tmp_path, capsys, monkeypatch):
    assert main(["query", "How do I stream responses?", "--top-k", "3", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    for r in results:  # the section's text around the matched chunk, next to it
        assert r["text"].strip() in r["context"] and 0 < r["context_tokens"] <= 400
    stream = next(r for r in results if r["doc_path"] == "guide/streaming.md")
    assert "## Server-sent events" in stream["context"] and "stream.text_stream" in stream["context"]
    batch = tmp_path / "one.jsonl"
    batch.write_text('{"id": "q1", "question": "rate limit 429"}\n', encoding="utf-8")
    assert main(["query", "--batch", str(batch), "--top-k", "2"]) == 0
    first = json.loads(capsys.readouterr().out)["results"][0]
    assert first["text"].strip() in first["context"] and first["context_tokens"] > 0
    monkeypatch.setenv("RAG_CONTEXT_TOKENS", "0")  # no context: the results as before
    assert main(["query", "How do I stream responses?", "--json"]) == 0
    assert all("context" not in r for r in json.loads(capsys.readouterr().out)["results"])


def test_query_text_and_threshold_note(env, capsys):
    assert main(["query", "How do I cook pasta?"]) == 0
    out = capsys.readouterr().out
    assert "under RAG_MIN_RELEVANCE" in out


def test_query_text_names_a_site_pages_url_and_version_and_path_prefix_select(site_built, monkeypatch, capsys):
    """Issue 42 items 4-5: each result's line names where its page is published; `--version` and a
    `--path-prefix` under the site's content root select, on the site's repository root."""
    from rag_assets_tests.support.site_pages import BASE_URL, INSTALL_1, SEARCH_PLUGIN

    for key, value in site_built[0].items():
        monkeypatch.setenv(key, value)
    for var in ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST", "RAG_RETRIEVAL_MODE"):
        monkeypatch.delenv(var, raising=False)
    assert main(["query", "How do readers search the pages without a server?", "--top-k", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f"] {SEARCH_PLUGIN} — Search plugin > Indexing pages <{BASE_URL}/docs/plugin/search/>"), first
    assert main(["query", "How do I install Zephyr?", "--version", "1.x", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["doc_path"] for r in out["results"]] == [INSTALL_1] and out["filters"] == {"version": ["1.x"]}
    assert main(["query", "How do I install Zephyr?", "--path-prefix", "plugin/", "--json"]) == 0
    assert [r["doc_path"] for r in json.loads(capsys.readouterr().out)["results"]] == [SEARCH_PLUGIN]


def test_a_servers_results_and_a_ranking_over_corpora_name_the_url_too(capsys):
    """`rag query` answered by a running `rag serve` prints the server's results (their metadata holds
    the url), and so does a query over several corpora."""
    from rag_assets.cli.query import print_across, print_results

    url = "https://zephyr.example.dev/docs/plugin/search/"
    served = {"doc_path": "handbook/pages/plugin/search.md", "section": "Indexing pages", "text": "The search plugin",
              "heading_breadcrumb": "Search plugin > Indexing pages", "score": 0.9, "relevance": 0.6,
              "metadata": {"url": url}, "corpus": "site"}
    print_results([served], "hybrid", None, 0.6, True, 0.25)
    print_across([served, {**served, "metadata": {}}])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(f"handbook/pages/plugin/search.md — Search plugin > Indexing pages <{url}>")
    assert lines[2].endswith(f"site: handbook/pages/plugin/search.md — Search plugin > Indexing pages <{url}>")
    assert lines[4].endswith("site: handbook/pages/plugin/search.md — Search plugin > Indexing pages")


def test_a_version_filter_without_versions_is_a_usage_error_saying_so(env, capsys):
    assert main(["query", "What does HTTP 429 mean?", "--version", "2.x"]) == 2
    err = capsys.readouterr().err
    assert "no indexed page has a version" in err and err.count("\n") == 1


def test_query_usage_errors(env, capsys):
    assert main(["query"]) == 2
    assert main(["query", "x", "--top-k", "0"]) == 2
    assert main(["query", "   "]) == 2
    assert "invalid query" in capsys.readouterr().err
    assert main(["query", "x", "--mode", "graph"]) == 2


def test_query_batch(env, tmp_path, capsys):
    batch = tmp_path / "questions.jsonl"
    batch.write_text(
        '{"id": "q1", "question": "How do I stream responses?"}\n'
        "not json\n"
        "\n"
        '{"id": "q3", "query": "rate limit 429"}\n'
        '{"id": "q4"}\n'
        '{"id": "q5", "question": ""}\n',
        encoding="utf-8",
    )
    assert main(["query", "--batch", str(batch), "--top-k", "2", "--mode", "hybrid"]) == 1
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [(l["id"], l["query"]) for l in lines] == [("q1", "How do I stream responses?"), ("q3", "rate limit 429")]
    assert all(1 <= len(l["results"]) <= 2 for l in lines)
    assert lines[1]["results"][0]["doc_path"] == "rate-limits.md"
    assert f"{batch}:2:" in captured.err and f"{batch}:5:" in captured.err and f"{batch}:6:" in captured.err
    assert f"{batch}:4:" not in captured.err


def test_query_batch_all_good_exits_zero(env, tmp_path, capsys):
    batch = tmp_path / "ok.jsonl"
    batch.write_text('{"id": 1, "question": "grading"}\n', encoding="utf-8")
    assert main(["query", "--batch", str(batch)]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == 1


@pytest.mark.system
def test_query_batch_with_one_latin1_line_answers_the_others(env, tmp_path):
    """Through the real `rag` entry point in a child process: no traceback, the bad line named."""
    batch = tmp_path / "mixed.jsonl"
    batch.write_bytes(
        b'\xef\xbb\xbf{"id": "q1", "question": "rate limit 429"}\r\n'  # a BOM and CRLF are fine
        + '{"id": "q2", "question": "caf\xe9 cr\xe8me"}\n'.encode("latin-1")
        + b'{"id": "q3", "question": "How do I stream responses?"}\n'
        + '{"id": "q4", "question": "na\xefve grading"}\n'.encode("utf-8")
    )
    child_env = {k: v for k, v in os.environ.items() if k not in USER_CHOICES and k != "RAG_RETRIEVAL_MODE"}
    child_env.update(env[0])
    proc = subprocess.run(
        [sys.executable, "-m", "rag_assets", "query", "--batch", str(batch), "--top-k", "1", "--mode", "keyword"],
        capture_output=True, text=True, env=child_env, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr
    answered = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["id"] for a in answered] == ["q1", "q3", "q4"]
    assert answered[0]["results"][0]["doc_path"] == "rate-limits.md"
    assert answered[2]["query"] == "na\xefve grading"
    problems = [line for line in proc.stderr.splitlines() if line.startswith(f"rag: {batch}:")]
    assert problems == [f"rag: {batch}:2: not valid UTF-8 (byte 30 of the line): re-save the file as UTF-8"]
    assert f"1 line(s) of {batch} failed" in proc.stderr


@pytest.mark.system
def test_a_retrieval_timeout_is_one_line(env):
    """Through the real entry point: a retrieval over RAG_RETRIEVE_TIMEOUT_SECONDS is one line on stderr
    (the error, not the library's log line of it too), exit 1, with --json the error object on stdout."""
    child_env = {k: v for k, v in os.environ.items() if k not in USER_CHOICES and k != "RAG_RETRIEVE_TIMEOUT_SECONDS"}
    child_env.update(env[0], RAG_RETRIEVE_TIMEOUT_SECONDS="0.001")
    for extra in ([], ["--json"]):
        proc = subprocess.run([sys.executable, "-m", "rag_assets", "query", "How do I stream responses?", *extra],
                              capture_output=True, text=True, env=child_env, timeout=300)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines() == [
            "rag: retrieval took longer than 0.001 s (RAG_RETRIEVE_TIMEOUT_SECONDS): the machine may be overloaded; "
            "try again"], proc.stderr
        if extra:
            assert "RAG_RETRIEVE_TIMEOUT_SECONDS" in json.loads(proc.stdout)["errors"][0]["error"]


def test_a_query_before_anything_is_indexed_says_so(tmp_path, monkeypatch, capsys):
    """A fresh state folder (nothing ever ingested): every mode answers "no results", exit 0 — the
    snapshot's dense search once multiplied the question by a vector table of no dimension (ValueError)."""
    for key, folder in (("RAG_DOCS_DIR", "docs"), ("RAG_CHROMA_PATH", "chroma"), ("RAG_STATE_DIR", "state"),
                        ("RAG_CACHE_DIR", "cache"), ("RAG_CORPORA_DIR", "corpora")):
        monkeypatch.setenv(key, str(tmp_path / folder))
    (tmp_path / "docs").mkdir()
    monkeypatch.setenv("RAG_NO_SERVER", "1")
    for var in ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST", "RAG_RETRIEVAL_MODE"):
        monkeypatch.delenv(var, raising=False)
    for mode in ("hybrid", "vector", "keyword"):
        assert main(["query", "How do I stream responses?", "--mode", mode]) == 0, mode
        assert "no results" in capsys.readouterr().out


def test_a_query_waits_for_the_one_time_snapshot_build_rather_than_time_out(rag_env, monkeypatch, capsys):
    """`rag query` over an index an earlier version wrote: the search snapshot is built from the store
    first (a warning says so), outside RAG_RETRIEVE_TIMEOUT_SECONDS, and the question is answered; on the
    code before, the build ran inside the timed retrieval, and one longer than the timeout ended the
    command with "the machine may be overloaded". Where the build runs is what is checked (in the command's
    own thread, not in a retrieval under the timeout), so no machine's speed decides."""
    import threading

    from rag_assets.config import Settings
    from rag_assets_tests.support.held_builds import hold_first_build
    from rag_assets_tests.support.index_builder import build_index

    build_index(None, Settings.from_env(), snapshot=False)
    monkeypatch.setenv("RAG_RETRIEVE_TIMEOUT_SECONDS", "120")  # the question itself fits, even on a loaded machine
    build = hold_first_build(monkeypatch, held=False)
    assert main(["query", "HTTP 429 retry-after", "--top-k", "2", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["results"][0]["doc_path"] == "rate-limits.md"
    assert build.threads == [threading.get_ident()]  # built before the question, outside the timeout
    assert "building it from the store once" in captured.err and "took longer" not in captured.err
