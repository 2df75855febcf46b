"""One definition of the retrieval modes, fusion names and the top_k limit, used everywhere."""

import numpy as np
import pytest

from rag_assets.cli.main import _parser
from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError
from rag_assets.vocabulary.modes import MAX_TOP_K, FusionMethod, RetrievalMode, validate_top_k
from rag_assets.orchestration.evaluation import EvaluationConfig


def test_parse_names_aliases_and_default():
    assert RetrievalMode.parse("Keyword ") is RetrievalMode.KEYWORD
    assert RetrievalMode.parse("bm25") is RetrievalMode.KEYWORD and RetrievalMode.parse("dense") is RetrievalMode.VECTOR
    assert RetrievalMode.parse(None) is RetrievalMode.HYBRID and RetrievalMode.parse("", "vector") is RetrievalMode.VECTOR
    assert RetrievalMode.parse("hybrid") == "hybrid" and f"{RetrievalMode.HYBRID}" == "hybrid"
    with pytest.raises(ValueError, match="vector, keyword, hybrid"):
        RetrievalMode.parse("fuzzy")
    with pytest.raises(ValueError):
        RetrievalMode.parse(3)
    assert FusionMethod.parse("RRF") is FusionMethod.RRF
    with pytest.raises(ValueError, match="convex, rrf"):
        FusionMethod.parse("borda")


@pytest.mark.parametrize("bad", [0, MAX_TOP_K + 1, -1, 2.5, True, "5", None])
def test_top_k_limits(bad):
    with pytest.raises(ValueError, match="top_k"):
        validate_top_k(bad)


def test_top_k_accepts_numpy_integers():
    assert validate_top_k(np.int64(7)) == 7 and validate_top_k(MAX_TOP_K) == MAX_TOP_K


def test_every_layer_uses_the_same_names():
    assert tuple(EvaluationConfig().modes) == RetrievalMode.names()
    mode_action = next(a for a in _parser()._subparsers._group_actions[0].choices["query"]._actions if a.dest == "mode")
    assert tuple(mode_action.choices) == RetrievalMode.names()
    assert Settings.from_env({"RAG_RETRIEVAL_MODE": "keyword"}).retrieval_mode == "keyword"
    for var, value in (("RAG_RETRIEVAL_MODE", "fuzzy"), ("RAG_FUSION", "borda"), ("RAG_HEADING_WEIGHT", "-1"),
                       ("RAG_MAX_RESULTS_PER_PAGE", "-2"), ("RAG_KEYWORD_HEADING_REPEATS", "-1")):
        with pytest.raises(ConfigurationError, match=var):
            Settings.from_env({var: value})
