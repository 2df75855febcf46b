"""Pages that attack the cost of ingesting them (issue 36, items 1 and 6), each through a real `rag ingest`
beside a normal page, by hand:

    .venv/bin/python benchmarks/hostile_pages.py [--cases bomb,one-line,section] [--keep DIR]

Cases (rag_assets_tests/support/hostile_pages.py):

- bomb: six snippet files of 818 bytes, each using the next 8 times, 5 levels deep, and a page using
  the first 8 times (299,592 expansions if expanded);
- one-line: a 4.8 MB MDX page on one line (inline components between words);
- section: one 1 MB section of short distinct paragraphs.

For each case, in a fresh folder (docs, Chroma, state, DAGSTER_HOME): the exit code, the wall time of
`rag ingest --json`, its own `duration_seconds`, the time inside the encoder (`embedding_seconds`) and
beside it, chunks written, what happened to the hostile page (indexed, or failed and the line that says
why) and whether the normal page was indexed. Then the CPU time of the hostile page through the
per-page path in this process (parse, MDX, split, chunk, ids). Run it against an older checkout with
PYTHONPATH=<its root> to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_assets_tests.support import hostile_pages as hp  # noqa: E402

CASES = {
    "bomb": lambda docs: hp.snippet_bomb(docs),
    "one-line": lambda docs: hp.single_line_mdx(docs, 4_800_000),
    "section": lambda docs: hp.big_section(docs, 1_000_000),
}


def ingest(env: dict, timeout: float) -> tuple[int | None, dict, float]:
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, {}, time.perf_counter() - started
    took = time.perf_counter() - started
    try:
        return proc.returncode, json.loads(proc.stdout), took
    except ValueError:
        return proc.returncode, {"errors": [{"doc_path": "?", "error": proc.stderr[-500:]}]}, took


def page_cpu(docs: Path, page: str) -> str:
    """CPU seconds of the hostile page alone through the per-page path (one run: it is big)."""
    scratch = Path(tempfile.mkdtemp(prefix="rag-hostile-cpu-"))
    started = time.process_time()
    try:
        text = (docs / page).read_text(encoding="utf-8")
        if (docs / "snippets").is_dir():
            shutil.copytree(docs / "snippets", scratch / "page" / "snippets")
        try:
            return f"{hp.page_path_cpu_seconds(scratch / 'page', text, repeats=1):.2f} s CPU"
        except Exception as exc:
            return f"{time.process_time() - started:.2f} s CPU, then {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--timeout", type=float, default=900, help="seconds before an ingest counts as hung")
    parser.add_argument("--keep", type=Path, help="work under this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    base = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="rag-hostile-pages-"))
    ok = True
    try:
        for name in args.cases.split(","):
            work = base / name
            shutil.rmtree(work, ignore_errors=True)
            (work / "dagster_home").mkdir(parents=True)
            (work / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
            docs = work / "docs"
            normal = hp.normal_page(docs)
            page = CASES[name](docs)
            env = {**os.environ, "DAGSTER_HOME": str(work / "dagster_home"), "RAG_DOCS_DIR": str(docs),
                   "RAG_CHROMA_PATH": str(work / "chroma"), "RAG_STATE_DIR": str(work / "state"),
                   "RAG_CACHE_DIR": str(work / "cache"), "DAGSTER_DISABLE_TELEMETRY": "1",
                   "ANONYMIZED_TELEMETRY": "False", "ORT_DISABLE_TELEMETRY": "1"}
            env.pop("CHROMA_HOST", None)
            code, report, took = ingest(env, args.timeout)
            if code is None:
                ok = False
                print(f"{name}: `rag ingest` still running after {args.timeout:.0f} s: killed")
                continue
            errors = {e["doc_path"]: e["error"] for e in report.get("errors", [])}
            duration = float(report.get("duration_seconds", 0))
            encoder = float(report.get("embedding_seconds", 0))
            normal_ok = normal not in errors and report.get("documents_processed", 0) >= 1
            ok &= normal_ok
            verdict = f"failed: {errors[page]}" if page in errors else "indexed"
            print(f"{name}: exit {code}, wall {took:.1f} s (ingest {duration:.1f} s: encoder {encoder:.1f} s, "
                  f"beside it {duration - encoder:.1f} s), {report.get('chunks_written', 0)} chunks written; "
                  f"{page}: {verdict}; {normal}: {'indexed' if normal_ok else 'NOT INDEXED'}")
            print(f"  {page} alone through parse, MDX, split, chunk and ids in this process: "
                  f"{page_cpu(docs, page)}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
