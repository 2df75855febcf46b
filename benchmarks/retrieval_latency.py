"""In-process query latency of each retrieval mode at ~1k, 10k and 100k chunks, and the search snapshot's memory.

Large collections are made WITHOUT re-embedding (embedding 100k chunks takes ~1.5 h on 2 cores):
a real index of the bundled sample corpus (data/docs, ~1.45k chunks) is built once with
rag_assets_tests/index_builder.build_index, then replicated into a new Chroma collection per size:

- copy 0 is the original chunk; copy c > 0 gets id ``<id>~c``, doc_path ``copy-c/<doc_path>``, its
  text plus one token unique to the copy (``zqcopy<c>``), and the original vector plus gaussian noise
  (sigma = --noise per dimension, default 0.01 -> cosine ~0.98 with the original), renormalised;
- the 1k collection is the first 1,000 original chunks (no copies);
- the size's search snapshot is then built from that collection by the project's own code
  (SnapshotWriter.rebuild: what a reader does, once, over an index an earlier version wrote), timed.

Queries go through the project's own ``Retriever`` (default settings: hybrid = z-scored convex fusion,
heading second stage on the top 30, diversity; candidate depth max(50, 5*top_k); each result's context,
RAG_CONTEXT_TOKENS, unless --context-tokens says otherwise), top_k = 5, over the 100 questions of data/eval/claude-docs.jsonl (--passes
times each, default 2 -> 200 samples per mode), with the per-process query-embedding cache emptied
before every query, so every measured query embeds its text (asserted from the cache's miss count).
Reported: p50 / p95 / max after a warm-up, plus the same for the parts of a hybrid query (query
embedding, the exact dense list of 50 over the stored vectors, Chroma's HNSW query of 50 for comparison
(what a query asked before the snapshot held everything), BM25, the contexts of its 5 results) to show
where the time goes, and the process's peak RSS.

The snapshot's memory is measured in a fresh subprocess per size: RSS before and after a reader opens
the live view (the segments' arrays are memory-mapped: counted only as pages are touched), after its
first hybrid query (the exact dense search reads every stored vector) and the process's peak, and the
snapshot's size on disk.

    python benchmarks/retrieval_latency.py [--workdir /tmp/rag-latency] [--sizes 1000,10000,100000]
        [--queries N] [--json]

Nothing is written to the repository; the workdir holds the scratch collections and can be deleted.
CPU is shared on the dev machines: the 1-minute load average is printed next to every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

TOP_K = 5
WRITE_BATCH = 4000


def _settings(workdir: Path, name: str, **extra):
    from rag_assets.config import Settings

    return Settings.from_env(
        {},
        docs_dir=ROOT / "data" / "docs",
        chroma_path=workdir / "chroma",
        state_dir=workdir / "state" / name,
        cache_dir=workdir / "cache",
        collection=name,
        **extra,
    )


def _store(settings, embedder):
    from rag_assets.index.chroma_store import ChromaStore

    return ChromaStore(
        path=settings.chroma_path,
        collection=settings.collection,
        embedding_model=embedder.model_name,
        dimension=embedder.dimension,
    )


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def load1() -> float:
    return os.getloadavg()[0]


def dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


# ----------------------------------------------------------------------------------------------
def ensure_source(workdir: Path, embedder, source_chroma: str | None = None) -> list[tuple]:
    """The sample corpus's real chunks (id, text, metadata, embedding), indexing data/docs once.

    ``source_chroma``: reuse an existing index of data/docs (its default collection) instead."""
    from rag_assets_tests.support.index_builder import build_index

    settings = _settings(workdir, "source")
    if source_chroma:
        from rag_assets.config import Settings

        store = _store(Settings.from_env({}, chroma_path=Path(source_chroma)), embedder)
        if store.count():
            return sorted(store.iter_all(include_embeddings=True),
                          key=lambda r: (r[2].get("doc_path", ""), r[2].get("chunk_index", 0)))
    store = _store(settings, embedder)
    if store.count() == 0:
        start = time.perf_counter()
        stats = build_index(settings.docs_dir, settings, embedder=embedder)
        print(f"source index built: {stats} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    rows = list(store.iter_all(include_embeddings=True))
    rows.sort(key=lambda r: (r[2].get("doc_path", ""), r[2].get("chunk_index", 0)))
    return rows


def ensure_scaled(workdir: Path, embedder, source: list[tuple], size: int, noise: float, seed: int = 7) -> dict:
    """A collection ``scale_<size>`` of exactly ``size`` chunks made from the source chunks, and its
    search snapshot."""
    import numpy as np

    from rag_assets.index.generation import bump_generation
    from rag_assets.retrieval.snapshot_builds import snapshot_follows
    from rag_assets.retrieval.snapshot_writer import SnapshotWriter

    name = f"scale_{size}"
    settings = _settings(workdir, name)
    store = _store(settings, embedder)
    if store.count() == size and snapshot_follows(settings):
        return {"collection": name, "chunks": size, "created_seconds": None, "snapshot_seconds": None}
    if store.count():
        store._client.delete_collection(name)  # a half-written earlier run
        store = _store(settings, embedder)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    ids, docs, metas, vecs = [], [], [], []

    def flush():
        if ids:
            store._collection.add(ids=list(ids), documents=list(docs), metadatas=list(metas),
                                  embeddings=np.vstack(vecs).astype(np.float32))
            ids.clear(), docs.clear(), metas.clear(), vecs.clear()

    made, copy = 0, 0
    if store.count() == size:
        made = size  # the collection is there; its snapshot is not
    while made < size:
        for cid, text, meta, emb in source:
            if made == size:
                break
            vec = np.asarray(emb, dtype=np.float32)
            meta = dict(meta)
            if copy:
                vec = vec + rng.normal(0.0, noise, vec.shape).astype(np.float32)
                vec /= np.linalg.norm(vec)
                cid = f"{cid}~{copy}"
                text = f"{text} zqcopy{copy}"
                meta["doc_path"] = f"copy-{copy}/{meta.get('doc_path', '')}"
            ids.append(cid), docs.append(text), metas.append(meta), vecs.append(vec)
            made += 1
            if len(ids) >= WRITE_BATCH:
                flush()
        copy += 1
    flush()
    bump_generation(settings.state_dir)
    created = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    SnapshotWriter(settings, store).rebuild("a collection the benchmark made by copying")
    return {"collection": name, "chunks": store.count(), "created_seconds": created,
            "snapshot_seconds": round(time.perf_counter() - start, 1)}


# ----------------------------------------------------------------------------------------------
_MEMORY_CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
from retrieval_latency import _settings, rss_mb
from pathlib import Path
import numpy  # imported before the baseline so the delta is the snapshot, not the libraries
from rag_assets.embedding import load_embedder
from rag_assets.retrieval.retriever import Retriever
settings = _settings(Path({workdir!r}), {name!r})
retriever = Retriever(load_embedder(settings.embedding), None, settings)
retriever.embed_query("warm the model up")
before = rss_mb()
start = time.perf_counter()
view = retriever.view()
seconds = time.perf_counter() - start
after = rss_mb()
start = time.perf_counter()
retriever.search("how do I stream responses with server-sent events", "hybrid", 5)
first = time.perf_counter() - start
print(json.dumps({{"rebuilds": retriever.snapshot.rebuilds, "seconds": round(seconds, 3),
                  "first_query_seconds": round(first, 3),
                  "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
                  "rss_delta_mb": round(after - before, 1), "rss_after_search_mb": round(rss_mb(), 1),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "segments": [s["rows"] for s in view.manifest["segments"]]}}))
"""


