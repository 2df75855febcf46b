"""`rag ui`: the Dagster web UI (`dagster dev`) on this project's instance.

Plain `dagster dev` without DAGSTER_HOME warns that it uses a temporary home and leaves a
`.tmp_dagster_home_*` folder behind, although the project's own instance (the repo's dagster.yaml)
is what `rag ingest` writes to. This command sets DAGSTER_HOME the way every `rag` command does.

Nothing it starts outlives it. `dagster dev` runs as its child in a session of its own; Ctrl-C,
SIGTERM or SIGHUP to `rag ui` is passed on to it once (Dagster maps SIGTERM onto its SIGINT
handler), and if it has not stopped after STOP_SECONDS its whole process group is killed. Run
workers do not die with it: the warm run launcher (rag_assets.orchestration.warm_launcher) starts
each in a session of its own, so a run in progress went on as an orphan after the UI had stopped.
Every process started under the UI carries RAG_UI_SESSION (a fresh id) in its environment; once
`dagster dev` has exited, each one still alive is interrupted (SIGINT: Dagster cancels the run it
executes) and killed if it is still there after WORKER_GRACE_SECONDS. Exit status: `dagster dev`'s,
or 130 / 143 when stopped by SIGINT / SIGTERM. On Linux `dagster dev` also gets SIGTERM if `rag ui`
itself is killed (SIGKILL leaves no chance to clean up: run workers then go on until their run ends).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rag_assets.config import SWITCHES

SESSION_ENV = SWITCHES["ui_session"].env
STOP_SECONDS = 30.0  # for `dagster dev` to stop its webserver, daemon and code server after a signal
WORKER_GRACE_SECONDS = 15.0  # for a run worker it left behind to cancel its run after SIGINT


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
    session = uuid.uuid4().hex
    print(f"rag: Dagster UI at http://{args.host}:{args.port} (instance: {home}); Ctrl-C stops it", file=sys.stderr)
    # a shell's `cmd &` leaves SIGINT ignored, and a child inherits that; Dagster stops on SIGINT/SIGTERM only if not
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    child = subprocess.Popen(command(args.host, args.port), env={**os.environ, SESSION_ENV: session},
                             start_new_session=True, preexec_fn=_stop_with_parent)
    received: list[int] = []

    def pass_on(signum, _frame) -> None:
        first = not received
        received.append(signum)
        if first or signum == signal.SIGINT:  # a second Ctrl-C asks Dagster to hurry
            _signal_group(child.pid, signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, pass_on)
    try:
        code = _wait(child, received)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # the clean-up below is not cut short
        stopped = stop_leftovers(session)
    if stopped:
        print(f"rag: stopped {len(stopped)} process(es) the UI had started that outlived it: "
              f"{', '.join(stopped)}", file=sys.stderr)
    if received:
        return 130 if received[0] == signal.SIGINT else 143
    return code


def _wait(child: subprocess.Popen, received: list[int]) -> int:
    """`dagster dev`'s exit status; its process group is killed if it outlives a signal by STOP_SECONDS."""
    signalled_at: float | None = None
    while True:
        try:
            return child.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            if not received:
                continue
            signalled_at = signalled_at or time.monotonic()
            if time.monotonic() - signalled_at > STOP_SECONDS:
                _signal_group(child.pid, signal.SIGKILL)


def _stop_with_parent() -> None:
    """In the child, before exec (Linux): SIGTERM when the process that started it dies, however it dies."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def leftovers(session: str) -> list:
    """The processes (psutil) still alive whose environment carries this UI's session id."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(SESSION_ENV) == session:
                found.append(proc)
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or another user's
    return found


def stop_leftovers(session: str, grace: float = WORKER_GRACE_SECONDS) -> list[str]:
    """Interrupt every process of this UI session still alive (a run worker cancels its run), kill
    whatever is left after `grace` seconds; each as "pid (what it ran)"."""
    import psutil

    procs = leftovers(session)
    names = []
    for proc in procs:
        try:
            names.append(f"{proc.pid} ({' '.join(proc.cmdline()[1:4])[:80]})")
        except psutil.Error:
            names.append(str(proc.pid))
    for proc in procs:
        try:
            proc.send_signal(signal.SIGINT)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    return names
