"""Time to searchable: from saving a file to `rag query` seeing it, under `dagster dev` with docs_sensor on.

Run by hand from the repo root (results: benchmarks/freshness.md):

    .venv/bin/python benchmarks/freshness.py --changes 20 --bursts 2

What it does: copies the bundled corpus and eval set into a scratch folder, indexes it with
`rag ingest`, starts `dagster dev` on the repo's workspace with a copy of the repo's dagster.yaml
(only its storage paths moved into the scratch folder), switches docs_sensor on, and keeps one
long-lived reader (a RAGPipeline in this process, made before `dagster dev` starts and asked through
retrieve(), as a chat backend holds one: --reader) that polls every 0.25 s. It then makes changes one at a time — edit (a new sentence appended to a page), add (a new
page), rename, delete — and bursts of 10 edits at once, and times each from the write to the first
query whose results show it (the page's chunk with the new sentence among the top 5; the renamed page under
its new path only; the deleted page in no result). Runs are read back over GraphQL to split each
change's time into: until the sensor asked (tick), queued, run start to end; and the reader's own share,
how long the query that first showed the change took.

With --watch, `rag watch` runs beside `dagster dev` (rag_assets.orchestration.watch) and asks for
the runs on file events; the sensor stays on and stands back while the watcher's heartbeat is fresh.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

    def gql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(f"{self.url}/graphql", body, {"Content-Type": "application/json"})
        data = json.loads(urllib.request.urlopen(req, timeout=30).read())
        if data.get("errors"):
            raise RuntimeError(data["errors"])
        return data["data"]

    def wait_loaded(self, timeout: float = 180) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"dagster dev exited:\n{self.log.read_text()[-3000:]}")
            try:
                repos = self.gql("{ repositoriesOrError { ... on RepositoryConnection { nodes { name "
                                 "location { name } } } } }")["repositoriesOrError"]["nodes"]
                if repos:
                    return repos[0]["location"]["name"], repos[0]["name"]
            except Exception:
                pass
            time.sleep(0.5)
        sys.exit("dagster dev did not load the code location")

    def start_sensor(self, location: str, repository: str, name: str) -> None:
        data = self.gql(
            "mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename "
            "... on PythonError { message } } }",
            {"s": {"repositoryLocationName": location, "repositoryName": repository, "sensorName": name}})
        assert data["startSensor"]["__typename"] == "Sensor", data

    def runs(self) -> list[dict]:
        data = self.gql("{ runsOrError(limit: 500) { ... on Runs { results { runId status creationTime "
                        "startTime endTime tags { key value } } } } }")
        return data["runsOrError"]["results"]

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
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "RAG_DOCS_DIR": str(scratch / "docs"),
        "RAG_EVAL_DIR": str(scratch / "eval"),
        "RAG_CHROMA_PATH": str(scratch / "chroma"),
        "RAG_STATE_DIR": str(scratch / "state"),
        "RAG_CACHE_DIR": str(scratch / "cache"),
        "RAG_EVAL_RESULTS_DIR": str(scratch / "eval_results"),
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }


class Reader:
    """One long-lived pipeline, as a chat backend holds one: made once when the service starts (before
    `dagster dev` here) and asked through ``retrieve(RetrieveRequest(...))`` (``--reader retrieve``, the
    default: the result cache, the threshold gate and the contexts a backend hands on; the probe's
    made-up words are under any relevance threshold, so the gate is off for it) or ``search()``
    (``--reader search``: the ranking alone, what this benchmark asked before). A query that raises is a
    finding: counted and printed, and the poll goes on. ``last_seconds``: how long the last query took
    (the one that first showed a change: the reader's own share of the time to searchable)."""

    def __init__(self, env: dict, how: str = "retrieve"):
        os.environ.update(env)
        from rag_assets.pipeline import RAGPipeline

        self.pipeline = RAGPipeline.from_settings()
        self.how = how
        self.errors = 0
        self.last_seconds = 0.0

    def docs_for(self, text: str) -> list:
        from rag_assets.retrieval.context import RetrieveRequest

        started = time.perf_counter()
        try:
            if self.how == "search":
                return self.pipeline.search(text, None, 5)
            return self.pipeline.retrieve(RetrieveRequest(text, max_chunks=5, min_relevance=-1.0)).document_chunks
        except Exception as exc:
            self.errors += 1
            print(f"  reader: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            return []
        finally:
            self.last_seconds = time.perf_counter() - started

    def wait(self, done, started: float) -> tuple[float, float]:
        """(seconds from `started` to the first query that shows it, that query's own seconds)."""
        while time.monotonic() - started < TIMEOUT_SECONDS:
            if done():
                return time.monotonic() - started, self.last_seconds
            time.sleep(POLL_SECONDS)
        return float("nan"), float("nan")


def marker() -> str:
    return "zq" + "".join(random.choice("bcdfghjklmnpqrstvwxz") for _ in range(8))


def sentence(word: str) -> str:
    return f"\n\nThe freshness probe {word} is recorded in this paragraph for the benchmark.\n"


def shows(reader: Reader, word: str, doc_path: str):
    """The page's chunk with the new sentence is among the query's results (top 5)."""
    def done() -> bool:
        return any(r.doc_path == doc_path and word in r.text for r in reader.docs_for(f"freshness probe {word}"))
    return done


def absent(reader: Reader, word: str, doc_path: str):
    def done() -> bool:
        return all(r.doc_path != doc_path for r in reader.docs_for(f"freshness probe {word}"))
    return done


def run_changes(reader: Reader, docs: Path, n: int, bursts: int) -> list[dict]:
    pages = sorted(p for p in docs.rglob("*.md"))
    log: list[dict] = []

    def record(kind: str, waited: tuple[float, float], wall_start: float) -> None:
        seconds, query = waited
        log.append({"kind": kind, "seconds": seconds, "at": wall_start, "query": query})
        print(f"  {kind:7s} {seconds:6.1f} s (its query {query:.2f} s)", flush=True)

    added: list[tuple[Path, str]] = []
    for i in range(n):
        kind = ("edit", "add", "edit", "rename", "delete")[i % 5]
        word, wall, t0 = marker(), time.time(), time.monotonic()
        if kind == "edit":
            page = pages[i % len(pages)]
            with open(page, "a") as f:
                f.write(sentence(word))
            record(kind, reader.wait(shows(reader, word, page.relative_to(docs).as_posix()), t0), wall)
        elif kind == "add":
            page = docs / "freshness" / f"probe-{i}.md"
            page.parent.mkdir(exist_ok=True)
            page.write_text(f"# Probe page {i}\n\n## Probe section\n{sentence(word)}")
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
        time.sleep(1.0)
    for b in range(bursts):
        chosen = random.sample(pages, 10)
        words = {p: marker() for p in chosen}
        wall, t0 = time.time(), time.monotonic()
        for page, word in words.items():
            with open(page, "a") as f:
                f.write(sentence(word))
        pending = dict(words)
        while pending and time.monotonic() - t0 < TIMEOUT_SECONDS:
            for page, word in list(pending.items()):
                if shows(reader, word, page.relative_to(docs).as_posix())():
                    record("burst", (time.monotonic() - t0, reader.last_seconds), wall)
                    del pending[page]
            time.sleep(POLL_SECONDS)
        for _ in pending:
            record("burst", (float("nan"), float("nan")), wall)
        time.sleep(1.0)
    return log


def phases(changes: list[dict], runs: list[dict]) -> dict[str, list[float]]:
    """For each change, the first ingestion run created after it: tick = its creation - the
    write, queued = its start - its creation, run = its end - its start; and reader = how long the
    query that first showed the change took."""
    index_runs = sorted((r for r in runs if not any(t["key"] == "rag/run" and t["value"] == "evaluation"
                                                    for t in r["tags"]) and r["startTime"]),
                        key=lambda r: r["creationTime"])
    out: dict[str, list[float]] = {"tick": [], "queued": [], "run": [], "reader": [c["query"] for c in changes]}
    for change in changes:
        run = next((r for r in index_runs if r["creationTime"] >= change["at"]), None)
        if run and run["endTime"]:
            out["tick"].append(run["creationTime"] - change["at"])
            out["queued"].append(run["startTime"] - run["creationTime"])
            out["run"].append(run["endTime"] - run["startTime"])
    return out


def pct(values: list[float], p: float) -> float:
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, max(0, round(p / 100 * len(values) + 0.5) - 1))]


