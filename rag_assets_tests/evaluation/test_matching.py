"""The README's matching rules: normalisation, section via breadcrumb / in-text headings, snippets."""

import pytest

from rag_assets.evaluation.evalset import EvalQuestion, ExpectedSource
from rag_assets.evaluation.matching import (
    DOCUMENT,
    SECTION,
    chunk_headings,
    entry_matches,
    expected_for_level,
    headings_in_text,
    normalize,
    rank_units,
    section_id,
    unresolved_labels,
)
from rag_assets.retrieval.retriever import SearchResult


def chunk(doc="guide/a.md", section="Child", breadcrumb="Guide > Parent > Child", text="body", cid="c"):
    return SearchResult(cid, doc, section, breadcrumb, text, 1.0)


def test_normalize_strips_emphasis_code_and_whitespace():
    assert normalize("**Creating**  `test_cases`\n  Here ") == "creating testcases here"
    assert normalize("__Bold__ *It*") == "bold it"
    assert normalize("ÉTÉ Straße") == "été strasse"  # casefold, not lower
    assert normalize(None) == ""


@pytest.mark.parametrize(
    "label",
    ["Child", "child", "*Child*", "`Child`", "  CHILD ", "Parent", "**Guide**"],
)
def test_section_matches_own_heading_or_breadcrumb(label):
    assert entry_matches(ExpectedSource(section=label), chunk())


def test_section_does_not_match_partial_or_other_heading():
    assert not entry_matches(ExpectedSource(section="Chil"), chunk())
    assert not entry_matches(ExpectedSource(section="Parent > Child"), chunk())
    assert not entry_matches(ExpectedSource(section="Elsewhere"), chunk())


def test_breadcrumb_given_as_list():
    c = chunk(breadcrumb=["Guide", "The `stream` option"])
    assert entry_matches(ExpectedSource(section="the stream option"), c)


def test_heading_inside_chunk_text():
    text = "intro line\n### The `stream` *option* ###\nbody\n#hashtag is not a heading\n    # indented code"
    assert headings_in_text(text) == ["The `stream` *option*"]
    c = chunk(section="Other", breadcrumb="Other", text=text)
    assert entry_matches(ExpectedSource(section="the stream option"), c)
    assert not entry_matches(ExpectedSource(section="hashtag is not a heading"), c)
    assert "other" in chunk_headings(c)


def test_doc_path_must_be_equal():
    assert entry_matches(ExpectedSource(doc_path="guide/a.md"), chunk())
    assert entry_matches(ExpectedSource(doc_path="./guide\\a.md"), chunk())
    assert not entry_matches(ExpectedSource(doc_path="guide/A.md"), chunk())
    assert not entry_matches(ExpectedSource(doc_path="a.md"), chunk())


def test_text_snippet_is_normalised_substring():
    c = chunk(text="Set `stream: true` to receive\nthe response   **incrementally** as events.")
    assert entry_matches(ExpectedSource(text="stream: true to receive the response incrementally"), c)
    assert entry_matches(ExpectedSource(text="RESPONSE *incrementally*"), c)
    assert not entry_matches(ExpectedSource(text="stream: false"), c)


def test_every_given_key_must_hold():
    c = chunk(text="alpha beta")
    assert entry_matches(ExpectedSource(doc_path="guide/a.md", section="Child", text="beta"), c)
    assert not entry_matches(ExpectedSource(doc_path="guide/a.md", section="Child", text="gamma"), c)
    assert not entry_matches(ExpectedSource(doc_path="other.md", section="Child", text="beta"), c)


def test_rank_units_dedupes_sections_and_keeps_first_rank():
    results = [
        chunk(section="A", breadcrumb="A", text="one", cid="1"),
        chunk(section="**A**", breadcrumb="A", text="two needle", cid="2"),  # same unit after normalising
        chunk(doc="b.md", section="B", breadcrumb="B", cid="3"),
        chunk(section="C", breadcrumb="C", cid="4"),
    ]
    expected = [ExpectedSource(doc_path="guide/a.md", text="needle"), ExpectedSource(doc_path="b.md", section="B")]
    units = rank_units(results, expected, SECTION)
    assert [u.id for u in units] == ["guide/a.md#a", "b.md#b", "guide/a.md#c"]
    assert [u.rank for u in units] == [1, 2, 3]
    assert [u.first_chunk_rank for u in units] == [1, 3, 4]
    assert units[0].chunk_ids == ["1", "2"]
    assert [u.satisfies for u in units] == [{0}, {1}, set()]  # satisfied by its second chunk

    docs = rank_units(results, expected, DOCUMENT)
    assert [u.id for u in docs] == ["guide/a.md", "b.md"]
    assert [u.satisfies for u in docs] == [{0}, {1}]
    assert rank_units(results, expected, SECTION, top_k=1)[0].satisfies == set()
    with pytest.raises(ValueError):
        rank_units(results, expected, "chunk")


def test_expected_for_level_dedupes_and_relaxes():
    exp = [
        ExpectedSource(doc_path="a.md", section="X"),
        ExpectedSource(doc_path="a.md", section="*x*"),
        ExpectedSource(doc_path="a.md", section="Y"),
        ExpectedSource(text="snippet"),
    ]
    assert len(expected_for_level(exp, SECTION)) == 3
    assert expected_for_level(exp, DOCUMENT) == [ExpectedSource(doc_path="a.md"), ExpectedSource(text="snippet")]
    assert section_id("./a.md", "**X**  y") == "a.md#x y"


def test_unresolved_labels():
    q = EvalQuestion(
        "q1",
        "?",
        (
            ExpectedSource(doc_path="a.md", section="Parent"),  # via breadcrumb
            ExpectedSource(doc_path="a.md", section="`Child`"),
            ExpectedSource(doc_path="a.md", section="Gone"),
            ExpectedSource(doc_path="missing.md", section="X"),
            ExpectedSource(doc_path="empty.md"),
            ExpectedSource(text="cannot be checked"),
            ExpectedSource(section="Other"),
        ),
    )
    units = [("a.md", "Child", "Parent > Child"), chunk(doc="b.md", section="Other", breadcrumb="Other")]
    bad = unresolved_labels([q], units, doc_paths=["empty.md"])
    assert [(u.entry.doc_path, u.entry.section) for u in bad] == [("a.md", "Gone"), ("missing.md", "X")]
    assert "document not in index" in bad[1].reason
    assert bad[0].as_dict()["question_id"] == "q1"


def test_a_text_label_is_looked_for_in_the_context_when_the_result_carries_one():
    result = chunk(doc="paper.md", section="", breadcrumb="", text="The matched sentence.")
    answer = ExpectedSource(doc_path="paper.md", text="the answer lies in the next paragraph")
    assert not entry_matches(answer, result)
    result.context = "The matched sentence.\n\nThe answer  lies in the *next* paragraph."
    assert entry_matches(answer, result)
    assert not entry_matches(ExpectedSource(doc_path="other.md", text="the answer lies"), result)
    # doc_path and section are the chunk's own: a heading inside the context is not its section
    result = chunk(section="Child", text="body")
    result.context = "## Other heading\n\nbody"
    assert not entry_matches(ExpectedSource(section="Other heading"), result)
    assert entry_matches(ExpectedSource(section="Child", text="other heading"), result)
    units = rank_units([result], [ExpectedSource(doc_path="guide/a.md", text="other heading")], SECTION)
    assert units[0].satisfies == {0}
