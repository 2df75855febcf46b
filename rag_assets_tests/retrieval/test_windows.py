"""Context windows, the pure part (rag_assets.retrieval.windows): growth within a budget, passages,
sections from the row table, the joined text."""

import pytest

from rag_assets.retrieval.windows import (
    GAP,
    GAP_TOKENS,
    JOIN_TOKENS,
    SectionRuns,
    grow,
    join_passages,
    join_texts,
    opens_section,
    passages,
    passages_tokens,
    stored_tokens,
    window_tokens,
)


def cost(tokens, span):
    return window_tokens(tokens[span[0]:span[1]])


def test_window_grows_after_then_before_within_the_budget():
    tokens = [100] * 9
    assert grow(tokens, 4, 0) == (4, 5)  # budget 0: the chunk alone
    assert grow(tokens, 4, 150) == (4, 5)  # no neighbour fits
    assert grow(tokens, 4, 201) == (4, 6)  # the following chunk first
    assert grow(tokens, 4, 302) == (3, 6)  # then the preceding one
    assert grow(tokens, 4, 403) == (3, 7)
    for budget in range(0, 1000, 7):
        span = grow(tokens, 4, budget)
        assert span[0] <= 4 < span[1]
        assert cost(tokens, span) <= max(budget, tokens[4])


def test_a_side_that_is_closed_lets_the_other_go_on():
    assert grow([100] * 6, 0, 10_000) == (0, 6)  # the first chunk: only following text
    assert grow([100] * 6, 5, 303) == (3, 6)  # the last chunk: only preceding text
    assert grow([100] * 6, 5, 403) == (2, 6)
    # the following chunk is too big; smaller preceding ones still come in
    assert grow([30, 30, 30, 500, 10], 2, 100) == (0, 3)


def test_whole_section_when_it_fits_and_a_big_chunk_alone():
    tokens = [40, 120, 80, 60]
    assert grow(tokens, 2, window_tokens(tokens)) == (0, 4)
    assert grow(tokens, 2, window_tokens(tokens) - 1) != (0, 4)
    assert grow([500], 0, 100) == (0, 1)  # over the budget alone: still the matched chunk


def test_growth_orders():
    tokens = [100] * 7
    assert grow(tokens, 3, 302, first="before") == (2, 5)
    assert grow(tokens, 3, 302, first="forward") == (3, 6)
    assert grow(tokens, 3, 10_000, first="forward") == (0, 7)
    assert grow(tokens, 3, 302, first="backward") == (1, 4)
    with pytest.raises(ValueError):
        grow(tokens, 3, 100, first="sideways")
    with pytest.raises(IndexError):
        grow(tokens, 7, 100)


def test_passages_one_window_when_it_reaches_every_hit():
    tokens = [100] * 20
    assert passages(tokens, [5], 400) == [grow(tokens, 5, 400)]
    assert passages(tokens, [5, 6], 400) == [grow(tokens, 5, 400)]  # the hit is inside the window
    assert passages(tokens, [5, 10], 0) == [(5, 6)]


def test_passages_reach_a_hit_apart_within_the_budget():
    tokens = [100] * 20
    spans = passages(tokens, [3, 15], 400)
    assert len(spans) == 2 and spans[0][0] <= 3 < spans[0][1] and spans[1][0] <= 15 < spans[1][1]
    assert spans[0][1] < spans[1][0]  # in document order, apart
    assert passages_tokens(tokens, spans) <= 400
    # the second hit comes first in the document: still in document order
    spans = passages(tokens, [15, 3], 400)
    assert spans[0][0] <= 3 < spans[0][1] and spans[1][0] <= 15 < spans[1][1]
    assert passages_tokens(tokens, spans) <= 400


