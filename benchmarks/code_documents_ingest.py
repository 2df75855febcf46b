"""RAGPipeline.ingest() of two documents from code: how long the call takes, and what it is made of.

    python benchmarks/code_documents_ingest.py [--processes 5] [--pages 20] [--workdir DIR]
        [--code CHECKOUT] [--out FILE]

Once, in a scratch folder (the repo's data/ is never touched): a docs folder with the first --pages
pages of the bundled corpus (data/docs), indexed by `rag ingest`, and a Dagster instance like the
repo's (batching SQLite event log). Then --processes fresh Python processes, each as a bot would be:

1. `RAGPipeline.from_settings()` (import and open the store);
2. `ingest()` of two new documents (ids new to the index): the first call of the process;
3. `ingest()` of the same ids with new content; 4. the same content again (nothing to do);
5. `ingest()` of two more new documents: a later call of a warm process.

And, in one more fresh process each (after `from_settings()`), what the first call pays once per
process: importing the ingestion layer (Dagster, the definitions), opening the Dagster instance, loading
the tiktoken encoding.
Reports medians (and min-max) of every step, the Dagster runs per call, and the machine.
`--code CHECKOUT` runs the children against another checkout's `rag_assets` (e.g. `main`, for a before
figure); they get their documents as dicts with an `id`, which every version takes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent('''
    import json, sys, time, uuid
    tag = sys.argv[1]
    t0 = time.perf_counter()
    from rag_assets import RAGPipeline
    pipeline = RAGPipeline.from_settings()
    out = {"pipeline_seconds": time.perf_counter() - t0}

    def docs(prefix, version):
        return [{"id": f"{prefix}-{tag}-{i}", "metadata": {"source": "Core Rules v3.1", "doc_type": "core-rules",
                 "last_update_date": "2025-01-15"},
                 "content": f"# Rules {i}\\n\\n## Movement Phase\\n\\nDuring the movement phase an operative may move "
                            f"up to its move characteristic ({version}, rule {i} of {tag})."} for i in range(2)]

    for step, batch in (("first", docs("bot", "v1")), ("update", docs("bot", "v2")), ("same", docs("bot", "v2")),
                        ("later_new", docs("more", "v1"))):
        start = time.perf_counter()
        result = pipeline.ingest(batch)
        out[f"{step}_seconds"] = time.perf_counter() - start
        out[f"{step}_runs"] = len(result.run_ids)
        out[f"{step}_processed"] = result.documents_processed
        out[f"{step}_failed"] = result.documents_failed
    print(json.dumps(out))
''')

ONCE = textwrap.dedent('''
    import json, time
    from rag_assets import RAGPipeline
    RAGPipeline.from_settings()  # as in the processes above: what comes after is what the first ingest() adds
    t0 = time.perf_counter()
    import rag_assets.indexing.service
    from rag_assets.orchestration.instance import get_instance
    t1 = time.perf_counter()
    get_instance()
    t2 = time.perf_counter()
    from rag_assets.config import Settings
    from rag_assets.ingest.tokens import TokenCounter
    TokenCounter.for_name(Settings.from_env().tiktoken_encoding)
    t3 = time.perf_counter()
    print(json.dumps({"import_seconds": t1 - t0, "instance_seconds": t2 - t1, "tiktoken_seconds": t3 - t2}))
''')


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load}"


def env_for(work: Path, code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "CHROMA_", "OPENAI_"))}
    env.update({
        "RAG_DOCS_DIR": str(work / "docs"), "RAG_CHROMA_PATH": str(work / "chroma"), "RAG_STATE_DIR": str(work / "state"),
        "RAG_CACHE_DIR": str(work / "cache"), "RAG_EVAL_DIR": str(work / "eval"),
        "RAG_EVAL_RESULTS_DIR": str(work / "eval_results"), "RAG_CORPORA_DIR": str(work / "corpora"),
        "DAGSTER_HOME": str(work / "dagster_home"), "DAGSTER_DISABLE_TELEMETRY": "1",
        "ORT_DISABLE_TELEMETRY": "1",
    })
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def setup(work: Path, pages: int, env: dict[str, str]) -> None:
    shutil.rmtree(work, ignore_errors=True)
    (work / "docs").mkdir(parents=True)
    for page in sorted((ROOT / "data" / "docs").rglob("*.md"))[:pages]:
        target = work / "docs" / page.relative_to(ROOT / "data" / "docs")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, target)
    home = work / "dagster_home"
    home.mkdir()
    yaml = (ROOT / "dagster.yaml").read_text().replace("data/", f"{work}/dagster-data/")
    (home / "dagster.yaml").write_text(yaml)
    subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--quiet"], env=env, check=True, cwd=work,
                   stdout=subprocess.DEVNULL)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--pages", type=int, default=20, help="bundled-corpus pages indexed before (default 20)")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: a new temporary one)")
    parser.add_argument("--code", type=Path, default=None, help="run the children against this checkout's rag_assets")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="code-documents-ingest-"))).resolve()
    env = env_for(work, args.code.resolve() if args.code else None)
    setup(work, args.pages, env)
    rows = []
    for n in range(args.processes):
        proc = subprocess.run([sys.executable, "-c", CHILD, f"p{n}"], env=env, cwd=work, capture_output=True, text=True,
                              check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(rows[-1], file=sys.stderr)
    once = []
    for _ in range(args.processes):
        proc = subprocess.run([sys.executable, "-c", ONCE], env=env, cwd=work, capture_output=True, text=True, check=True)
        once.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    code = args.code or ROOT
    lines = [
        f"## RAGPipeline.ingest() of two documents from code ({dt.date.today().isoformat()})",
        "",
        f"`python benchmarks/code_documents_ingest.py --processes {args.processes} --pages {args.pages}"
        + (f" --code {args.code}" if args.code else "") + f"`: code of {code}, {machine()}.",
        "",
        "| step (fresh process each) | time, median (min–max) | Dagster runs | processed |",
        "|---|---|---|---|",
        f"| `RAGPipeline.from_settings()` | {spread([r['pipeline_seconds'] for r in rows])} | | |",
    ]
    for step, label in (("first", "first `ingest()` of the process: 2 new documents"),
                        ("update", "the same 2 ids, new content"), ("same", "the same content again"),
                        ("later_new", "2 more new documents (warm process)")):
        runs = sorted({r[f"{step}_runs"] for r in rows})
        processed = sorted({r[f"{step}_processed"] for r in rows})
        lines.append(f"| {label} | {spread([r[f'{step}_seconds'] for r in rows])} | {', '.join(map(str, runs))} | "
                     f"{', '.join(map(str, processed))} |")
    lines += [
        "",
        "Paid once per process by the first call (fresh processes, median): importing the ingestion layer "
        f"(Dagster, the definitions) {statistics.median(o['import_seconds'] for o in once):.2f} s, opening the "
        f"Dagster instance {statistics.median(o['instance_seconds'] for o in once):.2f} s, loading the tiktoken "
        f"encoding {statistics.median(o['tiktoken_seconds'] for o in once):.2f} s.",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
