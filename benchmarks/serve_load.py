"""`rag serve` under load: 20 concurrent clients for 60 s on 127.0.0.1, p50/p95 search latency and errors,
at the bundled corpus, at 10,000 chunks, and at the bundled corpus while `rag ingest` of the same corpus
runs over and over (results must never mix two versions of a document). Also `rag query` through the
running server (median of 5 cold CLI processes).

The script starts and stops every server itself (`rag serve --port 0`, SIGTERM at the end):

- bundled: data/docs copied into the workdir and indexed with the real `rag ingest` (Dagster, a
  scratch DAGSTER_HOME), collection rag_chunks;
- 10,000 chunks: benchmarks/retrieval_latency.py's scaled collection (the bundled chunks replicated
  with noisy vectors, no re-embedding), served as the default corpus of its own state folder;
- during ingest: a page ``serve-bench-revisions.md`` with 6 sections, each saying ``revision R``, is
  rewritten with R+1 and `rag ingest` is run again, in a loop, for the whole run; one client in five
  asks for that page's sections and the benchmark checks that every answer holds one revision only.

Each client is a thread with its own keep-alive connection, asking the 100 questions of
data/eval/claude-docs.jsonl in its own shuffled order, top_k 5, hybrid. Two query kinds:
``repeated`` (the questions as they are: after the first pass the server's result cache answers) and
``unique`` (each question with a unique suffix: every request embeds and ranks). Latency is measured
by the client (send to last byte); the server's own time (``elapsed_ms``) is reported beside it.

    python benchmarks/serve_load.py [--workdir /tmp/serve/load] [--seconds 60] [--clients 20]
        [--scenarios bundled,bundled-unique,10k-unique,ingest] [--rate R] [--json]

Nothing is written to the repository. The 1-minute load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
RAG = str(Path(sys.executable).with_name("rag"))
MARKER_PAGE = "serve-bench-revisions.md"
MARKER_QUERY = "zebra lighthouse protocol revision part"


def questions() -> list[str]:
    path = ROOT / "data" / "eval" / "claude-docs.jsonl"
    return [json.loads(line)["question"] for line in path.open(encoding="utf-8") if line.strip()]


def marker_page(revision: int) -> str:
    parts = [f"## Part {k}\n\nThe zebra lighthouse protocol is at revision {revision}, part {k}. "
             f"Every part of this page names the same revision ({revision})." for k in range(1, 7)]
    return "# Zebra lighthouse protocol\n\n" + "\n\n".join(parts) + "\n"


def env_for(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "OPENAI_", "CHROMA_"))}
    env.update({"RAG_DOCS_DIR": str(root / "docs"), "RAG_CHROMA_PATH": str(root / "chroma"),
                "RAG_STATE_DIR": str(root / "state"), "RAG_CACHE_DIR": str(root / "cache"),
                "RAG_EVAL_DIR": str(root / "eval"), "RAG_EVAL_RESULTS_DIR": str(root / "eval_results"),
                "RAG_CORPORA_DIR": str(root / "corpora"), "DAGSTER_HOME": str(root / "dagster_home"),
                "NO_PROXY": "127.0.0.1,localhost"})
    env.update(extra)
    return env


def ensure_bundled(workdir: Path) -> dict[str, str]:
    """data/docs (and the marker page, revision 0) indexed with the real `rag ingest`."""
    root = workdir / "bundled"
    env = env_for(root)
    if not (root / "state" / ".ingested").exists():
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(ROOT / "data" / "docs", root / "docs")
        (root / "docs" / MARKER_PAGE).write_text(marker_page(0), encoding="utf-8")
        home = root / "dagster_home"
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text().replace("data/dagster", str(root / "dagster")))
        start = time.perf_counter()
        subprocess.run([RAG, "ingest", "--quiet"], env=env, check=True, cwd=ROOT, stdout=sys.stderr)  # stdout: --json
        print(f"bundled corpus ingested in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        (root / "state" / ".ingested").write_text("ok")
    return env


def ensure_10k(workdir: Path, bundled_env: dict[str, str]) -> dict[str, str]:
    """10,000 chunks: retrieval_latency's scaled collection, made from the bundled index's chunks."""
    from rag_assets.embedding import load_embedder
    from retrieval_latency import _settings, ensure_scaled, ensure_source

    scale = workdir / "scaled"
    settings = _settings(scale, "scale_10000")
    embedder = load_embedder(settings.embedding)
    source = ensure_source(scale, embedder, source_chroma=bundled_env["RAG_CHROMA_PATH"])
    print(json.dumps(ensure_scaled(scale, embedder, source, 10_000, 0.01)), file=sys.stderr)
    env = env_for(scale / "serve")
    env.update({"RAG_DOCS_DIR": str(settings.docs_dir), "RAG_CHROMA_PATH": str(settings.chroma_path),
                "RAG_STATE_DIR": str(settings.state_dir), "RAG_CACHE_DIR": str(settings.cache_dir),
                "RAG_COLLECTION": settings.collection})
    return env


class Server:
    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen([RAG, "serve", "--port", "0", "--corpus", "default"], env=env, cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stderr], [], [], 1.0)
            if ready:
                line = self.proc.stderr.readline()
                self.log.append(line)
                found = re.search(r"listening on http://([\d.]+):(\d+)", line)
                if found:
                    self.host, self.port = found.group(1), int(found.group(2))
                    threading.Thread(target=self._drain, daemon=True).start()
                    return
            if self.proc.poll() is not None:
                break
        raise RuntimeError("rag serve did not start:\n" + "".join(self.log[-30:]))

    def _drain(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server process has used so far, all its threads."""
        import psutil

        times = psutil.Process(self.proc.pid).cpu_times()
        return times.user + times.system

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


