"""Time to searchable on the UI's path: from saving a page to a long-lived reader finding it, under
`dagster dev` with docs_sensor on, and where the time goes.

Run by hand from the repo root (results: benchmarks/freshness.md; summary: docs/benchmarks.md):

    .venv/bin/python benchmarks/freshness.py                      # the user's path: six edits
    .venv/bin/python benchmarks/freshness.py --loads 0 2 --out benchmarks/freshness.md   # quiet, then at load 2
    .venv/bin/python benchmarks/freshness.py --kinds edit,add,edit,rename,delete --changes 20 --bursts 2

The user's path, as the issue measured it: the bundled corpus copied into a scratch folder and indexed
with `rag ingest`; one long-lived reader (a RAGPipeline in this process, made before `dagster dev`
starts, asked through retrieve() every 0.25 s, as a chat backend holds one); then `dagster dev` on the
repo's workspace with a copy of the repo's dagster.yaml (only its storage paths moved into the scratch
folder), started as a user starts it, and docs_sensor switched on as the UI's toggle does. Six edits,
one at a time, each a word appended to a page, the next one a user's pause (--pause, 8-20 s) after the
last was found: the evaluation sensor re-scores the index between edits, as it does for the user.
Each is timed from the write to the first query whose results hold the page's chunk with the word.

Where the time goes, per change (from the sensor's ticks and the run's events over GraphQL, and the
search snapshot's manifest): *wait for tick* (the write to the start of the docs_sensor tick that
asked for the run), *tick* (its evaluation and the run's submission), *queue* (the run created to
launched: the daemon's dequeue), *launch* (launched to started: the hand-over to the warm worker),
*steps to commit* (started to the search snapshot's commit inside the index step), *reader* (the
commit to the reader's first query that shows it). The parts add up to the total. Each run's steps
are timed too.

--loads 0 2 runs it twice, each in a fresh scratch folder: as the machine is, then with 2 busy processes
(a CPU spin each, at normal priority) beside everything: on a quiet machine, the quiet and the "at load
2" figures in one command. The 1-minute load average is printed with every change and in the table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLL_SECONDS = 0.25
TIMEOUT_SECONDS = 180
PHASES = ("wait for tick", "tick", "queue", "launch", "steps to commit", "reader")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_average() -> float:
    return os.getloadavg()[0]


class Dagster:
    def __init__(self, env: dict, log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).with_name("dagster")), "dev", "-w", "workspace.yaml",
                 "-h", "127.0.0.1", "-p", str(self.port)],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.location = self.repository = ""

    def gql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(f"{self.url}/graphql", body, {"Content-Type": "application/json"})
        data = json.loads(urllib.request.urlopen(req, timeout=60).read())
        if data.get("errors"):
            raise RuntimeError(data["errors"])
        return data["data"]

    def wait_loaded(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"dagster dev exited:\n{self.log.read_text()[-3000:]}")
            try:
                repos = self.gql("{ repositoriesOrError { ... on RepositoryConnection { nodes { name "
                                 "location { name } } } } }")["repositoriesOrError"]["nodes"]
                if repos:
                    self.location, self.repository = repos[0]["location"]["name"], repos[0]["name"]
                    return
            except Exception:
                pass
            time.sleep(0.5)
        sys.exit("dagster dev did not load the code location")

    def selector(self, name: str) -> dict:
        return {"repositoryLocationName": self.location, "repositoryName": self.repository, "sensorName": name}

    def start_sensor(self, name: str) -> None:
        data = self.gql("mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename "
                        "... on PythonError { message } } }", {"s": self.selector(name)})
        assert data["startSensor"]["__typename"] == "Sensor", data

    def ticks(self, name: str) -> list[dict]:
        """The sensor's ticks that asked for runs: timestamp, endTimestamp, runIds."""
        data = self.gql("query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor { "
                        "sensorState { ticks(limit: 500, statuses: [SUCCESS]) { timestamp endTimestamp runIds } } } } }",
                        {"s": self.selector(name)})
        return data["sensorOrError"]["sensorState"]["ticks"]

    def runs(self) -> list[dict]:
        data = self.gql("{ runsOrError(limit: 500) { ... on Runs { results { runId status creationTime "
                        "startTime endTime tags { key value } } } } }")
        return data["runsOrError"]["results"]

    def events(self, run_id: str) -> list[tuple[str, float, str | None]]:
        """(event type, seconds since the epoch, step key) of the run, in order."""
        data = self.gql("query($id: ID!) { logsForRun(runId: $id, limit: 5000) { ... on EventConnection { events { "
                        "__typename ... on MessageEvent { timestamp stepKey } } } } }", {"id": run_id})
        return [(e["__typename"], float(e["timestamp"]) / 1000, e.get("stepKey"))
                for e in data["logsForRun"].get("events", []) if "timestamp" in e]

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            if self.proc.poll() is not None:
                return
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass


