"""`dagster dev` on this repo's workspace.yaml for tests: started in its own session, driven over
GraphQL, stopped with its daemon and code server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from rag_assets_tests.support.dagster_instance import instance_yaml
from rag_assets_tests.support.environment import subprocess_env

REPO = Path(__file__).resolve().parents[2]
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Webserver:
    def __init__(self, port: int, log: Path):
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def gql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = json.load(response)
        assert "errors" not in payload, payload["errors"]
        return payload["data"]

    def runs(self) -> list[dict]:
        data = self.gql("{ runsOrError { ... on Runs { results { runId status assetSelection { path } "
                        "tags { key value } } } } }")
        return data["runsOrError"]["results"]

    def wait_for_runs(self, count: int, timeout: float = 120) -> list[dict]:
        """Wait until at least `count` runs exist and all of them have finished."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.runs()
            if len(runs) >= count and all(r["status"] in TERMINAL for r in runs):
                return runs
            time.sleep(0.5)
        pytest.fail(f"runs not finished after {timeout} s: {self.runs()}\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""



def dagster_dev_env(tmp_path: Path, **extra: str) -> dict:
    """The environment of a `dagster dev` whose instance (the repo's dagster.yaml) and every piece of
    state are under tmp_path."""
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text(instance_yaml(tmp_path / "dagster"))
    return subprocess_env(tmp_path, DAGSTER_HOME=str(home), DAGSTER_DISABLE_TELEMETRY="1", **extra)


@contextmanager
def dagster_dev(tmp_path: Path, env: dict, assets: set[str]):
    """`dagster dev` with `env` (its DAGSTER_HOME), once its code location is loaded with `assets`."""
    port = free_port()
    log = tmp_path / "dagster-dev.log"
    dagster = Path(sys.executable).with_name("dagster")
    with open(log, "wb") as out:
        # its own session: SIGTERM to the group stops the webserver, the daemon and the code server
        proc = subprocess.Popen(
            [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    server = Webserver(port, log)
    try:
        wait_until_loaded(server, proc, assets)
        yield server
    finally:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass


def wait_until_loaded(server: Webserver, proc: subprocess.Popen, assets: set[str], timeout: float = 90) -> None:
    """/server_info answers, then the code location is loaded and its assets are in the graph."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"dagster dev exited with {proc.returncode}:\n{server.tail()}")
        try:
            urllib.request.urlopen(f"{server.url}/server_info", timeout=2).read()
            data = server.gql("{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
                              "locationOrLoadError { __typename ... on PythonError { message } } } } } }")
            entries = data["workspaceOrError"]["locationEntries"]
            errors = [e for e in entries if e["locationOrLoadError"]
                      and e["locationOrLoadError"]["__typename"] == "PythonError"]
            assert not errors, errors
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                nodes = server.gql("{ assetNodes { assetKey { path } } }")["assetNodes"]
                if {n["assetKey"]["path"][-1] for n in nodes} >= set(assets):
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    pytest.fail(f"the webserver did not load the code location within {timeout} s:\n{server.tail()}")
