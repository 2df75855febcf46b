"""Two `rag ingest` processes started at once on overlapping corpora end with a consistent index.

Chroma's embedded store is corrupted by two writing processes (upstream chroma #7040), and a fresh
Dagster SQLite instance initialised by two processes at once is left with two alembic heads. Each
round below starts two real CLI processes at the same moment against one RAG_CHROMA_PATH,
RAG_STATE_DIR and DAGSTER_HOME, then checks, from a fresh process (a long-lived Chroma client in
this one could read a stale view), that:

- both exited 0 with a JSON summary and no traceback;
- no embedding was computed twice (the embedding cache grew by exactly the sum of both reports);
- the catalog lists exactly the files on disk and every document is indexed at its current version;
- Chroma holds exactly the chunk ids the stage records list (invariants.index_matches_records),
  no duplicate ids, and no vectors for deleted or renamed-away files;

and that a third `rag ingest --json` computes nothing. `rag query` then answers from the index.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT = 120  # seconds; the whole test takes ~60 s on 2 idle cores


def _doc(i: int, extra: str = "") -> str:
    return (
        f"---\ntitle: Widget manual {i}\ndoc_type: guide\n---\n\n# Widget manual {i}\n\n"
        f"## Installing widget {i}\n\n"
        + " ".join(f"Widget model W{i}-{k} mounts on rail {k} with {i + k} screws and a torque of {k * 3} Nm." for k in range(12))
        + f"\n\n## Maintaining widget {i}\n\n"
        + " ".join(f"Clean filter F{i}-{k} every {k + 2} weeks; replace gasket G{k} when it hardens." for k in range(12))
        + (f"\n\n{extra}\n" if extra else "\n")
    )


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rag_assets", *args],
        cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _race(*commands: tuple[str, ...]) -> list[dict]:
    """Start every command at once; each must exit 0 with a JSON summary and no traceback."""
    procs = [_start(*cmd) for cmd in commands]
    reports = []
    for cmd, proc in zip(commands, procs):
        out, err = proc.communicate(timeout=PROCESS_TIMEOUT)
        assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\n{out}\n{err}"
        assert "Traceback" not in err, f"{cmd}:\n{err}"
        report = json.loads(out)
        assert report["errors"] == [] and report["documents_failed"] == 0, report
        reports.append(report)
    return reports


def _cache_count() -> int:
    from rag_assets.config import Settings
    from rag_assets.index.embedding_cache import EmbeddingCache

    return EmbeddingCache.for_settings(Settings.from_env().paths).count()


# Runs in a fresh process: python -c "from rag_assets_tests.system.test_concurrency import check_index; check_index()"
def check_index() -> None:
    from rag_assets.config import Settings
    from rag_assets.ingest.discovery import discover
    from rag_assets.embedding import load_embedder
    from rag_assets.index.invariants import documents_indexed, index_matches_records
    from rag_assets.index.stage_store import CHUNKS, INDEXED, StageStore
    from rag_assets.index.chroma_store import ChromaStore

    s = Settings.from_env()
    embedder = load_embedder(s.embedding)
    store = ChromaStore(path=s.chroma_path, collection=s.collection, embedding_model=embedder.model_name,
                        dimension=embedder.dimension)
    stages = StageStore(s.state_dir)
    catalog = stages.read_catalog()
    on_disk = discover(s.docs_dir)
    rows = list(store.iter_all())
    ids = [cid for cid, _, _ in rows]
    by_doc: dict[str, set[str]] = {}
    for cid, _, meta in rows:
        by_doc.setdefault(meta["doc_path"], set()).add(cid)
    per_doc_ok = all(
        by_doc.get(ref.doc_path, set()) == set(stages.read(INDEXED, ref.doc_path)["payload"]["chunk_ids"])
        == {c["chunk_id"] for c in stages.read(CHUNKS, ref.doc_path)["payload"]}
        for ref in catalog.documents
    )
    indexed = documents_indexed(stages, catalog.documents, catalog.errors)
    matches = index_matches_records(stages, catalog.documents, store, whole_store=True)
    print(json.dumps({
        "catalog_matches_disk": [(d.doc_path, d.content_hash) for d in catalog.documents]
        == [(d.doc_path, d.content_hash) for d in on_disk.documents],
        "documents_indexed": [indexed.passed, indexed.problems],
        "index_matches_records": [matches.passed, matches.problems, matches.counts],
        "per_document_ids_match": per_doc_ok,
        "ids": len(ids), "distinct_ids": len(set(ids)), "count": store.count(),
        "doc_paths": sorted(by_doc),
    }))


def _check_and_reingest(expected_docs: set[str], embedded_before: int, reports: list[dict]) -> dict:
    """The index is consistent (checked from a fresh process), nothing was embedded twice, and a
    third `rag ingest --json`, started alongside the check (both only read the store), has nothing left to do."""
    checker = subprocess.Popen(
        [sys.executable, "-c", "from rag_assets_tests.system.test_concurrency import check_index; check_index()"],
        cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    third = _race(("ingest", "--json"))[0]
    out, err = checker.communicate(timeout=PROCESS_TIMEOUT)
    assert checker.returncode == 0, err
    found = json.loads(out.strip().splitlines()[-1])
    assert found["catalog_matches_disk"], found
    assert found["documents_indexed"][0], found
    assert found["index_matches_records"][0], found
    assert found["per_document_ids_match"], found
    assert found["ids"] == found["distinct_ids"] == found["count"] > 0, found
    assert set(found["doc_paths"]) == expected_docs, found

    assert sum(r["embeddings_computed"] for r in reports) == _cache_count() - embedded_before, reports
    n_docs = len(expected_docs)
    assert third["embeddings_computed"] == 0 and third["documents_processed"] == 0, third
    assert third["documents_unchanged"] == n_docs and third["vectors_deleted"] == 0, third
    return found


@pytest.fixture
def env(rag_env, dagster_home, monkeypatch):
    monkeypatch.setenv("RAG_LOG_LEVEL", "ERROR")
    docs = rag_env / "docs"
    for i in range(8):
        (docs / "widgets" / f"w{i}.md").parent.mkdir(parents=True, exist_ok=True)
        (docs / "widgets" / f"w{i}.md").write_text(_doc(i), encoding="utf-8")
    return rag_env


def disk_docs(docs: Path) -> set[str]:
    return {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}


def test_concurrent_ingests_leave_a_consistent_index(env):
    docs = env / "docs"

    # round 1: fresh state, fresh Dagster home: both ingest everything
    before = _cache_count()
    reports = _race(("ingest", "--json"), ("ingest", "--json"))
    assert sum(r["documents_processed"] for r in reports) == len(disk_docs(docs)), reports  # each document once
    _check_and_reingest(disk_docs(docs), before, reports)

    # round 2: edits, an added file and a deleted one; a full ingest races an ingest-doc of an edited page
    (docs / "widgets" / "w1.md").write_text(_doc(1, "Widget 1 now ships with a spare hinge kit."), encoding="utf-8")
    (docs / "widgets" / "w2.md").write_text(_doc(2, "Widget 2 firmware 4.1 adds a quiet mode."), encoding="utf-8")
    (docs / "widgets" / "w8.md").write_text(_doc(8), encoding="utf-8")
    (docs / "widgets" / "w0.md").unlink()
    before = _cache_count()
    reports = _race(("ingest", "--json"), ("ingest-doc", "widgets/w2.md", "--json"))
    found = _check_and_reingest(disk_docs(docs), before, reports)
    assert "widgets/w0.md" not in found["doc_paths"]

    # round 3: a rename and more edits; an ingest-doc races a full ingest
    os.rename(docs / "widgets" / "w3.md", docs / "widgets" / "w3-renamed.md")
    (docs / "rate-limits.md").write_text((docs / "rate-limits.md").read_text() + "\nEnterprise tiers negotiate limits.\n")
    (docs / "widgets" / "w4.md").write_text(_doc(4, "Widget 4 is discontinued in 2031."), encoding="utf-8")
    before = _cache_count()
    reports = _race(("ingest-doc", "widgets/w4.md", "--json"), ("ingest", "--json"))
    found = _check_and_reingest(disk_docs(docs), before, reports)
    assert "widgets/w3.md" not in found["doc_paths"] and "widgets/w3-renamed.md" in found["doc_paths"]

    # the index answers queries
    proc = subprocess.run(
        [sys.executable, "-m", "rag_assets", "query", "quiet mode firmware for widget 2", "--json", "--mode", "vector"],
        cwd=ROOT, env=os.environ.copy(), capture_output=True, text=True, timeout=PROCESS_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["doc_path"] == "widgets/w2.md"


# documents from code into the default corpus, timed by the process itself
FROM_CODE = """
import json, time
from rag_assets import RAGPipeline
started = time.time()
result = RAGPipeline.from_settings().ingest(
    [{"id": f"notes/n{i}", "content": f"# Note {i}\\n\\nNote {i} says the gearbox G{i} needs {i + 2} litres of oil "
      f"every {i + 5} thousand kilometres, and a new seal after the third change.\\n"} for i in range(4)])
