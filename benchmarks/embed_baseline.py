"""Full ingest vs. the raw embedding time of what it embeds (run by hand).

    .venv/bin/python benchmarks/embed_baseline.py [DOCS_DIR]

Ingests DOCS_DIR (default data/docs) into a scratch state with `rag ingest --json` (peak RSS of the
process sampled with psutil), then embeds the same distinct chunk texts again with the same model
alone (length-sorted batches, as the ingest does), and prints both with chunks/s and the ratio.
Never touches the repository's data/ state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def peak_rss(proc: subprocess.Popen, out: dict) -> None:
    ps, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            rss = ps.memory_info().rss + sum(c.memory_info().rss for c in ps.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.1)
    out["peak"] = peak


def main() -> None:
    docs = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "data" / "docs").resolve()
    scratch = Path(tempfile.mkdtemp(prefix="rag-embed-baseline-"))
    (scratch / "home").mkdir()
    (scratch / "home" / "dagster.yaml").write_text(
        (ROOT / "dagster.yaml").read_text().replace("data/dagster", str(scratch / "dagster"))
    )
    env = dict(os.environ, RAG_DOCS_DIR=str(docs), RAG_CHROMA_PATH=str(scratch / "chroma"),
               RAG_STATE_DIR=str(scratch / "state"), RAG_CACHE_DIR=str(scratch / "cache"),
               DAGSTER_HOME=str(scratch / "home"))
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rag_assets", "ingest", "--json"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    mem: dict = {}
    sampler = threading.Thread(target=peak_rss, args=(proc, mem))
    sampler.start()
    stdout, _ = proc.communicate()
    sampler.join()
    wall = time.perf_counter() - started
    report = json.loads(stdout)

    # the distinct texts the ingest embedded, from its chunk records
    texts: dict[str, str] = {}
    for record in (scratch / "state" / "stages" / "chunks").rglob("*.json"):
        for chunk in json.loads(record.read_text())["payload"]:
            texts.setdefault(chunk["content_hash"], chunk["index_text"] or chunk["text"])
    from rag_assets.embedding.local import MiniLMOnnxEmbedder

    embedder = MiniLMOnnxEmbedder()
    embedder.embed_documents(["warm up"])
    t0 = time.perf_counter()
    embedder.embed_documents(list(texts.values()))
    raw = time.perf_counter() - t0

    rows = [
        ("documents", report["documents_discovered"]),
        ("chunks written", report["chunks_written"]),
        ("distinct texts embedded", report["embeddings_computed"]),
        ("ingest wall time (s, incl. process start)", round(wall, 1)),
        ("ingest chunks/s", round(report["chunks_written"] / wall, 1)),
        ("peak RSS of the ingest (MB)", round(mem.get("peak", 0) / 2**20)),
        ("raw embedding of the same texts (s)", round(raw, 1)),
        ("ingest in-process (s, the CLI's duration_seconds)", round(report["duration_seconds"], 1)),
        ("ingest / raw embedding (wall)", round(wall / raw, 2)),
        ("ingest / raw embedding (in-process)", round(report["duration_seconds"] / raw, 2)),
        ("documents failed", report["documents_failed"]),
    ]
    print(f"corpus: {docs}")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    for err in report["errors"][:10]:
        print(f"error: {err['doc_path']}: {err['error']}")


if __name__ == "__main__":
    main()
