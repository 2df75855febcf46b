"""Filters select documents; every mode ranks inside them (a real index: Chroma, the local model, BM25)."""

from __future__ import annotations

import datetime
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
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import subprocess_env
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
    # frontmatter `level: 2` is an int; the filter's "2" or "2.0" (from a command line) or 2.0 matches it
    for level in ("2", "2.0", 2.0, 2):
        assert {r.doc_path for r in pipeline.search(QUESTION, "hybrid", 20, {"level": level})} == {
            "module-2/ch1/nodes.md", "module-2/ch2/topics.md", "faq/nodes.md"}, level


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


def test_keys_of_mixed_types_and_values_no_document_can_hold_are_named_errors():
    """Issue 36 item 10: mixed key types raised a raw TypeError (sorting them); object() and bytes
    values matched nothing, silently."""
    with pytest.raises(InvalidFilterError, match="filter keys are non-empty strings, got 1"):
        Filters.parse({1: "x", "module": "module-1"})
    with pytest.raises(InvalidFilterError, match="filter 'module': a value is a string, number, boolean or date, got object"):
        Filters.parse({"module": object()})
    with pytest.raises(InvalidFilterError, match="filter 'doc_type': .* got bytes b'faq'"):
        Filters.parse({"doc_type": [b"faq"]})
    with pytest.raises(InvalidFilterError, match="finite"):
        Filters.parse({"level": float("nan")})
    assert isinstance(InvalidFilterError("x"), ValueError)


def test_one_normal_form_for_values_from_python_and_from_a_command_line():
    stored = {"level": 2, "draft": True, "weight": 1.5, "code": "00123", "updated": "2024-05-01"}
    same = [({"level": 2.0}, {"level": "2.0"}), ({"draft": True}, {"draft": "True"}), ({"draft": True}, {"draft": "yes"}),
            ({"weight": 1.5}, {"weight": "1.50"}), ({"updated": datetime.date(2024, 5, 1)}, {"updated": "2024-05-01"})]
    for python, text in same:
        assert Filters.parse(python) == Filters.parse(text)
        assert Filters.parse(python).matches("a.md", stored) and Filters.parse(text).matches("a.md", stored)
    assert Filters.parse({"code": "00123"}).matches("a.md", stored)
    assert not Filters.parse({"code": "123"}).matches("a.md", stored)  # a code with leading zeros is text
    assert not Filters.parse({"draft": False}).matches("a.md", stored)
    assert Filters.parse({"tags": ["Yes"]}).matches("a.md", {"tags": "yes, no"})  # tags compare as written
    assert Filters.parse({"tags": ["ROS_2"]}).matches("a.md", {"tags": "ros_2, nodes"})
    assert Filters.parse({"language": "no"}).matches("a.md", {"language": "no"})  # Norwegian, not false
    assert Filters.parse({"language": "zh"}).matches("a.md", {"language": "zh_CN"})


def _rag(pipeline, *args: str) -> subprocess.CompletedProcess:
    env = {**subprocess_env(Path(pipeline.env["RAG_STATE_DIR"]).parent), **pipeline.env}
    return subprocess.run([sys.executable, "-m", "rag_assets", "query", *args], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.system
def test_cli_filters_module_tag_and_where(pipeline):
    proc = _rag(pipeline, QUESTION, "--top-k", "5", "--module", "module-3", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["results"]) == 5 and all(r["doc_path"].startswith("module-3/") for r in out["results"])
    assert out["filters"] == {"module": ["module-3"]}
    proc = _rag(pipeline, QUESTION, "--tag", "sensors", "--tag", "nodes", "--where", "level=1", "--json")
    assert {r["doc_path"] for r in json.loads(proc.stdout)["results"]} == {"module-1/ch2/sensors.md"}


@pytest.mark.system
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


# a docs site's pages (rag_assets.vocabulary.site): the repository root indexed, the site's content under handbook/pages/
SITE_FIELDS = {
    "handbook/pages/plugin/search.md": {"version": "2.x", "site_path": "plugin/search.md"},
    "handbook/pages/guides/install.md": {"version": "2.x", "site_path": "guides/install.md"},
    "handbook/previous/guides/install.md": {"version": "1.10", "site_path": "guides/install.md"},
    "handbook/previous/guides/themes.md": {"version": "1.1", "site_path": "guides/themes.md"},
    "notes/plugin/ideas.md": {},  # a page of no site in the same folder: its own path only
}


def test_path_prefix_matches_a_site_pages_path_under_the_site_as_well_as_its_doc_path():
    """Issue 42 item 5: pointed at a site's repository, `--path-prefix plugin/` returned nothing."""
    assert Filters.parse({"path_prefix": "plugin/"}).documents(SITE_FIELDS) == {"handbook/pages/plugin/search.md"}
    assert Filters.parse({"path_prefix": "handbook/pages/plugin/"}).documents(SITE_FIELDS) == {"handbook/pages/plugin/search.md"}
    assert Filters.parse({"path_prefix": "guides/"}).documents(SITE_FIELDS) == {
        "handbook/pages/guides/install.md", "handbook/previous/guides/install.md", "handbook/previous/guides/themes.md"}
    assert Filters.parse({"path_prefix": "notes/"}).documents(SITE_FIELDS) == {"notes/plugin/ideas.md"}
    assert Filters.parse({"site_path": "guides/install.md"}).documents(SITE_FIELDS) == {
        "handbook/pages/guides/install.md", "handbook/previous/guides/install.md"}


def test_version_selects_a_sites_versions_by_their_names_as_text():
    assert Filters.parse({"version": "2.x"}).documents(SITE_FIELDS) == {
        "handbook/pages/plugin/search.md", "handbook/pages/guides/install.md"}
    # a version's name is text: 1.10 is not 1.1 (as numbers they are one)
    assert Filters.parse({"version": "1.10"}).documents(SITE_FIELDS) == {"handbook/previous/guides/install.md"}
    assert Filters.parse({"version": ["1.1", "2.x"], "path_prefix": "guides/"}).documents(SITE_FIELDS) == {
        "handbook/pages/guides/install.md", "handbook/previous/guides/themes.md"}
    assert Filters.parse({"version": "1.10"}) != Filters.parse({"version": "1.1"})


def test_a_version_filter_where_no_page_has_a_version_says_so():
    with pytest.raises(InvalidFilterError, match="no indexed page has a version") as raised:
        Filters.parse({"version": "2.x"}).documents({"a.md": {"module": "x"}, "b.md": {}})
    assert "versioned_docs" in str(raised.value) and "known keys" not in str(raised.value)
