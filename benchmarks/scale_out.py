"""`rag ingest --workers N` against real services on this machine: PostgreSQL state, a Chroma server,
an OpenAI-compatible embedding server with a fixed latency per request.

    python benchmarks/scale_out.py [--corpus data/docs] [--workers 1 4] [--latency 0.2]
        [--texts-per-request 100] [--requests-in-flight 4] [--out FILE]

For each worker count: a fresh state database and collection, one `rag ingest --json --workers N`
process, wall time; then the collections are compared (the same (doc_path, chunk text) pairs).
Everything lives in a scratch folder; needs Debian's postgresql and the dev extras (see README).
The embedding server is rag_assets_tests/support/openai_server.py (hash-based vectors, the latency asked).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from rag_assets_tests.support.chroma_server import ChromaServer, free_port  # noqa: E402
from rag_assets_tests.conftest import batching_sqlite_storage, instance_yaml  # noqa: E402
from rag_assets_tests.support.openai_server import OpenAIStubServer  # noqa: E402
from rag_assets_tests.support.postgres_server import createdb, postgres_server  # noqa: E402

sys.path.insert(0, str(HERE))
from ingest_overhead import machine  # noqa: E402

KEY = "sk-benchmark-0000"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "docs")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per embeddings request")
    parser.add_argument("--texts-per-request", type=int, default=100, help="RAG_OPENAI_BATCH_SIZE")
    parser.add_argument("--requests-in-flight", type=int, default=4, help="RAG_OPENAI_CONCURRENCY (per worker)")
    parser.add_argument("--documents-per-run", type=int, default=0, help="RAG_DOCUMENTS_PER_RUN (0: documents / workers)")
    parser.add_argument("--out", type=Path, default=HERE / "scale_out_results.md")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="rag-scale-out-"))
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    rows, sets = [], {}
    docs = sum(1 for _ in args.corpus.rglob("*.md"))
    port = free_port()
    chroma = ChromaServer(base / "chroma", port, base / "chroma.log").start()
    try:
        with postgres_server(databases=()) as pg, OpenAIStubServer(api_key=KEY, latency=args.latency) as openai:
            for n in args.workers:
                env = _env(base, pg, port, openai, n, args, docs)
                started, started_at = time.perf_counter(), time.time()
                proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json", "--workers", str(n)],
                                      env=env, cwd=ROOT, capture_output=True, text=True)
                wall = time.perf_counter() - started
                if proc.returncode != 0:
                    raise SystemExit(f"--workers {n} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
                summary = json.loads(proc.stdout)
                sets[n] = _indexed(port, f"chunks_w{n}")
                spans = _run_spans(env["DAGSTER_HOME"], summary["run_ids"], started_at)
                rows.append((n, wall, summary, len(openai.embedding_requests), spans))
    finally:
        chroma.stop()
        shutil.rmtree(base, ignore_errors=True)

    first = rows[0][1]
    same = all(s == sets[args.workers[0]] for s in sets.values())
    lines = [
        f"## Scale-out ingest, {docs} documents of {args.corpus.name} ({dt.date.today()})", "",
        f"Machine: {machine()}. PostgreSQL state, Chroma server, embedding server with {args.latency} s per request, "
        f"{args.texts_per_request} texts per request, {args.requests_in_flight} requests in flight per worker.", "",
        "| workers | wall | speed-up | runs (start → end, seconds after the command started) | documents processed | embeddings computed | requests so far |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, wall, s, requests, spans in rows:
        lines.append(f"| {n} | {wall:.1f} s | {first / wall:.2f}× | {spans} | {s['documents_processed']} | "
                     f"{s['embeddings_computed']} | {requests} |")
    lines += ["", f"Same (doc_path, chunk text) pairs in every collection: {'yes' if same else 'NO'} "
                  f"({len(sets[args.workers[0]]):,} chunks).", ""]
    report = "\n".join(lines)
    print(report)
    with open(args.out, "a", encoding="utf-8") as fh:
        fh.write(report + "\n")
    return 0 if same else 1


def _env(base: Path, pg: str, port: int, openai, n: int, args, docs: int) -> dict[str, str]:
    home = base / f"home-{n}"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home, batching_sqlite_storage(home)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(
        DAGSTER_HOME=str(home), RAG_DOCS_DIR=str(args.corpus.resolve()), RAG_STATE_DIR=str(base / f"state-{n}"),
        RAG_STATE_URL=createdb(pg, f"rag_w{n}"), RAG_CACHE_DIR=str(base / "cache"), RAG_LOG_LEVEL="CRITICAL",
        CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(port), RAG_COLLECTION=f"chunks_w{n}",
        RAG_EMBEDDER="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=openai.base_url,
        RAG_OPENAI_BATCH_SIZE=str(args.texts_per_request), RAG_OPENAI_CONCURRENCY=str(args.requests_in_flight),
        RAG_DOCUMENTS_PER_RUN=str(args.documents_per_run or max(1, -(-docs // n))),
        DAGSTER_DISABLE_TELEMETRY="1", ANONYMIZED_TELEMETRY="False", ORT_DISABLE_TELEMETRY="1",
    )
    return env


def _run_spans(dagster_home: str, run_ids: list[str], started_at: float) -> str:
    import dagster as dg

    with dg.DagsterInstance.from_config(dagster_home) as instance:
        spans = []
        for run_id in run_ids:
            stats = instance.get_run_stats(run_id)
            if stats.start_time and stats.end_time:
                spans.append(f"{stats.start_time - started_at:.0f}→{stats.end_time - started_at:.0f}")
    return ", ".join(spans)


def _indexed(port: int, collection: str) -> set[tuple[str, str]]:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=ChromaSettings(anonymized_telemetry=False))
    got = client.get_collection(collection).get(include=["documents", "metadatas"])
    return {(meta["doc_path"], text) for text, meta in zip(got["documents"], got["metadatas"])}


if __name__ == "__main__":
    sys.exit(main())
