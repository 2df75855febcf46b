"""Incremental-ingestion benchmark: `rag ingest --json` subprocesses on a scratch copy of a corpus.

    python benchmarks/ingest_benchmark.py [CORPUS_DIR] [--scale N] [--scale-source DIR] [--max-full-minutes M]

Sample mode (CORPUS_DIR, default data/docs): full ingest, no-op re-ingest, no-op after `touch` of
every file, one paragraph appended to one page, one file deleted, one file renamed. Each step is a
fresh `python -m rag_assets ingest --json` process (wall time and the peak RSS of its process tree,
sampled with psutil every 50 ms).

Scale mode (--scale N, N > 0): N documents built from --scale-source (default
../shared/corpora/physical-ai-textbook, read at run time and never copied into the repo), each copy
varied by a seed (paragraphs shuffled inside each section and a unique sentence per section, so no
two copies share chunk hashes). Measures full ingest, no-op, one changed document, and the
docs_sensor tick (dagster.build_sensor_context on a real SQLite instance, as the tests do) for N
new files and for N touched + edited files. If the full ingest is estimated (from the sample run's
embedding rate) to exceed --max-full-minutes, fewer documents are ingested and the table says so;
the sensor ticks still use N files.

Everything lives in a temporary folder: the repo's data/ state is never touched. Writes the tables
to benchmarks/ingest_results.md (--out) with the machine and date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
QUIET_ENV = {
    "DAGSTER_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "ORT_DISABLE_TELEMETRY": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "HF_HUB_OFFLINE": "1",
    "RAG_LOG_LEVEL": "ERROR",
}


# --- environment -------------------------------------------------------------------------------
def scratch_env(base: Path, docs: Path) -> dict[str, str]:
    home = base / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = dict(os.environ, **QUIET_ENV)
    for var in ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST"):
        env.pop(var, None)
    env.update(
        RAG_DOCS_DIR=str(docs),
        RAG_CHROMA_PATH=str(base / "chroma"),
        RAG_STATE_DIR=str(base / "state"),
        RAG_CACHE_DIR=str(base / "cache"),
        RAG_EVAL_DIR=str(base / "eval"),
        RAG_EVAL_RESULTS_DIR=str(base / "eval_results"),
        DAGSTER_HOME=str(home),
        TIKTOKEN_CACHE_DIR=str(base / "tiktoken"),
    )
    return env


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = psutil.virtual_memory().total / 2**30
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{model}; {psutil.cpu_count(logical=False)} physical / {psutil.cpu_count()} logical cores; "
            f"{ram:.1f} GiB RAM; Python {platform.python_version()}; load average at start {load}")


# --- one measured CLI run ----------------------------------------------------------------------
def rag_ingest(env: dict[str, str], *extra: str) -> dict:
    """Run `rag ingest --json`; the summary plus wall seconds and peak RSS (MB) of the process tree."""
    started = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-m", "rag_assets", "ingest", "--json", *extra], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    stop = threading.Event()

    def sample():
        nonlocal peak
        try:
            root = psutil.Process(proc.pid)
        except psutil.NoSuchProcess:
            return
        while not stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
                rss = 0
                for p in procs:
                    try:
                        rss += p.memory_info().rss
                    except psutil.NoSuchProcess:
                        pass
                peak = max(peak, rss)
            except psutil.NoSuchProcess:
                return
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"rag ingest exited {proc.returncode}:\n{err[-3000:]}")
    summary = json.loads(out)
    summary["wall_seconds"] = round(wall, 2)
    summary["peak_rss_mb"] = round(peak / 2**20)
    summary["exit_code"] = proc.returncode
    return summary


# --- looking inside the scratch state (a subprocess: never a stale Chroma client here) -----------
_INSPECT = r"""
import json, sys
from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.stage_store import CHUNKS, StageStore
from rag_assets.index.chroma_store import ChromaStore
s = Settings.from_env(); e = load_embedder(s.embedding)
store = ChromaStore(path=s.chroma_path, collection=s.collection, embedding_model=e.model_name, dimension=e.dimension)
stages = StageStore(s.state_dir)
per_doc = {}
for _, _, meta in store.iter_all():
    per_doc[meta["doc_path"]] = per_doc.get(meta["doc_path"], 0) + 1