def run_load(server: Server, seconds: float, clients: int, unique: bool, marker_every: int = 0,
             rate: float = 0.0) -> dict:
    """clients threads asking back to back (rate 0: closed loop, the server saturated), or each at most
    `rate` requests a second (an open load: a chat backend's users, not a flood)."""
    qs = questions()
    latencies: list[float] = []
    server_ms: list[float] = []
    errors: list[str] = []
    mixed: list[str] = []
    marker_answers = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    counter = [0]

    def client(n: int) -> None:
        rng = random.Random(n)
        order = qs[:]
        rng.shuffle(order)
        conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
        i = 0
        next_at = time.monotonic() + (rng.random() / rate if rate else 0.0)
        while time.monotonic() < stop_at:
            if rate:
                pause = next_at - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                next_at += 1.0 / rate
            marker = marker_every and i % marker_every == marker_every - 1
            question = MARKER_QUERY if marker else order[i % len(order)]
            with lock:
                counter[0] += 1
                tag = counter[0]
            if unique and not marker:
                question = f"{question} (request {tag})"
            body = json.dumps({"query": question, "top_k": 6 if marker else 5})
            start = time.perf_counter()
            try:
                conn.request("POST", "/search", body, {"Content-Type": "application/json"})
                response = conn.getresponse()
                payload = response.read()
                elapsed = (time.perf_counter() - start) * 1000
                if response.status != 200:
                    with lock:
                        errors.append(f"{response.status}: {payload[:200]!r}")
                else:
                    data = json.loads(payload)
                    with lock:
                        latencies.append(elapsed)
                        server_ms.append(float(data.get("elapsed_ms", 0.0)))
                    if marker:
                        revisions = {m for r in data["results"] if r["doc_path"] == MARKER_PAGE
                                     for m in re.findall(r"revision (\d+)", r["text"])}
                        with lock:
                            marker_answers[0] += 1
                            if len(revisions) > 1:
                                mixed.append(f"generation {data.get('generation')}: revisions {sorted(revisions)}")
            except Exception as exc:  # noqa: BLE001 - counted as an error, the client reconnects
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                conn.close()
                conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
            i += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    load_before = os.getloadavg()[0]
    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    cpu = server.cpu_seconds() - cpu_before
    return {"requests": len(latencies) + len(errors), "errors": len(errors), "error_samples": errors[:5],
            "throughput_rps": round(len(latencies) / wall, 1), "client_ms": summary(latencies),
            "server_ms": summary(server_ms),
            # the server's CPU (all threads) per answered request, and its share of the machine's cores
            "server_cpu_ms_per_request": round(1000 * cpu / max(len(latencies), 1), 1),
            "server_cpu_cores": round(cpu / wall, 2), "load1_before": round(load_before, 2),
            "load1_after": round(os.getloadavg()[0], 2), "marker_answers": marker_answers[0],
            "mixed_versions": mixed[:5], "mixed_count": len(mixed)}


