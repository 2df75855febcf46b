"""`rag watch`: follow the docs folder and queue the runs each save needs, next to `rag ui`.

The runs are submitted to the Dagster webserver (`rag ui` / `dagster dev`, default
http://127.0.0.1:3000), whose daemon starts them: a saved file is searchable in about 3 s instead of
the ~8 s the sensor alone takes (rag_assets.orchestration.watch, benchmarks/freshness.md).
"""

from __future__ import annotations

import signal
import sys
import threading


def add_parser(sub) -> None:
    p = sub.add_parser(
        "watch", help="follow the docs folder and queue a run for every save (next to `rag ui`)",
        description="Follow the docs folder with file events and submit the runs each change needs to the Dagster "
                    "webserver (`rag ui`), which starts them. While it runs, docs_sensor stands back. Ctrl-C stops it.")
    p.add_argument("--url", default="http://127.0.0.1:3000",
                   help="the Dagster webserver (default http://127.0.0.1:3000, where `rag ui` listens)")
    p.add_argument("--docs-dir", help="docs folder (default: RAG_DOCS_DIR or data/docs)")


def run(args) -> int:
    from rag_assets.orchestration.instance import get_instance
    from rag_assets.orchestration.loaded_corpora import corpus_definitions, index_resources
    from rag_assets.orchestration.watch import DocsWatcher, GraphQLSubmitter

    settings = args.corpus.settings()
    if not settings.docs_dir.is_dir():
        raise FileNotFoundError(2, "No such directory", str(settings.docs_dir))
    stop = stop_on_signals()
    say = lambda line: print(line, flush=True)  # noqa: E731
    submitter = GraphQLSubmitter(args.url)
    if not submitter.reachable():
        print(f"rag watch: waiting for the Dagster webserver at {submitter.url} (start it with `rag ui`)", file=sys.stderr)
        while not submitter.reachable():
            if stop.wait(1):
                say("rag watch: stopped before the webserver answered")
                return 0
    instance = get_instance()
    say(f"rag watch: following {settings.docs_dir} (corpus {args.corpus.name}); runs go to {submitter.url}; "
        "Ctrl-C stops")
    DocsWatcher(corpus_definitions(args.corpus), instance, submitter, index_resources(),
                say=say).follow(stop_event=stop)
    say("rag watch: stopped; docs_sensor follows the folder again")
    return 0


def stop_on_signals() -> threading.Event:
    """An event set by Ctrl-C (SIGINT) or SIGTERM: the watcher finishes the look it is in, removes its
    heartbeat and exits 0; a second signal interrupts at once.

    Installed explicitly because a shell's `rag watch &` (and anything started from a background job)
    leaves SIGINT ignored in the child, and SIGTERM, what service managers send, would otherwise kill the
    watcher without a word."""
    stop = threading.Event()

    def handle(signum, _frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)
    return stop
