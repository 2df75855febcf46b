"""A run worker for WarmRunLauncher: warm up first, then execute the one run it is handed.

The launcher writes two lines to its stdin: the instance's ref as the worker starts, and later the
run, {"run_id", "nice"}. Warm-up imports Dagster and the code location (rag_assets.orchestration.
definitions, which imports chromadb, onnxruntime, tiktoken), opens the instance, loads the
embedding model and takes one small page the whole road in a scratch folder (read, language,
chunks, one embedding, a store and a snapshot commit): so the run's first step starts at once and its
first document finds the language model, the token encoding, the model's inference session and
Chroma's modules loaded. Measured under `dagster dev` on the bundled corpus, those loads were 1-3 s of
each run's steps before (benchmarks/freshness.md). End of input before a run (the launching process
went away) means exit quietly.

If any of the package's source files changed after the warm-up (someone edited the code while the
spare waited), the run is executed by a fresh `dagster api execute_run` process instead, so a run
never executes code older than its launch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path

from rag_assets.process_start import imports_without_gc

PACKAGE = Path(__file__).resolve().parents[1]
# long enough for its language to be detected (rag_assets.ingest.text_language.MIN_LETTERS), as a real page's is
_WARM_PAGE = ("# Warming up\n\nA run worker reads this page once, before any run is handed to it, so that the first "
              "page of its run finds everything it needs already loaded: the language model that tells which "
              "language a page is written in, the token encoding that sizes the chunks, the embedding model's "
              "inference session, and the vector store's modules.\n\n## Steps\n\nThe page is read, its "
              "language detected, its text split into blocks and chunks, each chunk embedded, stored, and the "
              "search snapshot committed, all in a scratch folder that is deleted afterwards.\n")


def _source_mtimes() -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in PACKAGE.rglob("*.py")}


def _lower_priority() -> bool:
    """Warm up at nice 10, only where the priority can be restored afterwards (root)."""
    if os.geteuid() != 0:
        return False
    os.nice(10)
    return True


def _set_priority(nice: int) -> None:
    # niceness is per thread on Linux: the warm-up started thread pools (onnxruntime, grpc), and
    # threads started later inherit the caller's
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except (ProcessLookupError, PermissionError):
            pass


def warm_up() -> None:
    from rag_assets.orchestration.definitions import DEFAULT, RESOURCES, defs

    defs.resolve_all_job_defs()
    settings = DEFAULT.corpus.settings()
    prime_road(settings, RESOURCES["embedder"].get(settings))


def prime_road(settings, embedder) -> None:
    """One small page taken the whole road in a scratch folder (its own store and state; the token
    encodings of settings' cache): everything a run's first document would load on its way is
    loaded here. Not with an embedding API (a warm-up calls no service); a failure here is the run's
    to meet, not the warm-up's."""
    from rag_assets.config import LOCAL_EMBEDDER

    if settings.embedder != LOCAL_EMBEDDER:
        return
    try:
        from rag_assets.index.chroma_store import ChromaStore
        from rag_assets.ingest.folder_index import index_folder
        from rag_assets.retrieval.snapshot_writer import SnapshotWriter

        with tempfile.TemporaryDirectory(prefix="rag-warm-up-") as tmp:
            docs = Path(tmp) / "docs"
            docs.mkdir()
            (docs / "warm-up.md").write_text(_WARM_PAGE, encoding="utf-8")
            scratch = dataclasses.replace(settings, docs_dir=docs, chroma_path=Path(tmp) / "chroma",
                                          state_dir=Path(tmp) / "state", state_url=None, chroma_host=None,
                                          corpora_dir=Path(tmp) / "corpora")
            writer = SnapshotWriter(scratch, ChromaStore.for_settings(scratch.paths, embedder))
            index_folder(docs, scratch, embedder, snapshot=writer)
    except Exception as exc:  # noqa: BLE001 - a cold run is slower, not wrong
        print(f"rag warm worker: warm-up road failed ({type(exc).__name__}: {exc}); runs start colder",
              file=sys.stderr, flush=True)


def execute_cold(run_id: str, instance_ref_json: str) -> int:
    """What the default launcher's code server would run: a fresh `dagster api execute_run`."""
    from rag_assets.orchestration.internals.run_execution import execute_run_cold

    return execute_run_cold(run_id, instance_ref_json)


def main() -> int:
    from rag_assets.orchestration.internals.run_execution import execute_run_on, open_instance

    niced = _lower_priority()
    first = sys.stdin.readline()
    if not first.strip():
        return 0
    instance_ref = json.loads(first)["instance_ref"]
    # what the warm-up builds lives as long as the process: out of the cycle collector's reach, so
    # the run's collections do not walk it again
    with imports_without_gc():
        warm_up()
        instance = open_instance(instance_ref)
    warmed_at = _source_mtimes()
    with instance:
        line = sys.stdin.readline()
        if not line.strip():
            return 0
        order = json.loads(line)
        nice = int(order.get("nice", 0))
        if niced or nice:
            _set_priority(nice)
        if _source_mtimes() != warmed_at:
            return execute_cold(order["run_id"], instance_ref)
        return execute_run_on(order["run_id"], instance)


if __name__ == "__main__":
    sys.exit(main())
