"""Calibrated relevance (rag_assets.retrieval.relevance): the features, the shipped calibration, the
anchors each embedder measures its scale on (the real local model), and the features' independence of an
embedder's cosine range."""

import json

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.retrieval import relevance
from rag_assets.retrieval.relevance import FEATURES, Calibration, Evidence, anchors_for, features, shipped


def evidence(cosines, background=0.05, contrast=0.6, idf=(2.0, 1.0, 3.0), known=(True, True, False),
             present=((1, 0, 0), (1, 1, 0), (0, 0, 0)), in_header=((1, 0, 0), (0, 0, 0), (0, 0, 0))):
    return Evidence(np.asarray(cosines, dtype=float), background, contrast, np.asarray(idf, dtype=float),
                    np.asarray(known), np.asarray(present, dtype=bool), np.asarray(in_header, dtype=bool))


def column(x, name):
    return x[:, FEATURES.index(name)]


def test_the_features_of_a_ranking():
    x = features(evidence([0.65, 0.35, 0.05]))
    assert x.shape == (3, len(FEATURES))
    assert column(x, "similarity") == pytest.approx([1.0, 0.5, 0.0])  # (cosine - background) / contrast
    assert column(x, "best_similarity") == pytest.approx([1.0] * 3)
    # less the mean of the best five results, the two places three results leave read as unrelated text (0)
    assert column(x, "margin") == pytest.approx([0.7, 0.2, -0.3])
    # the known terms' weight (2 + 1): all of it, a third of it, none; the header holds the first term
    assert column(x, "coverage") == pytest.approx([1.0, 1 / 3, 0.0])
    assert column(x, "heading_coverage") == pytest.approx([2 / 3, 0.0, 0.0])
    assert column(x, "unknown_terms") == pytest.approx([0.5] * 3)  # idf 3 of 6 in a term no chunk holds
    assert column(x, "log_rank") == pytest.approx(np.log([1, 2, 3]))
    assert column(x, "heading_match") == pytest.approx([0.0] * 3)  # the header holds 2 of the 3 known
    assert column(x, "known_terms") == pytest.approx([np.log(3)] * 3)  # two terms some chunk holds
    assert column(x, "rarest_term") == pytest.approx([1.0, 0.0, 0.0])  # the known term of idf 2, not the unknown one
    assert column(x, "heading_per_term") == pytest.approx([1 / 3, 0.0, 0.0])  # heading_coverage / 2 known terms
    assert column(x, "lead") == pytest.approx([0.5] * 3)  # the first result's similarity less the second's
    named = features(evidence([0.65, 0.35, 0.05], in_header=((1, 0, 0), (1, 0, 0), (1, 1, 1))))
    assert column(named, "heading_match") == pytest.approx([1.0, 0.0, 0.0])  # every known term (not the unknown)
    assert features(evidence([])).shape == (0, len(FEATURES))


def test_a_header_naming_a_short_questions_subject_counts_more_than_a_long_questions_partial_overlap():
    """heading_per_term: "What can I do during movement?" under "Movement Phase" (the header holds the
    question's one term) reads 1; a six-term question whose header holds the same share of its weight in one
    term reads a sixth as much. Its raw heading_coverage would read them alike."""
    short = features(evidence([0.35, 0.05], idf=(1.5,), known=(True,), present=((1, 0),), in_header=((1, 0),)))
    idf = (1.5, 0.0, 0.0, 0.0, 0.0, 0.0)  # the other five terms held by every chunk: no weight of their own
    long = features(evidence([0.35, 0.05], idf=idf, known=(True,) * 6, present=((1, 0),) * 6,
                             in_header=((1, 0),) + ((0, 0),) * 5))
    assert column(short, "heading_coverage")[0] == pytest.approx(column(long, "heading_coverage")[0]) == pytest.approx(1.0)
    assert column(short, "heading_per_term")[0] == pytest.approx(1.0)
    assert column(long, "heading_per_term")[0] == pytest.approx(1 / 6)


def test_places_a_short_ranking_leaves_empty_read_as_unrelated_text():
    """A one-chunk corpus's only result (rag serve over a corpus of one page) stands out of its ranking as
    it would among unrelated pages, not as a ranking where nothing stands out (margin 0, lead 0)."""
    one = features(evidence([0.35], present=((1,), (0,), (0,)), in_header=((0,), (0,), (0,))))
    # a one-chunk index's only result stands apart from the unrelated text no second result is
    assert column(one, "lead") == pytest.approx([0.5]) and column(one, "margin") == pytest.approx([0.4])


def test_the_features_do_not_depend_on_an_embedders_cosine_range():
    """An embedder whose cosines all sit in [0.75, 0.9] (e5) reads the same features as one whose sit in
    [0, 1] (MiniLM) when its anchors measured the same scale: only where a cosine sits between unrelated
    text and a matching answer counts."""
    cosines, background, contrast = np.array([0.62, 0.4, 0.1]), 0.02, 0.64
    narrow = 0.75 + 0.15 * cosines
    a = features(evidence(cosines, background, contrast))
    b = features(evidence(narrow, 0.75 + 0.15 * background, 0.15 * contrast))
    assert a == pytest.approx(b)