def keyword_memory(workdir: Path, name: str) -> dict:
    """Open the snapshot in a fresh process (nothing is built there), then one hybrid query; RSS and disk."""
    code = _MEMORY_CHILD.format(root=str(ROOT), here=str(HERE), workdir=str(workdir), name=name)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    load = json.loads(out.stdout.strip().splitlines()[-1])
    assert load["rebuilds"] == 0, "the snapshot was not there"
    folder = workdir / "state" / name / "keyword" / name
    return {
        "segments": load["segments"],
        "load_seconds": load["seconds"],
        "first_query_seconds": load["first_query_seconds"],
        "load_rss_delta_mb": load["rss_delta_mb"],
        "rss_delta_after_first_search_mb": round(load["rss_after_search_mb"] - load["rss_before_mb"], 1),
        "peak_rss_mb": load["peak_rss_mb"],
        "disk_vectors_mb": round(sum(p.stat().st_size for p in folder.glob("seg-*/vectors.npy")) / 2**20, 1),
        "disk_postings_mb": round(sum(p.stat().st_size for p in folder.glob("seg-*/post_*.npy")) / 2**20, 1),
        "disk_total_mb": round(dir_mb(folder), 1),
    }


# ----------------------------------------------------------------------------------------------
def _pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p * (len(v) - 1)))))]