print(json.dumps({"processed": result.documents_processed, "failed": result.documents_failed, "errors": result.errors,
                  "started": started, "ended": time.time()}))
"""


def test_two_corpora_and_an_ingest_from_code_into_a_third_never_wait_for_each_other(rag_env, dagster_home, monkeypatch):
    """Issue 34 item 4: `rag ingest` of two corpora at the same time, and RAGPipeline.ingest() into a
    third (the default corpus) beside them: each corpus has a store of its own, so none waits for
    another's writer. Every ingest was serialised on one writer lock before (the Starlight site
    waited 11 minutes for the Mintlify one); here the Dagster runs of all three overlap in time."""
    monkeypatch.setenv("RAG_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("RAG_DOCUMENTS_PER_RUN", "2")
    for name in ("alpha", "beta"):
        for i in range(6):
            path = rag_env / name / f"w{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_doc(i, f"This manual belongs to the {name} shelf."), encoding="utf-8")
    procs = {name: _start("ingest", "--docs-dir", str(rag_env / name), "--name", name, "--json")
             for name in ("alpha", "beta")}
    procs["default"] = subprocess.Popen([sys.executable, "-c", FROM_CODE], cwd=ROOT, env=os.environ.copy(),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reports = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{name} exited {proc.returncode}\n{out}\n{err}"
        assert "Traceback" not in err and "waiting for it to finish" not in err, f"{name}:\n{err}"
        reports[name] = json.loads(out if name != "default" else out.strip().splitlines()[-1])
    assert reports["alpha"]["documents_processed"] == reports["beta"]["documents_processed"] == 6, reports
    assert reports["alpha"]["lock_wait_seconds"] == reports["beta"]["lock_wait_seconds"] == 0
    assert reports["default"]["processed"] == 4 and reports["default"]["failed"] == 0, reports["default"]

    # the timestamps of every Dagster run, by corpus: each corpus's runs overlap the other two's
    from rag_assets.orchestration.instance import get_instance
    from rag_assets.orchestration.sensors import CORPUS_TAG

    with get_instance() as instance:
        records = instance.get_run_records()
    spans: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        assert record.dagster_run.status.value == "SUCCESS", record.dagster_run
        spans.setdefault(record.dagster_run.tags[CORPUS_TAG], []).append((record.start_time, record.end_time))
    assert set(spans) == {"alpha", "beta", "default"}
    window = {name: (min(s for s, _ in runs), max(e for _, e in runs)) for name, runs in spans.items()}
    for a in window:
        for b in window:
            if a < b:
                assert window[a][0] < window[b][1] and window[b][0] < window[a][1], (a, b, window)
    # and not merely one after the other: alpha and beta each started a run while the other's was going
    assert any(s1 < e2 and s2 < e1 for s1, e1 in spans["alpha"] for s2, e2 in spans["beta"]), spans
