"""retrieval_evaluation materialized on a real instance over a real index of the test corpus."""

import json
import subprocess
import sys
import os

import dagster as dg
import pandas as pd
import pytest
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore, embedded_collection_id
from rag_assets_tests.support.corpus import SAMPLE_DOCS, SAMPLE_EVAL_SET, write_corpus
from rag_assets.orchestration.definitions import (
    PER_DOCUMENT_ASSETS, document_catalog, documents_partitions, retrieval_evaluation, synthetic_eval_set)
from rag_assets.orchestration.resources import project_resources
from rag_assets.evaluation.synthetic.tuning import OFFLINE_GENERATOR

RESOURCES = project_resources()

GOOD = SAMPLE_EVAL_SET
DRIFTED = [
    {"id": "gone", "question": "How are prompts versioned?",
     "expected": [{"doc_path": "guide/evaluation.md", "section": "Prompt versioning"}]},
    {"id": "moved", "question": "What are the quotas?", "expected": [{"doc_path": "quotas.md"}]},
]


def write_eval(path, questions, extra_lines=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(q) for q in questions] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def indexed(rag_env, dagster_home):
    with dg.DagsterInstance.get() as instance:
        assert dg.materialize([document_catalog], instance=instance, resources=RESOURCES).success
        keys = instance.get_dynamic_partitions(documents_partitions.name)
        tags = {ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]}
        assert dg.materialize(PER_DOCUMENT_ASSETS, instance=instance, resources=RESOURCES, tags=tags).success
        yield instance


def _evaluate(instance):
    result = dg.materialize([retrieval_evaluation], instance=instance, resources=RESOURCES, raise_on_error=False)
    meta = {k: v.value for k, v in result.asset_materializations_for_node("retrieval_evaluation")[0].metadata.items()}
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    return result, meta, checks