def summary(ms: list[float]) -> dict:
    return {"p50": round(_pct(ms, 0.5), 1), "p95": round(_pct(ms, 0.95), 1), "max": round(max(ms), 1), "n": len(ms)}


def measure(workdir: Path, embedder, name: str, questions: list[str], warmup: int = 5, passes: int = 1,
            context_tokens: int | None = None) -> dict:
    """p50/p95 per mode through the project's Retriever, every query embedded afresh.

    The modes and the parts are interleaved question by question (order rotated), so a burst of
    load from other processes hits every mode alike instead of whichever mode ran at that moment."""
    from rag_assets.retrieval.retriever import Retriever

    settings = _settings(workdir, name, **({} if context_tokens is None else {"context_tokens": context_tokens}))
    store = _store(settings, embedder)
    retriever = Retriever(embedder, store, settings)
    view = retriever.view()
    modes = ("vector", "keyword", "hybrid")
    depth = max(50, 5 * TOP_K)
    for q in questions[:warmup]:  # warm the snapshot's pages and Chroma's HNSW segment, not timed
        for mode in modes:
            retriever._embeddings.clear()
            retriever.search(q + " warm-up", mode, TOP_K)
        store._collection.query(query_embeddings=[embedder.embed_query(q)], n_results=depth, include=["distances"])
    out = {"load1_before": round(load1(), 2)}
    ms: dict[str, list[float]] = {m: [] for m in modes}
    part_names = ("embed", "exact_dense_k50", "chroma_hnsw_k50", "bm25_search_k50", "context_top5")
    parts: dict[str, list[float]] = {k: [] for k in part_names}
    misses = retriever._embeddings.misses
    for i, q in enumerate(questions * passes):
        for mode in modes[i % 3:] + modes[: i % 3]:
            retriever._embeddings.clear()  # the query-embedding cache is OFF: every query embeds
            start = time.perf_counter()
            retriever.search(q, mode, TOP_K)
            ms[mode].append(1000 * (time.perf_counter() - start))
        # where the time goes: the parts of a hybrid query, on the same question
        t0 = time.perf_counter()
        vec = embedder.embed_query(q)
        t1 = time.perf_counter()
        view.nearest(vec, depth)  # the dense list: exact cosine over every stored vector
        t2 = time.perf_counter()
        store._collection.query(query_embeddings=[vec], n_results=depth, include=["distances"])  # before: Chroma's HNSW
        t3 = time.perf_counter()
        view.search(q, depth)
        t4 = time.perf_counter()
        # each result's context (RAG_CONTEXT_TOKENS, or 400 when it is 0 for this run): hybrid's top 5
        results = retriever.search(q, "hybrid", TOP_K, context_tokens=0)
        t5 = time.perf_counter()
        retriever.add_context(results, settings.context_tokens or 400)
        t6 = time.perf_counter()
        for key, a, b in (("embed", t0, t1), ("exact_dense_k50", t1, t2), ("chroma_hnsw_k50", t2, t3),
                          ("bm25_search_k50", t3, t4), ("context_top5", t5, t6)):
            parts[key].append(1000 * (b - a))
    assert retriever._embeddings.misses - misses == passes * len(questions) * len(modes), "a query embedding was cached"
    for mode in modes:
        out[mode] = summary(ms[mode])
    out["parts"] = {k: summary(v) for k, v in parts.items()}
    out["load1_after"] = round(load1(), 2)
    import resource

    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) / 2**20
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gb": round(mem, 1), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M %Z")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/rag-latency")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=100, help="distinct questions per mode (max 100)")
    parser.add_argument("--passes", type=int, default=2,
                        help="times each question is asked per mode (embedded afresh each time)")
    parser.add_argument("--noise", type=float, default=0.01)
    parser.add_argument("--source-chroma", default=None, help="an existing index of data/docs to copy from")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--context-tokens", type=int, default=None,
                        help="each result's context budget (default: RAG_CONTEXT_TOKENS' default; 0 = no context)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from rag_assets.embedding import load_embedder

    from rag_assets.evaluation import load_eval_set

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder(_settings(workdir, "source").embedding)
    questions = [q.question for q in load_eval_set(ROOT / "data" / "eval" / "claude-docs.jsonl").questions][: args.queries]
    source = ensure_source(workdir, embedder, args.source_chroma)
    results = {"machine": machine(), "source_chunks": len(source), "sizes": {}}
    for size in [int(s) for s in args.sizes.split(",")]:
        made = ensure_scaled(workdir, embedder, source, size, args.noise)
        name = made["collection"]
        entry = {"made": made}
        if not args.skip_memory:
            entry["keyword_memory"] = keyword_memory(workdir, name)
        entry["latency"] = measure(workdir, embedder, name, questions, passes=args.passes,
                                   context_tokens=args.context_tokens)
        results["sizes"][size] = entry
        print(f"{size}: {json.dumps(entry)}", file=sys.stderr)

    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    m = results["machine"]
    print(f"{m['cpu']}, {m['cores']} cores, {m['ram_gb']} GB RAM, Python {m['python']}, {m['date']}")
    print("\n| chunks | mode | p50 ms | p95 ms | max ms | load1 before/after |")
    print("|---|---|---|---|---|---|")
    for size, e in results["sizes"].items():
        lat = e["latency"]
        for mode in ("vector", "keyword", "hybrid"):
            s = lat[mode]
            load = f"{lat['load1_before']}/{lat['load1_after']}"
            print(f"| {size:,} | {mode} | {s['p50']} | {s['p95']} | {s['max']} | {load} |")
    print("\n| chunks | embed p50/p95 | exact dense k=50 p50/p95 | (Chroma HNSW k=50, before) p50/p95 "
          "| BM25 search k=50 p50/p95 | contexts of the top 5 p50/p95 | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for size, e in results["sizes"].items():
        p = e["latency"]["parts"]
        keys = ("embed", "exact_dense_k50", "chroma_hnsw_k50", "bm25_search_k50", "context_top5")
        cells = [f"{p[k]['p50']}/{p[k]['p95']}" for k in keys]
        print(f"| {size:,} | " + " | ".join(cells) + f" | {e['latency']['peak_rss_mb']} |")
    if not args.skip_memory:
        print("\n| chunks | snapshot built from the store s | segments | open s | open RSS Δ MB | first hybrid query s "
              "| RSS Δ after it MB | peak RSS MB | disk vectors MB | disk postings MB | disk total MB |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for size, e in results["sizes"].items():
            k = e["keyword_memory"]
            print(f"| {size:,} | {e['made'].get('snapshot_seconds')} | {k['segments']} | {k['load_seconds']} | "
                  f"{k['load_rss_delta_mb']} | {k['first_query_seconds']} | {k['rss_delta_after_first_search_mb']} | "
                  f"{k['peak_rss_mb']} | {k['disk_vectors_mb']} | {k['disk_postings_mb']} | {k['disk_total_mb']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
