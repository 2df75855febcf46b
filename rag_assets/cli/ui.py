"""`rag ui`: the Dagster web UI (`dagster dev`) on this project's instance.

Plain `dagster dev` without DAGSTER_HOME warns that it uses a temporary home and leaves a
`.tmp_dagster_home_*` folder behind, although the project's own instance (the repo's dagster.yaml)
is what `rag ingest` writes to. This command sets DAGSTER_HOME the way every `rag` command does,
then replaces itself with `dagster dev` (so Ctrl-C and SIGTERM reach Dagster directly).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("ui", help="open the Dagster web UI (dagster dev) on this project's instance")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port (default 3000)")


PROJECT_ROOT = Path(__file__).resolve().parents[2]


def command(host: str, port: int) -> list[str]:
    dagster = str(Path(sys.executable).with_name("dagster"))
    workspace = PROJECT_ROOT / "workspace.yaml"
    target = ["-w", str(workspace)] if workspace.exists() else ["-m", "rag_assets"]
    return [dagster, "dev", *target, "-h", host, "-p", str(port)]


def run(args) -> int:
    from rag_assets.orchestration.noop_check import dagster_home

    home = dagster_home()
    argv = command(args.host, args.port)
    print(f"rag: Dagster UI at http://{args.host}:{args.port} (instance: {home}); Ctrl-C stops it", file=sys.stderr)
    # a shell's `cmd &` leaves SIGINT ignored in the child; Dagster stops on SIGINT/SIGTERM only if it is not
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execv(argv[0], argv)
    return 0  # not reached
