"""Retrieval evaluation, plain Python (no Dagster): eval sets, matching rules, rank metrics,
ragas scores and a runner producing an :class:`EvaluationReport`.

ragas is imported lazily (only by :mod:`ragas_scores`, when scores are computed).
"""

from rag_assets.evaluation.evalset import (
    EvalQuestion,
    EvalSetError,
    EvalSetLoad,
    ExpectedSource,
    load_eval_set,
    load_eval_sets,
)
from rag_assets.evaluation.matching import (
    DOCUMENT,
    SECTION,
    entry_matches,
    normalize,
    rank_units,
    unresolved_labels,
)
from rag_assets.evaluation.metrics import KS, mean_metrics, question_metrics
from rag_assets.evaluation.runner import EvaluationReport, evaluate_retrieval

__all__ = [
    "DOCUMENT",
    "KS",
    "SECTION",
    "EvalQuestion",
    "EvalSetError",
    "EvalSetLoad",
    "EvaluationReport",
    "ExpectedSource",
    "entry_matches",
    "evaluate_retrieval",
    "load_eval_set",
    "load_eval_sets",
    "mean_metrics",
    "normalize",
    "question_metrics",
    "rank_units",
    "unresolved_labels",
]