def scratch_env(scratch: Path) -> dict:
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    yaml = (REPO / "dagster.yaml").read_text().replace("data/dagster", str(scratch / "dagster"))
    (home / "dagster.yaml").write_text(yaml)
    env = {**os.environ, "DAGSTER_HOME": str(home), "RAG_DATA_DIR": str(scratch), "RAG_DOCS_DIR": str(scratch / "docs"),
           "RAG_EVAL_DIR": str(scratch / "eval"), "RAG_CHROMA_PATH": str(scratch / "chroma"),
           "RAG_STATE_DIR": str(scratch / "state"), "RAG_CACHE_DIR": str(scratch / "cache"),
           "RAG_EVAL_RESULTS_DIR": str(scratch / "eval_results"), "RAG_CORPORA_DIR": str(scratch / "corpora"),
           "DAGSTER_DISABLE_TELEMETRY": "1"}
    for var in ("RAG_SERVER_URL", "RAG_NO_SERVER"):
        env.pop(var, None)
    return env


class Reader:
    """One long-lived pipeline, as a chat backend holds one: made once when the service starts (before
    `dagster dev` here) and asked through ``retrieve(RetrieveRequest(...))`` (the result cache, the
    threshold gate and the contexts a backend hands on; the probe's made-up words are under any
    relevance threshold, so the gate is off for it) or ``search()`` (``--reader search``). A query
    that raises is a finding: counted and printed, and the poll goes on. ``last_seconds``: how long
    the last query took; ``last_generation``: the index generation it answered from."""

    def __init__(self, env: dict, how: str = "retrieve"):
        os.environ.update(env)
        from rag_assets.pipeline import RAGPipeline

        self.pipeline = RAGPipeline.from_settings()
        self.how = how
        self.errors = 0
        self.last_seconds = 0.0
        self.last_generation = ""

    def docs_for(self, text: str) -> list:
        from rag_assets.retrieval.context import RetrieveRequest

        started = time.perf_counter()
        try:
            if self.how == "search":
                self.last_generation = self.pipeline.retriever.current_generation()
                return self.pipeline.search(text, None, 5)
            found = self.pipeline.retrieve(RetrieveRequest(text, max_chunks=5, min_relevance=0.0))
            self.last_generation = found.generation
            return found.document_chunks
        except Exception as exc:
            self.errors += 1
            print(f"  reader: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            return []
        finally:
            self.last_seconds = time.perf_counter() - started

    def committed_at(self, generation: str) -> float | None:
        """When the search snapshot of this generation was committed (its manifest's created_at)."""
        view = self.pipeline.retriever.snapshot.view_of(generation)
        return view.manifest.get("created_at") if view.generation == generation else None

    def wait(self, done, started: float) -> tuple[float, float, float]:
        """(seconds from `started` to the first query that shows it, that query's own seconds, the
        wall-clock time it was seen)."""
        while time.monotonic() - started < TIMEOUT_SECONDS:
            if done():
                return time.monotonic() - started, self.last_seconds, time.time()
            time.sleep(POLL_SECONDS)
        return float("nan"), float("nan"), float("nan")


def marker() -> str:
    return "zq" + "".join(random.choice("bcdfghjklmnpqrstvwxz") for _ in range(8))


def shows(reader: Reader, word: str, doc_path: str, query: str | None = None):
    """The page's chunk with the word is among the query's results (top 5)."""
    def done() -> bool:
        return any(r.doc_path == doc_path and word in r.text for r in reader.docs_for(query or word))
    return done


def absent(reader: Reader, word: str, doc_path: str):
    def done() -> bool:
        return all(r.doc_path != doc_path for r in reader.docs_for(word))
    return done


def run_changes(reader: Reader, docs: Path, kinds: list[str], n: int, bursts: int, pause: tuple[float, float]) -> list[dict]:
    pages = sorted(p for p in docs.rglob("*.md"))
    random.shuffle(pages)
    log: list[dict] = []

    def record(kind: str, waited: tuple[float, float, float], wall_start: float) -> None:
        seconds, query, seen = waited
        committed = reader.committed_at(reader.last_generation) if seconds == seconds else None
        log.append({"kind": kind, "seconds": seconds, "at": wall_start, "query": query, "seen": seen,
                    "committed": committed, "load": load_average()})
        print(f"  {kind:7s} {seconds:6.1f} s (its query {query:.2f} s; load {load_average():.1f})", flush=True)

    added: list[tuple[Path, str]] = []
    for i in range(n):
        time.sleep(random.uniform(*pause))
        kind = kinds[i % len(kinds)]
        word, wall, t0 = marker(), time.time(), time.monotonic()
        if kind == "edit":  # a word appended to a page, as a user adds one and saves
            page = pages[i % len(pages)]
            with open(page, "a") as f:
                f.write(f" {word}\n")
            record(kind, reader.wait(shows(reader, word, page.relative_to(docs).as_posix()), t0), wall)
        elif kind == "add":
            page = docs / "freshness" / f"probe-{i}.md"
            page.parent.mkdir(exist_ok=True)
            page.write_text(f"# Probe page {i}\n\n## Probe section\n\nThe freshness probe {word} is recorded here.\n")
            added.append((page, word))
            record(kind, reader.wait(shows(reader, word, page.relative_to(docs).as_posix()), t0), wall)
        elif kind == "rename" and added:
            page, old_word = added.pop()
            new = page.with_name(page.stem + "-renamed.md")
            page.rename(new)
            added.append((new, old_word))
            old_rel, new_rel = page.relative_to(docs).as_posix(), new.relative_to(docs).as_posix()
            record(kind, reader.wait(lambda: shows(reader, old_word, new_rel)()
                                     and absent(reader, old_word, old_rel)(), t0), wall)
        elif kind == "delete" and added:
            page, old_word = added.pop(0)
            page.unlink()
            record(kind, reader.wait(absent(reader, old_word, page.relative_to(docs).as_posix()), t0), wall)
    for _ in range(bursts):
        time.sleep(random.uniform(*pause))
        words = {p: marker() for p in random.sample(pages, 10)}
        wall, t0 = time.time(), time.monotonic()
        for page, word in words.items():
            with open(page, "a") as f:
                f.write(f" {word}\n")
        pending = dict(words)
        while pending and time.monotonic() - t0 < TIMEOUT_SECONDS:
            for page, word in list(pending.items()):
                if shows(reader, word, page.relative_to(docs).as_posix())():
                    record("burst", (time.monotonic() - t0, reader.last_seconds, time.time()), wall)
                    del pending[page]
            time.sleep(POLL_SECONDS)
        for _ in pending:
            record("burst", (float("nan"), float("nan"), float("nan")), wall)
    return log


def breakdown(changes: list[dict], dagster: Dagster) -> tuple[list[dict], dict[str, list[float]]]:
    """Each single change's phases (PHASES; None where a part could not be read), and every step's
    seconds over those changes' first runs."""
    ticks = sorted(dagster.ticks("docs_sensor"), key=lambda t: t["timestamp"])
    index_runs = sorted((r for r in dagster.runs() if any(t["key"] == "rag/run" and t["value"] == "index" for t in r["tags"])),
                        key=lambda r: r["creationTime"])
    rows, steps = [], {}
    for change in changes:
        row = {"kind": change["kind"], "total": change["seconds"], "load": change["load"]}
        run = next((r for r in index_runs if r["creationTime"] >= change["at"]), None)
        tick = next((t for t in ticks if run and run["runId"] in t["runIds"]), None)
        events = dagster.events(run["runId"]) if run else []
        first = {}
        for kind, at, step in events:
            first.setdefault(kind, at)
        starting, started = first.get("RunStartingEvent"), first.get("RunStartEvent")
        commit, seen = change.get("committed"), change.get("seen")
        marks = [change["at"], tick and tick["timestamp"], run and run["creationTime"], starting, started, commit, seen]
        for name, (a, b) in zip(PHASES, zip(marks, marks[1:])):
            row[name] = (b - a) if a is not None and b is not None else None
        rows.append(row)
        open_steps: dict[str, float] = {}
        for kind, at, step in events:
            if kind == "ExecutionStepStartEvent":
                open_steps[step] = at
            elif kind in ("ExecutionStepSuccessEvent", "ExecutionStepFailureEvent") and step in open_steps:
                steps.setdefault(step, []).append(at - open_steps.pop(step))
    return rows, steps


def pct(values: list[float], p: float) -> float:
    values = sorted(v for v in values if v is not None and v == v)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, max(0, round(p / 100 * len(values) + 0.5) - 1))]


