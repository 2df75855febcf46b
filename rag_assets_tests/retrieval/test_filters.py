"""Filters select documents; every mode ranks inside them (a real index: Chroma, the local model, BM25)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets.errors import InvalidFilterError
from rag_assets.pipeline import RAGPipeline
from rag_assets.retrieval.context import RetrieveRequest
from rag_assets.retrieval.filters import Filters
from rag_assets_tests.conftest import subprocess_env, write_corpus
from rag_assets_tests.support.index_builder import build_index

MODES = ("vector", "keyword", "hybrid")


def _page(title: str, frontmatter: str, topic: str, n: int = 4) -> str:
    sections = "\n\n".join(
        f"## {topic.capitalize()} part {i}\n\nA ROS 2 node is a process that does one job; part {i} of {title} "
        f"explains how a node publishes to topics, subscribes, and offers services about {topic}." for i in range(n)
    )
    return f"---\n{frontmatter}---\n\n# {title}\n\n{sections}\n"


COURSE = {
    "module-1/ch1/intro.md": _page("Introduction", "doc_type: lesson\ntags: [basics, ros]\nlevel: 1\n", "embodiment"),
    "module-1/ch2/sensors.md": _page("Sensors", "doc_type: lesson\ntags: [sensors]\nlevel: 1\n", "lidar"),
    "module-2/ch1/nodes.md": _page("Nodes", "doc_type: lesson\ntags: [ros, nodes]\nlevel: 2\n", "nodes"),
    "module-2/ch2/topics.md": _page("Topics", "doc_type: lab\ntags: [ros]\nlevel: 2\n", "topics"),
    "module-3/ch1/planning.md": _page("Planning", "doc_type: lesson\ntags: [planning]\nlevel: 3\n", "planning", n=7),
    "faq/nodes.md": _page("Node FAQ", "doc_type: faq\nlevel: 2\n", "questions", n=2),
}
QUESTION = "What is a ROS 2 node?"


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    from rag_assets.config import Settings

    root = tmp_path_factory.mktemp("course")
    docs = write_corpus(root / "docs", COURSE)
    env = {"RAG_DOCS_DIR": str(docs), "RAG_CHROMA_PATH": str(root / "chroma"), "RAG_STATE_DIR": str(root / "state"),
           "RAG_CACHE_DIR": str(root / "cache")}
    settings = Settings.from_env(env)
    build_index(docs, settings)
    pipe = RAGPipeline.from_settings(settings)
    pipe.env = env  # for the CLI tests
    return pipe


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_ranks_inside_the_filtered_documents_and_fills_top_k(pipeline, mode):
    unfiltered = pipeline.search(QUESTION, mode, 5)
    assert any(not r.doc_path.startswith("module-3/") for r in unfiltered)  # the filter has work to do
    results = pipeline.search(QUESTION, mode, 5, {"module": "module-3"})
    assert len(results) == 5  # 7 chunks match: top_k is filled from inside the set
    assert all(r.doc_path.startswith("module-3/") for r in results)


def test_tags_are_any_of_and_keys_are_all_of(pipeline):
    tagged = {r.doc_path for r in pipeline.search(QUESTION, "hybrid", 20, {"tags": ["NODES", "sensors"]})}
    assert tagged == {"module-2/ch1/nodes.md", "module-1/ch2/sensors.md"}  # any tag, case-insensitive
    both = {r.doc_path for r in pipeline.search(QUESTION, "hybrid", 20, {"tags": "ros", "doc_type": "lab"})}
    assert both == {"module-2/ch2/topics.md"}


def test_path_prefix_chapter_and_a_numeric_frontmatter_key(pipeline):
    assert {r.doc_path for r in pipeline.search(QUESTION, "keyword", 20, {"path_prefix": "module-1/"})} == {
        "module-1/ch1/intro.md", "module-1/ch2/sensors.md"}
    assert {r.doc_path for r in pipeline.search(QUESTION, "vector", 20, {"chapter": "ch2"})} == {
        "module-1/ch2/sensors.md", "module-2/ch2/topics.md"}
    # frontmatter `level: 2` is an int; the filter's "2" (from a command line) matches it
    assert {r.doc_path for r in pipeline.search(QUESTION, "hybrid", 20, {"level": "2"})} == {
        "module-2/ch1/nodes.md", "module-2/ch2/topics.md", "faq/nodes.md"}


def test_a_filter_nothing_matches_returns_nothing(pipeline):
    assert pipeline.search(QUESTION, "hybrid", 5, {"module": "module-9"}) == []


def test_an_unknown_key_is_one_error_listing_the_known_keys(pipeline):
    with pytest.raises(InvalidFilterError) as err:
        pipeline.search(QUESTION, "hybrid", 5, {"modul": "module-2"})
    message = str(err.value)
    assert "'modul'" in message and "module" in message and "level" in message and "\n" not in message


def test_filters_are_part_of_the_cache_key(pipeline):
    plain = pipeline.retrieve(RetrieveRequest(QUESTION, max_chunks=5))
    filtered = pipeline.retrieve(RetrieveRequest(QUESTION, max_chunks=5, filters={"module": "module-3"}))
    assert not filtered.cached
    assert {c.doc_path for c in filtered.document_chunks} == {"module-3/ch1/planning.md"}
    again = pipeline.retrieve(RetrieveRequest(QUESTION, max_chunks=5, filters={"module": ["module-3"]}))
    assert again.cached and [c.chunk_id for c in again.document_chunks] == [c.chunk_id for c in filtered.document_chunks]
    assert pipeline.retrieve(RetrieveRequest(QUESTION, max_chunks=5)).cached
    assert [c.chunk_id for c in plain.document_chunks] != [c.chunk_id for c in filtered.document_chunks]


def test_query_takes_filters_too(pipeline):
    out = pipeline.query(QUESTION, top_k=3, filters={"doc_type": "faq"})
    assert out["metadata"]["sources"] == ["faq/nodes.md"]


def test_parse_rejects_what_cannot_be_a_filter():
    assert Filters.parse(None) is None and Filters.parse({}) is None
    for bad in ({"module": None}, {"module": []}, {"module": {"a": 1}}, {"": "x"}, ["module"]):
        with pytest.raises(InvalidFilterError):
            Filters.parse(bad)


def _rag(pipeline, *args: str) -> subprocess.CompletedProcess:
    env = {**subprocess_env(Path(pipeline.env["RAG_STATE_DIR"]).parent), **pipeline.env}
    return subprocess.run([sys.executable, "-m", "rag_assets", "query", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def test_cli_filters_module_tag_and_where(pipeline):
    proc = _rag(pipeline, QUESTION, "--top-k", "5", "--module", "module-3", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["results"]) == 5 and all(r["doc_path"].startswith("module-3/") for r in out["results"])
    assert out["filters"] == {"module": ["module-3"]}
    proc = _rag(pipeline, QUESTION, "--tag", "sensors", "--tag", "nodes", "--where", "level=1", "--json")
    assert {r["doc_path"] for r in json.loads(proc.stdout)["results"]} == {"module-1/ch2/sensors.md"}


def test_cli_unknown_key_or_malformed_where_exits_2_with_one_line(pipeline):
    proc = _rag(pipeline, QUESTION, "--where", "colour=red")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "colour" in proc.stderr
    assert "known keys" in proc.stderr and "Traceback" not in proc.stderr
    proc = _rag(pipeline, QUESTION, "--where", "level")
    assert proc.returncode == 2 and "KEY=VALUE" in proc.stderr


def test_language_matches_its_regions_unless_one_is_named():
    from rag_assets.retrieval.filters import Filters

    fields = {"a.md": {"language": "zh-CN"}, "b.md": {"language": "zh"}, "c.md": {"language": "en"}, "d.md": {"language": "pt_BR"}}
    assert Filters.parse({"language": "zh"}).documents(fields) == {"a.md", "b.md"}
    assert Filters.parse({"language": "zh-cn"}).documents(fields) == {"a.md"}
    assert Filters.parse({"language": ["en", "pt-BR"]}).documents(fields) == {"c.md", "d.md"}
