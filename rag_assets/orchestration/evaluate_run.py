"""The `rag evaluate` run: retrieval_evaluation materialized on the instance (after synthetic_eval_set
unless eval sets are given), like a run launched from the UI, and what it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .corpus_definitions import CorpusDefinitions
from .definitions import DEFAULT
from .synthetic_eval_asset import SYNTHETIC_PREFIX
from .execution import console_logging, first_error, materialization_metadata
from .instance import get_instance
from .loaded_corpora import asset_job

@dataclass
class EvaluateOutcome:
    run_id: str
    success: bool
    # the main figures (the saved JSON: modes -> metric -> value, skipped, top_k, questions, eval_set):
    # the labelled set's, or the synthetic set's when the index has no labelled one
    summary: dict
    rows_path: str | None  # per-question parquet
    checks: dict[str, dict]  # check name -> {"passed", "severity", "metadata"}
    error: str = ""
    synthetic_summary: dict = field(default_factory=dict)  # the synthetic set's figures, when it was scored
    synthetic_rows_path: str | None = None
    skipped: str = ""  # why nothing was scored (the asset's "skipped" metadata)


def evaluate(eval_sets: Sequence[str] | None = None, top_k: int | None = None,
             corpus: CorpusDefinitions = DEFAULT) -> EvaluateOutcome:
    """Materialize retrieval_evaluation (a run on the instance, like one launched from the UI), after
    synthetic_eval_set unless eval sets are given."""
    import json

    instance = get_instance()
    config: dict = {}
    if eval_sets:
        config["eval_sets"] = [str(Path(p).resolve()) for p in eval_sets]
    if top_k:
        config["top_k"] = top_k
    evaluation = corpus.evaluation
    selection = [evaluation.retrieval_evaluation.key]
    if not eval_sets:
        selection.insert(0, evaluation.synthetic_eval_set.key)
    run = asset_job(corpus).execute_in_process(
        instance=instance,
        asset_selection=selection,
        run_config={"ops": {evaluation.retrieval_evaluation.op.name: {"config": config}}, **console_logging(corpus)},
        raise_on_error=False,
    )
    meta = materialization_metadata(run).get(evaluation.retrieval_evaluation.key.to_user_string(), {})

    def saved(path):
        return json.loads(Path(path).with_suffix(".json").read_text()) if path else {}

    synthetic_rows = meta.get(f"{SYNTHETIC_PREFIX}results_parquet")
    rows_path = meta.get("results_parquet") or synthetic_rows
    summary = saved(rows_path)
    checks = {
        e.check_name: {
            "passed": e.passed,
            "severity": e.severity.value,
            "metadata": {k: v.value for k, v in e.metadata.items()},
        }
        for e in run.get_asset_check_evaluations()
    }
    return EvaluateOutcome(run.run_id, run.success, summary, rows_path, checks, "" if run.success else first_error(run),
                           saved(synthetic_rows), synthetic_rows, str(meta.get("skipped") or ""))

