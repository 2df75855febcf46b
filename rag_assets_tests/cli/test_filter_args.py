"""`rag query`/`rag ask` filter flags: what they hand on, and that it matches as the API's values do."""

import argparse

from rag_assets.cli.filter_args import add_filter_arguments, filters_from_args
from rag_assets.retrieval.filters import Filters


def _filters(*argv: str):
    parser = argparse.ArgumentParser()
    add_filter_arguments(parser)
    return filters_from_args(parser.parse_args(list(argv)))


def test_where_values_match_as_the_same_values_given_to_the_api():
    """Issue 36 item 10: `--where level=2.0` and `--where draft=True` matched nothing, while the API's
    {"level": 2.0, "draft": True} matched the document (frontmatter `level: 2`, `draft: true`)."""
    stored = {"level": 2, "draft": True, "doc_type": "lab"}
    cli = _filters("--where", "level=2.0", "--where", "draft=True", "--doc-type", "lab")
    assert cli == {"doc_type": ["lab"], "level": ["2.0"], "draft": ["True"]}
    assert Filters.parse(cli) == Filters.parse({"level": 2.0, "draft": True, "doc_type": "lab"})
    assert Filters.parse(cli).matches("module-2/topics.md", stored)
    assert not Filters.parse(_filters("--where", "level=2.5")).matches("module-2/topics.md", stored)


def test_repeated_flags_are_any_of_and_no_flags_no_filter():
    assert _filters() is None
    assert _filters("--tag", "ros", "--tag", "nodes", "--where", "level=1", "--where", "level=2") == {
        "tags": ["ros", "nodes"], "level": ["1", "2"]}


def test_version_is_a_filter_flag_of_every_retrieval_command():
    """Issue 42 item 4: `rag query`/`rag ask --version V` select a docs site's version (`rag` has no
    program-wide --version for it to clash with)."""
    from rag_assets.cli.main import _parser

    assert _filters("--version", "2.x", "--version", "next") == {"version": ["2.x", "next"]}
    parser = _parser()
    for command in (["query", "q"], ["ask", "q"]):
        args = parser.parse_args([*command, "--version", "1.x", "--path-prefix", "plugin/"])
        assert filters_from_args(args) == {"version": ["1.x"], "path_prefix": ["plugin/"]}
