"""Two corpora ingested at once and RAGPipeline.ingest() into a third: when each one's Dagster runs
ran, against the same three one after the other.

The corpora of rag_assets_tests/system/test_concurrency.py (`--docs` manuals in each of two folders,
`rag ingest --docs-dir DIR --name NAME`, and four notes from code into the default corpus), on a fresh
state and a cold embedding cache each time, with `--per-run` documents a run.

    .venv/bin/python benchmarks/concurrent_corpora.py --docs 6 --per-run 2 --workdir /tmp/concurrent-corpora

Prints, per corpus, its process's wall time and its runs' window (seconds from the start), and whether
any said it waited for another (results in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scratch import scratch_env  # noqa: E402 - beside this script
from rag_assets_tests.system.test_concurrency import FROM_CODE, _doc  # noqa: E402 - the test's corpora


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=6, help="documents in each of the two folders")
    parser.add_argument("--per-run", type=int, default=2, help="RAG_DOCUMENTS_PER_RUN")
    parser.add_argument("--workdir", default="/tmp/concurrent-corpora", help="scratch state (emptied first)")
    args = parser.parse_args()
    together = trial(Path(args.workdir) / "together", args, at_once=True)
    apart = trial(Path(args.workdir) / "apart", args, at_once=False)
    print(f"\n2 folders of {args.docs} documents + 4 documents from code, {args.per_run} a run; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| | corpus | process s (start → end) | its Dagster runs (first start → last end) | said it waited |")
    print("|---|---|---|---|---|")
    for label, result in (("at once", together), ("one after the other", apart)):
        for name, r in result["corpora"].items():
            print(f"| {label} | {name} | {r['start']:.1f} → {r['end']:.1f} | {r['runs'][0]:.1f} → {r['runs'][1]:.1f} "
                  f"| {'yes' if r['waited'] else 'no'} |")
        print(f"| {label} | **all three** | {result['wall']:.1f} s in all | | |")


def trial(work: Path, args, at_once: bool) -> dict:
    env = scratch_env(work, RAG_DOCUMENTS_PER_RUN=str(args.per_run))
    for name in ("alpha", "beta"):
        for i in range(args.docs):
            path = work / name / f"w{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_doc(i, f"This manual belongs to the {name} shelf."), encoding="utf-8")
    commands = {name: [sys.executable, "-m", "rag_assets", "ingest", "--docs-dir", str(work / name), "--name", name, "--json"]
                for name in ("alpha", "beta")}
    commands["default"] = [sys.executable, "-c", FROM_CODE]
    t0 = time.time()
    spans, waited = {}, {}
    procs = {}
    for name, argv in commands.items():
        start = time.time()
        procs[name] = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not at_once:
            finish(name, procs[name], start, spans, waited)
            if name not in spans:
                raise SystemExit("an ingest failed (above)")
    if at_once:  # each collected as it ends
        threads = [threading.Thread(target=finish, args=(name, proc, t0, spans, waited)) for name, proc in procs.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if set(spans) != set(commands):
            raise SystemExit("an ingest failed (above)")
    wall = time.time() - t0

    os.environ.update(env)
    from rag_assets.orchestration.instance import get_instance
    from rag_assets.orchestration.sensors import CORPUS_TAG

    with get_instance() as instance:
        records = instance.get_run_records()
    runs: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        runs.setdefault(record.dagster_run.tags[CORPUS_TAG], []).append((record.start_time, record.end_time))
    corpora = {name: {"start": spans[name][0] - t0, "end": spans[name][1] - t0, "waited": waited[name],
                      "runs": (min(s for s, _ in runs[name]) - t0, max(e for _, e in runs[name]) - t0)}
               for name in commands}
    return {"wall": wall, "corpora": corpora}


def finish(name: str, proc: subprocess.Popen, start: float, spans: dict, waited: dict) -> None:
    out, err = proc.communicate(timeout=3600)
    if proc.returncode != 0:
        print(f"{name} exited {proc.returncode}:\n{err[-3000:]}", file=sys.stderr)
        return
    json.loads(out if name != "default" else out.strip().splitlines()[-1])  # a summary, as the test reads it
    spans[name] = (start, time.time())
    waited[name] = "waiting for it to finish" in err


if __name__ == "__main__":
    main()