def report(log: list[dict], rows: list[dict], steps: dict[str, list[float]], label: str, reader_errors: int) -> str:
    loads = [c["load"] for c in log]
    lines = [f"### {label}", "",
             f"Load average (1 min) at each change: {min(loads):.1f}-{max(loads):.1f} (median "
             f"{statistics.median(loads):.1f}). Reader queries that raised: {reader_errors}.", "",
             "| change | n | p50 s | p95 s | max s | timed out |", "|---|---|---|---|---|---|"]
    for kind in ("edit", "add", "rename", "delete", "burst"):
        vals = [c["seconds"] for c in log if c["kind"] == kind]
        if vals:
            ok = [v for v in vals if v == v]
            lines.append(f"| {kind} | {len(vals)} | {pct(ok, 50):.1f} | {pct(ok, 95):.1f} | "
                         f"{max(ok) if ok else float('nan'):.1f} | {len(vals) - len(ok)} |")
    lines += ["", "Where the time goes (single changes, seconds; the parts add up to the total):", "",
              "| change | total | " + " | ".join(PHASES) + " | load |", "|---|---|" + "---|" * len(PHASES) + "---|"]
    fmt = lambda v: "-" if v is None or v != v else f"{v:.2f}"  # noqa: E731
    for row in rows:
        lines.append(f"| {row['kind']} | {fmt(row['total'])} | " + " | ".join(fmt(row[p]) for p in PHASES)
                     + f" | {row['load']:.1f} |")
    lines.append("| p50 | " + fmt(pct([r["total"] for r in rows], 50)) + " | "
                 + " | ".join(fmt(pct([r[p] for r in rows], 50)) for p in PHASES) + " | |")
    if steps:
        lines += ["", "The runs' steps (p50 / max s): " + ", ".join(
            f"{step} {pct(v, 50):.2f} / {max(v):.2f}" for step, v in steps.items()) + "."]
    return "\n".join(lines) + "\n"