def test_scores_every_mode_saves_rows_and_passes_its_checks(indexed, rag_env, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_MIN_HYBRID_RECALL_AT_5", "0.6")
    write_eval(rag_env / "eval" / "small.jsonl", GOOD, extra_lines=['{"id": "broken", "question": ""}', "not json"])
    result, meta, checks = _evaluate(indexed)
    assert result.success
    assert meta["questions"] == 3 and meta["eval_set_errors"] == 2
    for mode in ("vector", "keyword", "hybrid"):
        assert 0.0 <= meta[f"{mode}/section.recall@5"] <= 1.0
        assert "| section.mrr@10 |" in meta[f"{mode}/table"]
    assert meta["hybrid/section.recall@5"] >= 2 / 3
    assert 0 < meta["hybrid/context_tokens.mean"] <= 400  # each result's context (RAG_CONTEXT_TOKENS), plotted
    assert "| context_tokens.mean |" in meta["hybrid/table"]
    assert "| metric | value | 95% interval |" in meta["hybrid/table"]  # each headline mean, how sure
    assert meta["hybrid_vs_single_modes"].splitlines()[0] == "| metric | hybrid − vector | hybrid − keyword |"
    assert checks["retrieval_quality"].passed and checks["eval_labels_resolve"].passed
    assert checks["hybrid_not_behind"].passed and checks["hybrid_not_behind"].metadata["behind"].value == 0
    assert checks["hybrid_not_behind"].metadata["compared_with"].value == "vector, keyword"
    rows = pd.read_parquet(meta["results_parquet"])
    assert len(rows) == 9 and set(rows["mode"]) == {"vector", "keyword", "hybrid"}
    # LLM-judged metrics are skipped with the reason recorded, never scored as zero
    assert "no LLM configured" in meta["ragas_skipped"]["answer_correctness"]
    assert "hybrid/ragas.answer_correctness" not in meta

    # scored again, the run says how its figures moved since this one: the index did not change
    assert "since_last_evaluation" not in meta
    _, again, _ = _evaluate(indexed)
    moved = again["since_last_evaluation"]
    assert "over the 3 questions both asked" in moved
    assert "| hybrid | section.recall@5 |" in moved and "| +0.000 (+0.000 to +0.000) | no clear change |" in moved


def test_checks_fail_when_quality_is_broken_and_labels_drift(indexed, rag_env, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_MIN_HYBRID_RECALL_AT_5", "0.9")
    monkeypatch.setenv("RAG_EVAL_CHECK_SEVERITY", "ERROR")
    write_eval(rag_env / "eval" / "drifted.jsonl", DRIFTED)
    _, meta, checks = _evaluate(indexed)
    assert meta["hybrid/section.recall@5"] == 0.0
    assert not checks["retrieval_quality"].passed
    assert checks["retrieval_quality"].severity == dg.AssetCheckSeverity.ERROR
    labels = checks["eval_labels_resolve"]
    assert not labels.passed and labels.metadata["unresolved"].value == 2
    problems = labels.metadata["problems"].value
    assert "Prompt versioning" in problems and "quotas.md" in problems


@pytest.mark.system
def test_rag_evaluate_json_and_exit_codes(indexed, rag_env, monkeypatch):
    eval_file = write_eval(rag_env / "elsewhere" / "set.jsonl", GOOD)
    monkeypatch.setenv("RAG_EVAL_MIN_HYBRID_RECALL_AT_5", "0.5")
    cmd = [sys.executable, "-m", "rag_assets", "evaluate", "--eval-set", str(eval_file), "--top-k", "5", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out["metrics"]) == {"vector", "keyword", "hybrid"}
    assert out["eval_set"] == {"kind": "labelled", "paths": [str(eval_file)]}
    assert out["top_k"] == 5 and len(out["rows"]) == 9
    assert out["checks"]["retrieval_quality"]["passed"] is True
    confidence = out["confidence"]
    for mode in ("vector", "keyword", "hybrid"):
        span = confidence["intervals"][mode]["section.recall@5"]
        assert span["low"] <= span["value"] == out["metrics"][mode]["section.recall@5"] <= span["high"]
    assert set(confidence["hybrid_minus"]) == {"vector", "keyword"}
    assert confidence["hybrid_minus"]["vector"]["section.mrr@10"]["verdict"] in {"ahead", "behind", "unclear"}

    first_run = out["rows_path"]
    assert first_run.endswith(".parquet") and len(pd.read_parquet(first_run)) == 9

    monkeypatch.setenv("RAG_EVAL_MIN_HYBRID_RECALL_AT_5", "1.01")
    monkeypatch.setenv("RAG_EVAL_CHECK_SEVERITY", "ERROR")
    proc = subprocess.run(cmd[:-1] + ["--against", first_run], capture_output=True, text=True, env=os.environ.copy(),
                          timeout=300)
    assert proc.returncode == 1 and "retrieval_quality: FAILED (ERROR)" in proc.stderr
    assert "section.recall@5" in proc.stdout and "context_tokens.mean" in proc.stdout
    assert "95% intervals (bootstrap over the 3 questions):" in proc.stdout
    assert "hybrid − vector: section.recall@5 " in proc.stdout and "hybrid − keyword: " in proc.stdout
    assert "(3 questions in both):" in proc.stdout  # against the --json run before: the same index
    assert "  hybrid: section.recall@5 " in proc.stdout and "no clear change" in proc.stdout
    assert f"against {first_run} (3 questions in both):" in proc.stdout  # the run named, whichever came between

    again = subprocess.run(cmd + ["--against", first_run], capture_output=True, text=True, env=os.environ.copy(),
                           timeout=300)
    against = json.loads(again.stdout)["against"]
    assert against["path"] == first_run and against["questions"] == 3
    assert against["by_mode"]["hybrid"]["section.recall@5"]["verdict"] == "no clear change"

    bad = subprocess.run(cmd + ["--against", str(eval_file)], capture_output=True, text=True, env=os.environ.copy(),
                         timeout=300)
    assert bad.returncode == 2 and f"--against {eval_file}: not a saved evaluation run" in bad.stderr


def _sensor_tick(instance, cursor=None):
    from rag_assets.orchestration.definitions import defs, evaluation_sensor

    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    return evaluation_sensor.evaluate_tick(context)


def test_evaluation_sensor_scores_each_index_version_once(indexed, rag_env):
    write_eval(rag_env / "eval" / "small.jsonl", GOOD)
    first = _sensor_tick(indexed)
    (request,) = first.run_requests  # the index was never scored
    assert request.tags["rag/run"] == "evaluation" and request.run_key.startswith("evaluate-")
    result, meta, _ = _evaluate(indexed)
    assert result.success and meta["index_generation"] == request.run_key.removeprefix("evaluate-")
    scored = _sensor_tick(indexed, first.cursor)
    assert not scored.run_requests and "is evaluated" in scored.skip_message

    doc = rag_env / "docs" / "rate-limits.md"
    doc.write_text(doc.read_text() + "\nEnterprise tiers negotiate custom limits.\n")
    assert dg.materialize(PER_DOCUMENT_ASSETS, instance=indexed, resources=RESOURCES, partition_key="rate-limits.md").success
    (again,) = _sensor_tick(indexed, scored.cursor).run_requests
    assert again.run_key != request.run_key  # a new index version, a new evaluation


def test_evaluation_sensor_waits_for_ingestion_runs_in_flight(indexed, rag_env, monkeypatch):
    from rag_assets.orchestration import sensors

    write_eval(rag_env / "eval" / "small.jsonl", GOOD)
    probe = dg.Definitions(jobs=[dg.define_asset_job("probe", selection=[document_catalog])],
                           assets=[document_catalog], resources=RESOURCES).resolve_job_def("probe")
    # another corpus's runs hold nothing of this one's back
    elsewhere = indexed.create_run_for_job(probe, tags=sensors.index_run_tags(Corpus.named("other", rag_env, rag_env)),
                                           status=dg.DagsterRunStatus.STARTED)
    assert len(_sensor_tick(indexed).run_requests) == 1
    indexed.report_run_canceled(elsewhere)
    ingesting = indexed.create_run_for_job(probe, tags=sensors.index_run_tags(Corpus()), status=dg.DagsterRunStatus.STARTED)
    waiting = _sensor_tick(indexed)
    assert not waiting.run_requests and "ingestion run(s) in flight" in waiting.skip_message
    # a folder that never stops changing is still scored, after a bounded wait
    monkeypatch.setattr(sensors, "EVALUATION_MAX_DEFER_SECONDS", 0)
    assert len(_sensor_tick(indexed, waiting.cursor).run_requests) == 1
    indexed.report_run_canceled(ingesting)
    evaluating = indexed.create_run_for_job(probe, tags=sensors.evaluation_run_tags(Corpus()),
                                            status=dg.DagsterRunStatus.STARTED)
    busy = _sensor_tick(indexed, waiting.cursor)
    assert not busy.run_requests and "evaluation run is queued or running" in busy.skip_message
    indexed.report_run_canceled(evaluating)


def _materialized(result, name):
    return {k: v.value for k, v in result.asset_materializations_for_node(name)[0].metadata.items()}


def test_no_eval_set_scores_a_synthetic_set_labelled_synthetic(indexed, rag_env):
    assert not list((rag_env / "eval").glob("*.jsonl"))
    result = dg.materialize([synthetic_eval_set, retrieval_evaluation], instance=indexed, resources=RESOURCES)
    assert result.success
    made, meta = _materialized(result, "synthetic_eval_set"), _materialized(result, "retrieval_evaluation")
    # the set: versioned, stored with the results (never under the labelled sets' folder)
    assert made["kind"] == "synthetic" and made["questions"] == 3 and made["documents_regenerated"] == 3
    assert made["path"] == str(rag_env / "eval_results" / "synthetic" / "eval_set.jsonl")
    assert not (rag_env / "eval").exists() or not list((rag_env / "eval").iterdir())
    lines = [json.loads(line) for line in open(made["path"], encoding="utf-8")]
    assert {line["synthetic"]["set_version"] for line in lines} == {made["version"]}
    event = indexed.get_latest_materialization_event(synthetic_eval_set.key)
    assert event.asset_materialization.tags["dagster/data_version"] == made["version"]
    # its scores: every mode, every key and table says synthetic, and no check judges them
    assert meta["eval_set_kind"] == "synthetic" and meta["synthetic/version"] == made["version"]
    for mode in ("vector", "keyword", "hybrid"):
        assert 0.0 <= meta[f"synthetic/{mode}/section.recall@5"] <= 1.0
        assert meta[f"synthetic/{mode}/table"].startswith("**Synthetic eval set**")
        assert f"{mode}/section.recall@5" not in meta  # never where labelled figures are plotted
    assert meta["synthetic/hybrid/section.recall@5"] >= 2 / 3
    assert result.get_asset_check_evaluations() == []
    saved = json.loads(open(meta["synthetic/results_parquet"].replace(".parquet", ".json")).read())
    assert saved["eval_set"]["kind"] == "synthetic" and saved["eval_set"]["version"] == made["version"]

    assert (made["documents_found"], made["documents_indexed"]) == (3, 3)

    # a changed document is not asked about until it is indexed at its new version (issue 34: an
    # ingest stopped half-way is not scored as if it were done) ...
    doc = rag_env / "docs" / "rate-limits.md"
    doc.write_text(doc.read_text().replace("at most 50 requests", "at most 60 requests"))
    stale = _materialized(dg.materialize([synthetic_eval_set], instance=indexed, resources=RESOURCES), "synthetic_eval_set")
    assert (stale["documents_found"], stale["documents_indexed"], stale["documents"]) == (3, 2, 2)
    # ... then it is asked about again, the others are reused
    assert dg.materialize(PER_DOCUMENT_ASSETS, instance=indexed, resources=RESOURCES, partition_key="rate-limits.md").success
    again = _materialized(dg.materialize([synthetic_eval_set], instance=indexed, resources=RESOURCES), "synthetic_eval_set")
    assert again["documents_regenerated"] == 1 and again["documents_reused"] == 2 and again["documents_indexed"] == 3


def test_the_synthetic_set_reads_the_stage_records_not_the_files(indexed, rag_env):
    """Each page is asked about as its ingest stages recorded it: a file whose records are current is
    not read again. The proof: rate-limits.md overwritten in place by bytes of the same size and
    mtime (its stat, hence its catalog version, unchanged) still gives its recorded sections."""
    import os

    spec = synthetic_eval_set.specs_by_key[synthetic_eval_set.key]
    upstream = {dep.asset_key.path[-1] for dep in spec.deps}
    assert {"document_catalog", "parsed_documents", "markdown_blocks", "vector_index"} <= upstream  # lineage

    doc = rag_env / "docs" / "rate-limits.md"
    before = os.stat(doc)
    with open(doc, "r+b") as f:  # the same inode, size and mtime: nothing a stat can tell
        f.write(b"x" * before.st_size)
    os.utime(doc, ns=(before.st_atime_ns, before.st_mtime_ns))
    made = _materialized(dg.materialize([synthetic_eval_set], instance=indexed, resources=RESOURCES), "synthetic_eval_set")
    assert (made["documents_found"], made["documents_indexed"], made["documents_regenerated"]) == (3, 3, 3)
    lines = [json.loads(line) for line in open(made["path"], encoding="utf-8")]
    expected = {(e["doc_path"], e.get("section")) for line in lines for e in line["expected"]}
    assert ("rate-limits.md", "Requests per minute") in expected  # from the records: the file holds only x's


def test_with_a_chat_model_configured_the_questions_are_llm_written(indexed, rag_env, monkeypatch):
    from rag_assets_tests.support.openai_server import OpenAIStubServer

    reply = json.dumps({"question": "Which limit applies to my organisation on the free plan?", "answer": "50"})
    with OpenAIStubServer(api_key="sk-gen", default_chat_reply=reply) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-gen")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_CHAT_MODEL", "question-writer")
        result = dg.materialize([synthetic_eval_set, retrieval_evaluation], instance=indexed, resources=RESOURCES)
        made, meta = _materialized(result, "synthetic_eval_set"), _materialized(result, "retrieval_evaluation")
        assert made["generator"] == "llm-v1:question-writer" and made["llm_calls"] == 3
        def question_requests():  # (the evaluation's ragas LLM metrics use the same endpoint)
            return [r for r in server.chat_requests if "You write test questions" in r.json["messages"][0]["content"]]
        assert len(question_requests()) == 3 and {r.json["model"] for r in question_requests()} == {"question-writer"}
        assert meta["synthetic/eval_set"]["generator"] == "llm-v1:question-writer"
        again = _materialized(dg.materialize([synthetic_eval_set], instance=indexed, resources=RESOURCES),
                              "synthetic_eval_set")
        assert again["llm_calls"] == 0 and len(question_requests()) == 3  # unchanged documents: not asked again
    monkeypatch.setenv("RAG_EVAL_SYNTHETIC_GENERATOR", "offline")  # the choice can be forced
    offline = _materialized(dg.materialize([synthetic_eval_set], instance=indexed, resources=RESOURCES),
                            "synthetic_eval_set")
    assert offline["generator"] == OFFLINE_GENERATOR


def test_retrieval_evaluation_alone_brings_the_synthetic_set_up_to_date(indexed, rag_env):
    result, meta, checks = _evaluate(indexed)
    assert result.success and checks == {}
    assert meta["synthetic/questions"] == 3 and (rag_env / "eval_results" / "synthetic" / "eval_set.jsonl").is_file()


def test_a_labelled_set_is_scored_instead_and_the_synthetic_set_is_not_built(indexed, rag_env, monkeypatch):
    write_eval(rag_env / "eval" / "small.jsonl", GOOD)
    result = dg.materialize([synthetic_eval_set, retrieval_evaluation], instance=indexed, resources=RESOURCES)
    made, meta = _materialized(result, "synthetic_eval_set"), _materialized(result, "retrieval_evaluation")
    assert made["skipped"].startswith("not needed: 1 labelled eval set")
    assert meta["eval_set_kind"] == "labelled" and not any(k.startswith("synthetic/") for k in meta)
    assert not (rag_env / "eval_results" / "synthetic").exists()
    monkeypatch.setenv("RAG_EVAL_SYNTHETIC", "always")  # both, side by side; the checks judge the labelled set
    result = dg.materialize([synthetic_eval_set, retrieval_evaluation], instance=indexed, resources=RESOURCES)
    meta = _materialized(result, "retrieval_evaluation")
    assert meta["eval_set_kind"] == "labelled+synthetic" and meta["questions"] == 3
    assert "hybrid/section.recall@5" in meta and "synthetic/hybrid/section.recall@5" in meta
    assert {e.check_name for e in result.get_asset_check_evaluations()} == {
        "retrieval_quality", "eval_labels_resolve", "hybrid_not_behind"}


def test_no_eval_set_with_synthetic_sets_off_is_skipped_with_the_reason_not_failed(indexed, rag_env, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_SYNTHETIC", "off")
    assert not list((rag_env / "eval").glob("*.jsonl"))
    result, meta, checks = _evaluate(indexed)
    assert result.success
    assert meta["skipped"].startswith("no eval set") and str(rag_env / "eval") in meta["skipped"]
    assert "RAG_EVAL_SYNTHETIC=off" in meta["skipped"]
    assert checks == {}  # nothing was checked: neither passed nor failed


@pytest.mark.system
def test_rag_evaluate_without_eval_set_and_synthetic_off_prints_one_line_and_exits_non_zero(rag_env, dagster_home):
    env = {**os.environ, "RAG_EVAL_SYNTHETIC": "off"}
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "evaluate"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("rag: no eval set")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_extra_corpus_is_indexed_on_its_own_and_scored_side_by_side(indexed, rag_env, monkeypatch):
    from rag_assets_tests.support.corpus import write_corpus

    write_eval(rag_env / "eval" / "small.jsonl", GOOD)
    corpus = rag_env / "second"
    write_corpus(corpus / "docs", {"pumps/seals.md": "# Pumps\n\n## Seal replacement\n\nReplace the pump seal "
                                   "every spring; a dripping pump means the seal is worn out.\n"})
    write_eval(corpus / "eval.jsonl", [{"id": "s1", "question": "When should I replace the pump seal?",
                                        "expected": [{"doc_path": "pumps/seals.md", "section": "Seal replacement"}]}])
    monkeypatch.setenv("RAG_EVAL_CORPORA", f"pumps={corpus}")
    result, meta, checks = _evaluate(indexed)
    assert result.success and checks["retrieval_quality"].passed
    for mode in ("vector", "keyword", "hybrid"):
        assert meta[f"pumps/{mode}/section.recall@5"] == 1.0  # the side corpus, scored per mode
        assert 0 <= meta[f"{mode}/section.recall@5"] <= 1  # next to the main index's numbers
    assert meta["pumps/questions"] == 1 and meta["pumps/chunks_in_index"] == 1
    assert meta["pumps/documents_reindexed"] == 1 and meta["chunks_in_index"] > 1  # main index untouched
    _, again, _ = _evaluate(indexed)
    assert again["pumps/documents_reindexed"] == 0  # unchanged files are not read again

    (corpus / "eval.jsonl").unlink()  # a corpus without a labelled set is scored on a synthetic one of its own
    (corpus / "docs" / "pumps" / "seals.md").write_text(
        "# Pumps\n\n## Seal replacement\n\nReplace the pump seal every spring; a dripping pump means the seal is "
        "worn out and the bearings behind it will rust within weeks, so order the spare seal kit in advance.\n")
    result, meta, _ = _evaluate(indexed)
    assert result.success and meta["pumps/synthetic/questions"] == 1
    assert "pumps/synthetic/hybrid/section.recall@5" in meta and "pumps/hybrid/section.recall@5" not in meta
    assert (rag_env / "eval_results" / "pumps" / "synthetic" / "eval_set.jsonl").is_file()

    monkeypatch.setenv("RAG_EVAL_CORPORA", "pumps")  # no folder: a configuration error, said so
    failed = dg.materialize([retrieval_evaluation], instance=indexed, resources=RESOURCES, raise_on_error=False)
    assert not failed.success
    assert "NAME=FOLDER" in str(next(e for e in failed.all_events if e.is_step_failure).step_failure_data.error.message)


def test_evaluation_sensor_waits_for_an_ingest_in_progress_however_long(indexed, rag_env, monkeypatch):
    """`rag ingest` holds its lock between its runs too: no run in flight, yet the index is half done."""
    from rag_assets.config import Settings
    from rag_assets.index.locks import ingest_lock_file
    from rag_assets.orchestration import sensors

    write_eval(rag_env / "eval" / "small.jsonl", GOOD)
    monkeypatch.setattr(sensors, "EVALUATION_MAX_DEFER_SECONDS", 0)
    lock = ingest_lock_file(Settings.from_env().state_dir)
    with lock:
        waiting = _sensor_tick(indexed)
    assert not waiting.run_requests and "ingest of this corpus is in progress" in waiting.skip_message
    assert len(_sensor_tick(indexed, waiting.cursor).run_requests) == 1  # released: scored


def test_a_runs_run_settings_choose_the_folder_and_collection_it_evaluates(rag_env, dagster_home):
    """A run launched with run_settings config (the launchpad; a run started in another process): the
    synthetic set asks about that folder's pages and the evaluation scores that collection, not the
    ones of the environment the definitions were loaded in."""
    other = write_corpus(rag_env / "launched", {"rate-limits.md": SAMPLE_DOCS["rate-limits.md"]})
    variables = {"RAG_DOCS_DIR": str(other), "RAG_COLLECTION": "launched_chunks"}
    config = {"resources": {"run_settings": {"config": {"variables": variables}}}}
    with dg.DagsterInstance.get() as instance:
        assert dg.materialize([document_catalog], instance=instance, resources=RESOURCES, run_config=config).success
        assert instance.get_dynamic_partitions(documents_partitions.name) == ["rate-limits.md"]
        assert dg.materialize(PER_DOCUMENT_ASSETS, instance=instance, resources=RESOURCES, run_config=config,
                              partition_key="rate-limits.md").success
        result = dg.materialize([synthetic_eval_set, retrieval_evaluation], instance=instance, resources=RESOURCES,
                                run_config=config)
    assert result.success
    made, meta = _materialized(result, "synthetic_eval_set"), _materialized(result, "retrieval_evaluation")
    assert (made["documents_found"], made["documents_indexed"]) == (1, 1)  # the environment's folder has 3
    lines = [json.loads(line) for line in open(made["path"], encoding="utf-8")]
    assert lines and {e["doc_path"] for line in lines for e in line["expected"]} == {"rate-limits.md"}
    settings = Settings.from_env()
    launched = settings.with_variables(variables)
    assert embedded_collection_id(settings.chroma_path, settings.collection) is None  # nothing in the environment's
    chunks = ChromaStore.for_settings(launched.paths, load_embedder(launched.embedding)).count()
    assert chunks > 0 and meta["chunks_in_index"] == chunks
    assert meta["synthetic/hybrid/section.recall@5"] >= 2 / 3