chunks = {p: len((stages.read(CHUNKS, p) or {}).get("payload") or []) for p in stages.doc_paths(CHUNKS)}
print(json.dumps({"count": store.count(), "vectors_per_doc": per_doc, "chunks_per_doc": chunks}))
"""


def inspect(env: dict[str, str]) -> dict:
    proc = subprocess.run([PYTHON, "-c", _INSPECT], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def row(step: str, s: dict, note: str = "") -> dict:
    return {
        "step": step, "wall_s": s["wall_seconds"], "ingest_s": s["duration_seconds"], "peak_rss_mb": s["peak_rss_mb"],
        "processed": s["documents_processed"], "unchanged": s["documents_unchanged"], "deleted": s["documents_deleted"],
        "embeddings_computed": s["embeddings_computed"], "embeddings_reused": s["embeddings_reused"],
        "chunks_written": s["chunks_written"], "vectors_deleted": s["vectors_deleted"], "note": note,
    }


COLUMNS = ["step", "wall_s", "ingest_s", "peak_rss_mb", "processed", "unchanged", "deleted", "embeddings_computed",
           "embeddings_reused", "chunks_written", "vectors_deleted", "note"]


def table(rows: list[dict], columns: list[str] = COLUMNS) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


# --- sample corpus -----------------------------------------------------------------------------
def append_paragraph(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + text + "\n", encoding="utf-8")


def sample_benchmark(corpus: Path, base: Path) -> tuple[list[dict], dict]:
    docs = base / "docs"
    shutil.copytree(corpus, docs)
    env = scratch_env(base, docs)
    rows: list[dict] = []

    full = rag_ingest(env)
    rows.append(row("full ingest", full, f"{full['documents_discovered']} documents"))
    rate = full["embeddings_computed"] / max(full["duration_seconds"], 1e-9)

    noop = rag_ingest(env)
    rows.append(row("no-op re-ingest", noop))

    now = time.time()
    for p in docs.rglob("*.md*"):
        os.utime(p, (now, now))
    touched = rag_ingest(env)
    rows.append(row("no-op after `touch` of every file", touched))

    state = inspect(env)
    chunks = state["chunks_per_doc"]
    biggest = max(chunks, key=chunks.get)
    append_paragraph(docs / biggest, "Benchmark note: this paragraph was appended to measure incremental "
                     "re-embedding; only the chunk that now holds it should be embedded again.")
    edit = rag_ingest(env)
    rows.append(row("one paragraph appended to one page", edit,
                    f"`{biggest}`: {edit['embeddings_computed']} of {chunks[biggest]} chunks re-embedded"))

    victims = sorted(p for p in chunks if p != biggest)
    deleted_doc, renamed_doc = victims[0], victims[len(victims) // 2]
    had = state["vectors_per_doc"].get(deleted_doc, 0)
    (docs / deleted_doc).unlink()
    gone = rag_ingest(env)
    left = inspect(env)["vectors_per_doc"].get(deleted_doc, 0)
    rows.append(row("one file deleted", gone, f"`{deleted_doc}` had {had} vectors; {left} left in Chroma"))

    new_name = str(Path(renamed_doc).with_name("renamed-" + Path(renamed_doc).name))
    os.rename(docs / renamed_doc, docs / new_name)
    moved = rag_ingest(env)
    after = inspect(env)["vectors_per_doc"]
    rows.append(row("one file renamed", moved, f"`{renamed_doc}` -> `{new_name}`; old path has "
                    f"{after.get(renamed_doc, 0)} vectors, new {after.get(new_name, 0)}"))
    return rows, {"embeddings_per_second": rate, "chunks": full["chunks_written"], "documents": full["documents_discovered"]}


# --- scale corpus ------------------------------------------------------------------------------
_HEADING = re.compile(r"^#{1,6} ", re.M)


def vary(text: str, seed: int) -> str:
    """A distinct version of a page: paragraphs shuffled within each section, one unique sentence per section."""
    rng = random.Random(seed)
    front = ""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end > 0:
            front, text = text[: end + 4] + "\n", text[end + 4 :]
            front = re.sub(r'^title:\s*"?(.*?)"?\s*$', lambda m: f'title: "{m.group(1)} (copy {seed})"', front, count=1, flags=re.M)
    sections = re.split(r"(?m)^(?=#{1,6} )", text)
    out = []
    for i, section in enumerate(sections):
        lines = section.split("\n", 1)
        head, body = (lines[0] + "\n", lines[1] if len(lines) > 1 else "") if _HEADING.match(section) else ("", section)
        if "```" in body:  # keep code fences intact: do not shuffle around them
            paragraphs = [body.strip("\n")]
        else:
            paragraphs = [p for p in re.split(r"\n\s*\n", body.strip("\n")) if p.strip()]
            rng.shuffle(paragraphs)
        paragraphs.append(f"Edition note {seed}-{i}: reviewed for cohort {rng.randint(1000, 9999)} of the course.")
        out.append(head + "\n" + "\n\n".join(paragraphs) + "\n\n")
    return front + "".join(out)


def build_scale_corpus(source: Path, dest: Path, n: int) -> list[Path]:
    pages = sorted(p for p in source.rglob("*") if p.suffix.lower() in (".md", ".mdx") and p.is_file())
    if not pages:
        raise SystemExit(f"no markdown under {source}")
    written = []
    for k in range(n):
        page = pages[k % len(pages)]
        copy = k // len(pages)
        rel = page.relative_to(source)
        target = dest / f"copy{copy:03d}" / rel.with_suffix(".md")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(vary(page.read_text(encoding="utf-8"), seed=k), encoding="utf-8")
        written.append(target)
    return written


def estimate_chunks(paths: list[Path], sample_chunks: int, sample_corpus: Path) -> float:
    """Chunks a corpus will give, from its size and the sample corpus' bytes per chunk."""
    sample_bytes = sum(p.stat().st_size for p in sample_corpus.rglob("*.md*"))
    return sum(p.stat().st_size for p in paths) / (sample_bytes / max(sample_chunks, 1))