def _spin() -> None:
    while True:
        pass


def run_once(args, kinds: list[str], load: int) -> str:
    """The benchmark once, in a fresh scratch folder, with `load` busy processes beside it: its table."""
    print(f"load average at the start: {load_average():.2f} ({load} busy processes to add)", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="rag-freshness-"))
    shutil.copytree(REPO / "data" / "docs", scratch / "docs")
    shutil.copytree(REPO / "data" / "eval", scratch / "eval")
    env = scratch_env(scratch)
    dagster = watcher = None
    spinners: list[multiprocessing.Process] = []
    try:
        t0 = time.monotonic()
        subprocess.run([str(Path(sys.executable).with_name("rag")), "ingest", "--json"], cwd=REPO, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        print(f"initial ingest {time.monotonic() - t0:.0f} s", flush=True)
        reader = Reader(env, args.reader)  # the service is up before the orchestrator
        reader.docs_for("warm the reader up")
        dagster = Dagster(env, scratch / "dagster-dev.log")
        dagster.wait_loaded()
        dagster.start_sensor("docs_sensor")
        if args.watch:
            watcher = subprocess.Popen([str(Path(sys.executable).with_name("rag")), "watch", "--url", dagster.url],
                                       cwd=REPO, env=env, stdout=open(scratch / "watch.log", "wb"),
                                       stderr=subprocess.STDOUT, start_new_session=True)
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(load)]
        for spinner in spinners:
            spinner.start()
        time.sleep(10)  # the first sensor tick only takes the folder's snapshot
        log = run_changes(reader, scratch / "docs", kinds, args.changes, args.bursts, tuple(args.pause))
        rows, steps = breakdown([c for c in log if c["kind"] != "burst"], dagster)
        label = (f"{args.label} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
                 f"{f', {load} busy processes beside it' if load else ''})")
        return report(log, rows, steps, label, reader.errors)
    finally:
        for spinner in spinners:
            spinner.terminate()
        if watcher:
            watcher.send_signal(signal.SIGINT)
            try:
                watcher.wait(timeout=20)
            except subprocess.TimeoutExpired:
                watcher.kill()
            print((scratch / "watch.log").read_text()[-2000:])
        if dagster:
            dagster.stop()
        if args.keep:
            print(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=6, help="single changes (default 6)")
    parser.add_argument("--kinds", default="edit", help="the cycle of single changes: edit, add, rename, delete "
                                                        "(default: edit only, a word appended)")
    parser.add_argument("--bursts", type=int, default=0, help="bursts of 10 simultaneous edits")
    parser.add_argument("--pause", type=float, nargs=2, default=(8.0, 20.0), metavar=("MIN", "MAX"),
                        help="seconds between a change being found and the next one (a user's pace; default 8 20)")
    parser.add_argument("--loads", type=int, nargs="+", default=[0], metavar="N",
                        help="run once per N: with N busy processes beside it (0: as the machine is; '--loads 0 2' "
                             "gives the quiet and the load-2 figures of a quiet machine in one command)")
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--out", type=Path, help="append the result tables to this markdown file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--watch", action="store_true",
                        help="also run `rag watch` beside dagster dev (the sensor stays on and stands back)")
    parser.add_argument("--reader", choices=("retrieve", "search"), default="retrieve",
                        help="how the long-lived pipeline is asked (see Reader)")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for load in args.loads:
        table = run_once(args, kinds, load)
        print("\n" + table, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write("\n" + table)


if __name__ == "__main__":
    main()
