"""How long `rag ingest` takes to end after Ctrl-C (typed in a terminal) or SIGTERM, mid-run.

Each trial starts `rag ingest` on a fresh state and a cold embedding cache (so a run is embedding when the
signal lands), waits until its first run's documents are indexed, then `--delay` seconds more (inside
the next run), sends the signal and times the exit. Ctrl-C is typed on a pseudo-terminal of the
command's own (the terminal's SIGINT to its whole process group, as a shell user's); SIGTERM is a
`kill` of the process. Then `rag ingest --json` finishes the rest: it must fail nothing.

    .venv/bin/python benchmarks/stop_latency.py --docs data/docs --per-run 5 --trials 3 --workdir /tmp/stop-latency

Prints a markdown table (results in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scratch import scratch_env  # noqa: E402 - beside this script
from rag_assets_tests.support.terminal import Terminal  # noqa: E402 - a pty, as a user's shell gives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(ROOT / "data" / "docs"), help="the corpus's folder")
    parser.add_argument("--per-run", type=int, default=5, help="RAG_DOCUMENTS_PER_RUN")
    parser.add_argument("--trials", type=int, default=3, help="trials per signal")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds after the first run's documents are indexed")
    parser.add_argument("--workdir", default="/tmp/stop-latency", help="scratch state (emptied first)")
    args = parser.parse_args()
    print(f"\n{args.docs}, {args.per_run} documents a run, load at the start {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores\n")
    print("| signal | trial | s from signal to exit | exit | documents kept | next `rag ingest`: processed / failed | "
          "next ingest s | load |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for trial in range(args.trials):
        for how in ("Ctrl-C", "SIGTERM"):
            took, code, kept, nxt, nxt_s = one_trial(how, Path(args.docs).resolve(), Path(args.workdir), args)
            print(f"| {how} | {trial + 1} | {took:.2f} | {code} | {kept} | {nxt['documents_processed']} / "
                  f"{nxt['documents_failed']} | {nxt_s:.1f} | {os.getloadavg()[0]:.1f} |", flush=True)


def one_trial(how: str, docs: Path, work: Path, args) -> tuple[float, int, int, dict, float]:
    env = scratch_env(work, docs, RAG_DOCUMENTS_PER_RUN=str(args.per_run), TERM="xterm")
    argv = [sys.executable, "-m", "rag_assets", "ingest"]
    with Terminal(argv, env, cwd=ROOT) as term:
        deadline = time.monotonic() + 1800
        while indexed(env) < args.per_run:
            if term.poll() is not None:
                raise SystemExit(f"rag ingest ended before its first run finished:\n{term.output[-3000:]}")
            if time.monotonic() > deadline:
                raise SystemExit("no finished run after 1800 s")
            time.sleep(0.2)
        time.sleep(args.delay)
        asked = time.monotonic()
        if how == "Ctrl-C":
            term.ctrl_c()
        else:
            os.kill(term.pid, signal.SIGTERM)
        code = term.wait(120)
        took = time.monotonic() - asked
    kept = indexed(env)
    started = time.perf_counter()
    proc = subprocess.run([*argv, "--json"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    nxt_s = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"the next rag ingest exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return took, code, kept, json.loads(proc.stdout), nxt_s


def indexed(env: dict) -> int:
    """Documents whose index record is written (what a stopped ingest keeps)."""
    from rag_assets.config import Settings
    from rag_assets.index.stage_store import INDEXED, StageStore

    if not Path(env["RAG_STATE_DIR"]).exists():
        return 0
    try:
        return len(StageStore.for_settings(Settings.from_env(env).paths).doc_paths(INDEXED))
    except Exception:  # noqa: BLE001 - the database is being created
        return 0


if __name__ == "__main__":
    main()
