"""`rag watch`: follow the docs folder and queue the runs each save needs, next to `rag ui`.

The runs are submitted to the Dagster webserver (`rag ui` / `dagster dev`, default
http://127.0.0.1:3000), whose daemon starts them: a saved file is searchable in about 3 s instead of
the ~8 s the sensor alone takes (rag_assets.orchestration.watch, benchmarks/freshness.md).
"""

from __future__ import annotations

import sys
import time


def add_parser(sub) -> None:
    p = sub.add_parser(
        "watch", help="follow the docs folder and queue a run for every save (next to `rag ui`)",
        description="Follow the docs folder with file events and submit the runs each change needs to the Dagster "
                    "webserver (`rag ui`), which starts them. While it runs, docs_sensor stands back. Ctrl-C stops it.")
    p.add_argument("--url", default="http://127.0.0.1:3000",
                   help="the Dagster webserver (default http://127.0.0.1:3000, where `rag ui` listens)")
    p.add_argument("--docs-dir", help="docs folder (default: RAG_DOCS_DIR or data/docs)")


def run(args) -> int:
    from rag_assets.orchestration.runs import corpus_definitions, get_instance
    from rag_assets.orchestration.watch import DocsWatcher, GraphQLSubmitter

    settings = args.corpus.settings()
    if not settings.docs_dir.is_dir():
        raise FileNotFoundError(2, "No such directory", str(settings.docs_dir))
    submitter = GraphQLSubmitter(args.url)
    if not submitter.reachable():
        print(f"rag watch: waiting for the Dagster webserver at {submitter.url} (start it with `rag ui`)", file=sys.stderr)
        while not submitter.reachable():
            time.sleep(1)
    instance = get_instance()
    say = lambda line: print(line, flush=True)  # noqa: E731
    say(f"rag watch: following {settings.docs_dir} (corpus {args.corpus.name}); runs go to {submitter.url}; "
        "Ctrl-C stops")
    DocsWatcher(corpus_definitions(args.corpus.name), instance, submitter,
                say=say).follow()
    say("rag watch: stopped; docs_sensor follows the folder again")
    return 0