def sensor_ticks(base: Path, docs: Path, n: int) -> list[dict]:
    """docs_sensor on a real SQLite instance: a first tick over n new files, then n touched + edited files."""
    code = r"""
import json, os, sys, time
import dagster as dg
from pathlib import Path
from rag_assets.orchestration.definitions import RESOURCES, defs, docs_sensor
docs = Path(os.environ["RAG_DOCS_DIR"])
files = sorted(docs.rglob("*.md"))
past = time.time() - 3600
for p in files:
    os.utime(p, (past, past))
out = []
with dg.DagsterInstance.get() as instance:
    def tick(cursor):
        t = time.perf_counter()
        result = docs_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                                                     resources=RESOURCES))
        seconds = time.perf_counter() - t
        for request in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        return result, seconds
    first, s1 = tick(None)
    out.append({"tick": f"first tick, {len(files)} new files", "seconds": round(s1, 2),
                "run_requests": len(first.run_requests), "changed": len(files)})
    quiet, s0 = tick(first.cursor)
    out.append({"tick": "no change", "seconds": round(s0, 2), "run_requests": len(quiet.run_requests or []), "changed": 0})
    edited_at = time.time() - 60
    for i, p in enumerate(files):
        p.write_text(p.read_text(encoding="utf-8") + f"\nSensor benchmark edit {i}.\n", encoding="utf-8")
        os.utime(p, (edited_at, edited_at))
    changed, s2 = tick(quiet.cursor)
    out.append({"tick": f"{len(files)} files touched + edited", "seconds": round(s2, 2),
                "run_requests": len(changed.run_requests), "changed": len(files)})
print(json.dumps(out))
"""
    sbase = base / "sensor"
    sdocs = sbase / "docs"
    shutil.copytree(docs, sdocs)
    env = scratch_env(sbase, sdocs)
    proc = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scale_benchmark(source: Path, base: Path, n: int, sample: dict, sample_corpus: Path, max_minutes: float):
    all_docs = base / "scale_all"
    paths = build_scale_corpus(source, all_docs, n)
    est_chunks = estimate_chunks(paths, sample["chunks"], sample_corpus)
    est_minutes = est_chunks / max(sample["embeddings_per_second"], 1e-9) / 60
    ingest_n = n
    if est_minutes > max_minutes:
        ingest_n = max(10, int(n * max_minutes / est_minutes))
    notes = [f"{n} documents built from `{source.name}` ({len({p.relative_to(all_docs).relative_to(p.relative_to(all_docs).parts[0]) for p in paths})} source pages, "
             f"each copy varied by seed); estimated {est_chunks:.0f} chunks, {est_minutes:.1f} min to embed at the "
             f"sample run's {sample['embeddings_per_second']:.1f} embeddings/s."]
    if ingest_n < n:
        notes.append(f"**Capped**: the full ingest would exceed {max_minutes:g} min, so the ingest steps use the first "
                     f"{ingest_n} documents; the sensor ticks still use all {n}.")

    docs = base / "scale" / "docs"
    docs.mkdir(parents=True)
    for p in paths[:ingest_n]:
        target = docs / p.relative_to(all_docs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    env = scratch_env(base / "scale", docs)
    rows = []
    full = rag_ingest(env)
    rows.append(row(f"full ingest ({ingest_n} docs)", full,
                    f"{full['embeddings_computed'] / max(full['duration_seconds'], 1e-9):.1f} embeddings/s overall"))
    noop = rag_ingest(env)
    rows.append(row("no-op re-ingest", noop))
    target = sorted(docs.rglob("*.md"))[ingest_n // 2]
    append_paragraph(target, "Scale benchmark: one paragraph appended to one document.")
    one = rag_ingest(env)
    rows.append(row("one document changed", one, f"`{target.relative_to(docs)}`"))
    ticks = sensor_ticks(base, all_docs, n)
    return rows, ticks, notes


# --- main --------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT / "data" / "docs"))
    parser.add_argument("--scale", type=int, default=0, help="documents in the scale corpus (0: no scale run)")
    parser.add_argument("--scale-source", default=str(ROOT.parent / "shared" / "corpora" / "physical-ai-textbook"))
    parser.add_argument("--max-full-minutes", type=float, default=25.0,
                        help="cap the scale full ingest at about this long (fewer documents if needed)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "ingest_results.md"))
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()

    corpus = Path(args.corpus).resolve()
    base = Path(tempfile.mkdtemp(prefix="rag-ingest-bench-"))
    header = [
        "# Ingestion benchmark",
        "",
        f"- date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- machine: {machine()}",
        f"- command: `python benchmarks/ingest_benchmark.py {' '.join(sys.argv[1:])}`",
        "- every step is one `python -m rag_assets ingest --json` process on a scratch copy (process start-up,"
        " ~3-4 s of imports, included in wall_s; ingest_s is the CLI's own duration_seconds); peak RSS is the"
        " process tree's, sampled every 50 ms",
        "",
    ]
    try:
        print(f"scratch: {base}", file=sys.stderr)
        rows, sample = sample_benchmark(corpus, base / "sample")
        sections = [f"## Sample corpus: `{corpus.name}` ({sample['documents']} documents, {sample['chunks']} chunks)",
                    "", table(rows), ""]
        print("\n".join(sections))
        if args.scale:
            srows, ticks, notes = scale_benchmark(Path(args.scale_source).resolve(), base, args.scale, sample, corpus,
                                                  args.max_full_minutes)
            part = [f"## Scale corpus ({args.scale} documents)", "", *[f"- {n}" for n in notes], "",
                    table(srows), "", "### docs_sensor tick (build_sensor_context, real SQLite instance)", "",
                    table(ticks, ["tick", "seconds", "run_requests", "changed"]), ""]
            print("\n".join(part))
            sections += part
        Path(args.out).write_text("\n".join(header + sections), encoding="utf-8")
        print(f"written {args.out}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