def summary(ms: list[float]) -> dict:
    if not ms:
        return {}
    ordered = sorted(ms)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 1)

    return {"p50": pct(50), "p95": pct(95), "p99": pct(99), "max": round(ordered[-1], 1), "n": len(ms)}


def ingest_loop(env: dict[str, str], stop: threading.Event, record: dict) -> None:
    """Rewrite the marker page with the next revision and run `rag ingest`, until stopped."""
    revision = 0
    page = Path(env["RAG_DOCS_DIR"]) / MARKER_PAGE
    while not stop.is_set():
        revision += 1
        page.write_text(marker_page(revision), encoding="utf-8")
        start = time.perf_counter()
        done = subprocess.run([RAG, "ingest", "--quiet"], env=env, cwd=ROOT, capture_output=True, text=True)
        record["ingests"].append({"revision": revision, "exit": done.returncode,
                                  "seconds": round(time.perf_counter() - start, 1)})


def cli_via_server(env: dict[str, str], runs: int = 5) -> dict:
    """`rag query` (a cold CLI process) while the server runs: wall time, median of `runs`."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([RAG, "query", "How do I stream responses?"], env=env, cwd=ROOT, check=True,
                       capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "runs_ms": [round(t, 1) for t in times],
            "load1": round(os.getloadavg()[0], 2)}


def machine() -> dict:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/serve/load")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--scenarios", default="bundled,bundled-unique,10k-unique,ingest")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="requests a second per client (default 0: back to back, the server saturated)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    scenarios = args.scenarios.split(",")
    report: dict = {"machine": machine(), "seconds": args.seconds, "clients": args.clients, "rate": args.rate,
                    "scenarios": {}}
    bundled = ensure_bundled(workdir)
    for name in scenarios:
        env = ensure_10k(workdir, bundled) if name.startswith("10k") else bundled
        server = Server(env)
        try:
            if name == "ingest":
                record: dict = {"ingests": []}
                stop = threading.Event()
                loop = threading.Thread(target=ingest_loop, args=(env, stop, record))
                loop.start()
                try:
                    result = run_load(server, args.seconds, args.clients, unique=True, marker_every=5, rate=args.rate)
                finally:
                    stop.set()
                    loop.join()
                result["ingests"] = record["ingests"]
            else:
                result = run_load(server, args.seconds, args.clients, unique=name.endswith("unique"), rate=args.rate)
            if name == "bundled":
                result["rag_query_via_server"] = cli_via_server(env)
        finally:
            result_exit = server.stop()
        result["server_exit"] = result_exit
        result["server_log_tail"] = [line.rstrip() for line in server.log[-3:]]
        report["scenarios"][name] = result
        print(f"{name}: {json.dumps({k: v for k, v in result.items() if k != 'server_log_tail'})}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, r in report["scenarios"].items():
            c, s = r["client_ms"], r["server_ms"]
            print(f"{name:16} {r['requests']:6} req {r['errors']} err {r['throughput_rps']:7} rps  client p50 "
                  f"{c.get('p50')} p95 {c.get('p95')} ms  server p50 {s.get('p50')} p95 {s.get('p95')} ms  "
                  f"server CPU {r['server_cpu_ms_per_request']} ms/req ({r['server_cpu_cores']} cores)  "
                  f"load {r['load1_before']}->{r['load1_after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