def test_passages_skip_a_hit_that_does_not_fit_and_merge_touching_windows():
    tokens = [100] * 20
    # 60 % of 200 for the first window leaves no room for a second chunk: one window, the whole budget
    assert passages(tokens, [3, 15], 200) == [grow(tokens, 3, 200)]
    spans = passages([100] * 8, [1, 5], 400)  # the second window reaches the first: one window
    assert all(b[0] > a[1] for a, b in zip(spans, spans[1:]))
    for budget in range(100, 900, 50):
        for anchors in ([0, 19], [10, 2], [7, 12], [19, 0, 9]):
            spans = passages(tokens, anchors, budget)
            assert passages_tokens(tokens, spans) <= max(budget, 100)
            assert any(lo <= anchors[0] < hi for lo, hi in spans)
            assert spans == sorted(spans) and all(b[0] > a[1] for a, b in zip(spans, spans[1:]))


def test_join_reads_as_the_original():
    chunks = ["## Setup\n\nInstall the package.", "Then run the command:\n\n```sh\nrag ingest\n```", "Done."]
    text = join_texts(chunks)
    assert text == "## Setup\n\nInstall the package.\n\nThen run the command:\n\n```sh\nrag ingest\n```\n\nDone."
    assert text.count("## Setup") == 1
    assert join_passages([chunks[:1], chunks[2:]]) == f"## Setup\n\nInstall the package.\n\n{GAP}\n\nDone."
    assert GAP_TOKENS > JOIN_TOKENS


def test_join_drops_a_repeated_overlap():
    first = "Alpha beta gamma.\n\nDelta epsilon zeta eta."
    second = "zeta eta.\n\nTheta iota kappa."  # the chunker's overlap: the tail, a blank line, the body
    assert join_texts([first, second], overlap=True) == f"{first}\n\nTheta iota kappa."
    assert join_texts([first, second]) == f"{first}\n\n{second}"  # no overlap configured: kept
    assert join_texts([first, "Theta."], overlap=True) == f"{first}\n\nTheta."


def test_opens_section():
    assert opens_section("## Setup\n\ntext") and opens_section("# Title") and opens_section("###### x")
    assert not opens_section("#hashtag") and not opens_section("text\n## later") and not opens_section("")
    assert not opens_section("```\n# a comment\n```")


def test_sections_from_the_row_table():
    # rows in any order; doc a: intro, "A > B" in two runs (two "## B" under one "# A"), "A > C"; doc b
    rows = [  # (doc, section key, chunk_index, opens)
        ("a.md", "a.md#A > B", 3, False),  # 0
        ("b.md", "b.md#", 0, False),  # 1
        ("a.md", "a.md#A", 0, True),  # 2
        ("a.md", "a.md#A > B", 1, True),  # 3
        ("a.md", "a.md#A > B", 2, False),  # 4
        ("a.md", "a.md#A > B", 5, False),  # 5 (chunk_index 4 is missing: a gap)
        ("a.md", "a.md#A > B", 6, True),  # 6 (a second "## B")
        ("a.md", "a.md#A > C", 7, True),  # 7
        ("b.md", "b.md#", 2, False),  # 8
    ]
    runs = SectionRuns.build(*zip(*rows))
    section, at = runs.section_of(4)
    assert list(section) == [3, 4, 0, 5] and at == 1  # document order, across the gap
    assert runs.section_of(5)[1] == 3 and list(runs.section_of(5)[0]) == list(runs.section_of(3)[0])
    assert list(runs.section_of(6)[0]) == [6]
    assert list(runs.section_of(7)[0]) == [7]
    assert list(runs.section_of(2)[0]) == [2]
    assert list(runs.section_of(8)[0]) == [1, 8] and runs.section_of(8)[1] == 1
    empty = SectionRuns.build([], [], [], [])
    assert len(empty.order) == 0


def test_stored_tokens_or_an_estimate():
    assert stored_tokens(87, "x" * 40) == 87
    assert stored_tokens(None, "x" * 40) == 10 and stored_tokens("bad", "") == 1
