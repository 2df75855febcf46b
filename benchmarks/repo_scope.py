"""A whole documentation repository ingested as a user would: pages found, left out, indexed, chunks,
wall time and the time beside the encoder (issue 34: scope and languages). Run by hand:

    .venv/bin/python benchmarks/repo_scope.py --docs-dir /path/to/repo --workdir /tmp/x/work \
        [--python /other/checkout/.venv/bin/python] [--env RAG_LANGUAGES=all] [--repeat 2]

Each repeat is a first ingest into a fresh work folder (its own state, Chroma, Dagster home; the
embedding cache is not shared), through `rag ingest --json` of the interpreter given (another
checkout's venv measures the code before a change). Prints one JSON line per repeat and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path


def work_env(work: Path, docs: Path, project: Path, extra: dict[str, str]) -> dict[str, str]:
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text((project / "dagster.yaml").read_text().replace("data/dagster", str(work / "dagster")))
    env = dict(os.environ)
    env.update({"DAGSTER_HOME": str(home), "RAG_DOCS_DIR": str(docs), "RAG_CHROMA_PATH": str(work / "chroma"),
                "RAG_STATE_DIR": str(work / "state"), "RAG_CACHE_DIR": str(work / "cache"), "RAG_EVAL_DIR": str(work / "eval"),
                "RAG_EVAL_RESULTS_DIR": str(work / "eval_results"), "RAG_CORPORA_DIR": str(work / "corpora")})
    env.update(extra)
    return env


def one(python: str, docs: Path, work: Path, extra: dict[str, str]) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    project = Path(python).absolute().parents[2] if Path(python).parent.name == "bin" else Path.cwd()
    env = work_env(work, docs, project, extra)
    started = time.perf_counter()
    proc = subprocess.run([python, "-m", "rag_assets", "ingest", "--json"], env=env, capture_output=True, text=True,
                          cwd=project)
    wall = time.perf_counter() - started
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"rag ingest exit {proc.returncode}: {proc.stderr[-2000:]}")
    left_out = summary.get("left_out") or {}
    return {"exit": proc.returncode, "pages_found": summary["documents_discovered"] + sum(left_out.values()),
            "left_out": left_out, "pages_left_out": sum(left_out.values()),
            "pages_indexed": summary["documents_processed"], "failed": summary["documents_failed"],
            "chunks": summary["chunks_written"], "wall_seconds": round(wall, 1),
            "embedding_seconds": summary.get("embedding_seconds", 0.0),
            "beside_encoder_seconds": round(wall - summary.get("embedding_seconds", 0.0), 1),
            "default_language": summary.get("default_language", "")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs-dir", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--python", default=str(Path(".venv/bin/python").absolute()))
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the ingest")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    rows = []
    for i in range(args.repeat):
        row = one(args.python, args.docs_dir.resolve(), args.workdir / f"run{i}", extra)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if len(rows) > 1:
        print(json.dumps({"median_wall_seconds": statistics.median(r["wall_seconds"] for r in rows),
                          "median_beside_encoder_seconds": statistics.median(r["beside_encoder_seconds"] for r in rows)}))


if __name__ == "__main__":
    main()