def test_the_shipped_calibration_gives_probabilities_and_the_default_threshold():
    calibration = shipped()
    assert set(calibration.features) <= set(FEATURES)
    p = relevance.relevance(evidence([0.8, 0.3, -0.2]))
    assert np.all((p > 0) & (p < 1)) and p[0] > p[1] > p[2]
    assert Settings.from_env({}).min_relevance == calibration.default_threshold
    data = json.loads(relevance.CALIBRATION_FILE.read_text())
    assert "benchmarks/relevance_calibration.py" in data["about"]
    with pytest.raises(ValueError, match="does not compute"):
        Calibration.from_dict({**data, "features": ["similarity", "mystery"]})


def test_anchors_are_measured_once_and_kept_in_the_cache_folder(tmp_path, monkeypatch):
    embedder = load_embedder(Settings.from_env({}).embedding)
    monkeypatch.setattr(relevance, "_anchors", {})
    anchors = anchors_for(embedder, tmp_path)
    assert anchors.passages.shape == (len(relevance.anchor_pairs()), embedder.dimension)
    assert 0.3 < anchors.contrast < 1.0  # matched answers sit well above the others for MiniLM
    [kept] = (tmp_path / "relevance_anchors").glob("*.npz")
    query = embedder.embed_query("How long should I boil spaghetti?")
    monkeypatch.setattr(relevance, "_anchors", {})
    monkeypatch.setattr(embedder, "embed_documents", lambda texts: pytest.fail("embedded again"))
    again = anchors_for(embedder, tmp_path)  # a new process: read from the cache folder
    assert np.array_equal(again.passages, anchors.passages) and again.contrast == pytest.approx(anchors.contrast)
    assert anchors.background(query) < 0.3  # the median, not the one anchor about pasta


def test_a_near_duplicate_takes_the_place_of_its_first_copy():
    """Two copies of one text (a page in two versions) are one result to the ranking's features: the copy
    ranks where its first copy does, and neither reads as 'nothing stands out'."""
    single = features(evidence([0.65, 0.05], present=((1, 0), (1, 1), (0, 0)), in_header=((1, 0), (0, 0), (0, 0))))
    twice = evidence([0.65, 0.65, 0.05], present=((1, 1, 0), (1, 1, 1), (0, 0, 0)),
                     in_header=((1, 1, 0), (0, 0, 0), (0, 0, 0)))
    copies = relevance.duplicates_of(np.array([[1.0, 0.0], [0.995, 0.0999], [0.0, 1.0]]), ["a", "a'", "b"])
    assert copies.tolist() == [[True, True, False], [True, True, False], [False, False, True]]
    x = features(Evidence(*[getattr(twice, f) for f in ("cosines", "background", "contrast", "idf", "known",
                                                        "present", "in_header")], duplicates=copies))
    assert column(x, "log_rank") == pytest.approx(np.log([1, 1, 2]))
    assert x[0] == pytest.approx(x[1]) and x[0] == pytest.approx(single[0]) and x[2] == pytest.approx(single[1])
    # the same text is a duplicate whatever its vector (one not found in the view compares by text only)
    assert relevance.duplicates_of(np.zeros((2, 2)), ["same", "same"], [False, True]).all()


def test_no_results_have_no_duplicates():
    """An empty result list is a 0 x 0 matrix, whatever shape its (empty) vectors come in."""
    for vectors in (np.zeros((0, 384), dtype=np.float32), np.zeros((0,)), []):
        for known in (None, []):
            copies = relevance.duplicates_of(vectors, [], known)
            assert copies.shape == (0, 0) and copies.dtype == bool


DUPLICATED_PAGE = ("# Rate limits\n\nAn organisation may send as many as 600 requests per minute to the API. Past that, "
                   "requests are answered with HTTP 429 and a Retry-After header saying when to try again.\n")


def test_a_page_indexed_twice_is_as_relevant_as_the_page_once(tmp_path):
    """The same page in two places of a corpus (two versions, one word apart: identical texts collapse
    into one result before, rag_assets.retrieval.diversity) gets the relevance the page gets alone: the
    runner-up is its own copy, not evidence that nothing stands out (issue 43)."""
    from rag_assets.retrieval.retriever import Retriever
    from rag_assets_tests.support.index_builder import build_index

    other = "# Fonts\n\nThe site's headings use a serif typeface; body text uses the reader's default font.\n"
    found = {}
    for name, pages in {"once": {"v2/limits.md": DUPLICATED_PAGE, "fonts.md": other},
                        "twice": {"v1/limits.md": DUPLICATED_PAGE.replace("try again", "try again later"), "v2/limits.md": DUPLICATED_PAGE,
                                  "fonts.md": other}}.items():
        root = tmp_path / name
        (root / "docs" / "v1").mkdir(parents=True)
        (root / "docs" / "v2").mkdir()
        for path, text in pages.items():
            (root / "docs" / path).write_text(text)
        settings = Settings.from_env({"RAG_DOCS_DIR": str(root / "docs"), "RAG_CHROMA_PATH": str(root / "chroma"),
                                      "RAG_STATE_DIR": str(root / "state"), "RAG_CACHE_DIR": str(tmp_path / "cache")})
        build_index(settings.docs_dir, settings)
        found[name] = Retriever.from_settings(settings).search("How many requests per minute may an organisation send?",
                                                               "hybrid", 5)
    [alone] = [r for r in found["once"] if "limits" in r.doc_path]
    copies = [r for r in found["twice"] if "limits" in r.doc_path]
    assert len(copies) == 2 and found["twice"][0] in copies and found["twice"][1] in copies
    assert alone.relevance >= Settings.from_env({}).min_relevance
    assert [r.relevance for r in copies] == pytest.approx([alone.relevance] * 2, abs=0.02)