def report(log: list[dict], phase: dict[str, list[float]], label: str, reader_errors: int) -> str:
    lines = [f"### {label}", "", f"Reader queries that raised: {reader_errors}.", "", "| change | n | p50 s | p95 s | max s | timed out |", "|---|---|---|---|---|---|"]
    for kind in ("edit", "add", "rename", "delete", "burst"):
        vals = [c["seconds"] for c in log if c["kind"] == kind]
        if vals:
            ok = [v for v in vals if v == v]
            lines.append(f"| {kind} | {len(vals)} | {pct(ok, 50):.1f} | {pct(ok, 95):.1f} | "
                         f"{max(ok) if ok else float('nan'):.1f} | {len(vals) - len(ok)} |")
    lines += ["", "| phase (single changes) | p50 s | p95 s |", "|---|---|---|"]
    for name, vals in phase.items():
        lines.append(f"| {name} | {pct(vals, 50):.1f} | {pct(vals, 95):.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=20, help="single changes (edit/add/edit/rename/delete cycle)")
    parser.add_argument("--bursts", type=int, default=2, help="bursts of 10 simultaneous edits")
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--out", type=Path, help="append the result table to this markdown file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--watch", action="store_true",
                        help="also run `rag watch` beside dagster dev (the sensor stays on and stands back)")
    parser.add_argument("--reader", choices=("retrieve", "search"), default="retrieve",
                        help="how the long-lived pipeline is asked (see Reader)")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="rag-freshness-"))
    shutil.copytree(REPO / "data" / "docs", scratch / "docs")
    shutil.copytree(REPO / "data" / "eval", scratch / "eval")
    env = scratch_env(scratch)
    dagster = watcher = None
    try:
        t0 = time.monotonic()
        subprocess.run([str(Path(sys.executable).with_name("rag")), "ingest", "--json"], cwd=REPO, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        print(f"initial ingest {time.monotonic() - t0:.0f} s", flush=True)
        reader = Reader(env, args.reader)  # the service is up before the orchestrator
        reader.docs_for("warm the reader up")
        dagster = Dagster(env, scratch / "dagster-dev.log")
        location, repository = dagster.wait_loaded()
        dagster.start_sensor(location, repository, "docs_sensor")
        if args.watch:
            watcher = subprocess.Popen([str(Path(sys.executable).with_name("rag")), "watch", "--url", dagster.url],
                                       cwd=REPO, env=env, stdout=open(scratch / "watch.log", "wb"),
                                       stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(10)  # the first sensor tick only takes the folder's snapshot
        singles_and_bursts = run_changes(reader, scratch / "docs", args.changes, args.bursts)
        singles = [c for c in singles_and_bursts if c["kind"] != "burst"]
        table = report(singles_and_bursts, phases(singles, dagster.runs()),
                       f"{args.label} ({time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.1f})", reader.errors)
        print("\n" + table)
        if args.out:
            with open(args.out, "a") as f:
                f.write("\n" + table)
    finally:
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


if __name__ == "__main__":
    main()
