"""The `rag` command line: ingest, ingest-doc, query, evaluate, ask, corpora, ui, watch, serve, mcp. Ingestion always runs through Dagster.

One module per command (ingest, query, ask, evaluate, corpora, ui, watch, serve: each adds its parser and
runs it); this one holds the parser and the dispatch, and turns errors into one line and an exit code.

Every command works on one corpus (rag_assets.cli.corpora): `--corpus NAME`, or the one that owns
the docs folder given; `rag ingest --docs-dir DIR` on a folder no corpus owns makes it a corpus of its own.

Exit codes: 0 success; 1 some documents failed (the others are indexed); 2 usage or configuration;
130 / 143 an ingest stopped by Ctrl-C (SIGINT) / SIGTERM (what it indexed is kept).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from rag_assets.cli import ask, corpora, evaluate, ingest, query, serve, ui, watch
from rag_assets.cli.common import EXIT_PARTIAL, EXIT_USAGE, UsageError
from rag_assets.cli.process_exit import exit_process
from rag_assets.config import apply_offline_defaults, switch
from rag_assets.errors import ConfigurationError, RagError
from rag_assets.process_start import imports_without_gc

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell tool killed by a closed pipe reports

apply_offline_defaults()  # before Dagster, Chroma, onnxruntime or ragas are imported


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks (also RAG_DEBUG=1)")
    parser.add_argument("--corpus", metavar="NAME",
                        help="the corpus to work on (default: the one that owns --docs-dir / RAG_DOCS_DIR, "
                             "else `default`); `rag corpora` lists them")
    sub = parser.add_subparsers(dest="command", required=True)
    corpora.add_parser(sub)
    ingest.add_parsers(sub)
    query.add_parser(sub)
    ask.add_parser(sub)
    evaluate.add_parser(sub)
    watch.add_parser(sub)
    serve.add_parsers(sub)
    for name, command in sub.choices.items():
        if name in ("serve", "mcp"):  # `--corpus` repeats there (the corpora served)
            continue
        if name not in ("query", "corpora", "ui"):  # `rag query --corpus` repeats (several corpora at once)
            command.add_argument("--corpus", dest="sub_corpus", metavar="NAME",
                                 help="the corpus to work on (as `rag --corpus NAME ...`)")
    ui.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    debug = args.debug or bool(switch("debug"))
    try:
        across = list(dict.fromkeys([*([args.corpus] if args.corpus else []), *(getattr(args, "query_corpora", None) or []),
                                     *([args.sub_corpus] if getattr(args, "sub_corpus", None) else [])]))
        if len(across) > 1 and args.command != "query":
            raise ConfigurationError(f"rag {args.command} works on one corpus, got {', '.join(across)}")
        if args.command == "query":
            answered = query.run_via_server(args, across)  # a running `rag serve` answers, if there is one
            if answered is not None:
                return answered
        if args.command == "query" and len(across) > 1:
            return query.run_across(args, across)
        if across:
            args.corpus = across[0]
        if args.command not in ("corpora", "ui", "serve", "mcp"):
            args.corpus = _chosen_corpus(args)
        return {"corpora": corpora.run_corpora, "ingest": ingest.run_ingest, "ingest-doc": ingest.run_ingest_doc,
                "query": query.run, "evaluate": evaluate.run, "ask": ask.run, "ui": ui.run,
                "watch": watch.run, "serve": serve.run_serve, "mcp": serve.run_mcp}[args.command](args)
    except UsageError as exc:
        return _fail(args, str(exc), EXIT_USAGE, debug)
    except (ConfigurationError, FileNotFoundError) as exc:
        return _fail(args, f"configuration error: {_message(exc)}", EXIT_USAGE, debug)
    except RagError as exc:
        return _fail(args, str(exc), EXIT_PARTIAL, debug)
    except BrokenPipeError:
        # the reader went away (`rag query ... | head -1`): no traceback, and none at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return _fail(args, f"no space left on the disk of {exc.filename or 'a file rag writes'}: free space there and "
                               "run the command again (what was finished is kept)", EXIT_PARTIAL, debug)
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            return _unexpected(args, exc, debug)
        # e.g. an ingest on a state or index folder this user may not write, or a read-only mount
        return _fail(args, f"{exc.strerror.lower()}: {exc.filename or exc}: an ingest writes the state, cache and "
                           "index folders (a query only reads them)", EXIT_PARTIAL, debug)
    except KeyboardInterrupt:
        return _fail(args, "interrupted; finished runs are kept, the next `rag ingest` continues", 130, debug)
    except Exception as exc:  # a bug or an unexpected failure: still one line, the traceback on request
        return _unexpected(args, exc, debug)


def _chosen_corpus(args):
    """The corpus the command works on, over the settings resolved here once: the environment with
    the command's flags over it (--languages, --versions, --include, --exclude; for the default corpus
    --docs-dir and --collection). The runs it starts get them with the corpus (loaded_corpora.corpus_definitions,
    and run config for the runs it launches): os.environ is never written."""
    from rag_assets.config import ENV_VARS, Settings

    docs_dir = getattr(args, "docs_dir", None)
    env = ingest.scope_flags(args, dict(os.environ))
    with imports_without_gc():  # sqlalchemy and the state database's modules: most of a no-op's time
        from rag_assets.cli.corpora import select_corpus

        corpus = select_corpus(args.corpus, docs_dir, create=args.command in ("ingest", "ingest-doc"),
                               new_name=getattr(args, "name", None), env=env)
    if corpus.is_default and docs_dir:
        env[ENV_VARS["docs_dir"]] = str(Path(docs_dir).resolve())
    if getattr(args, "collection", None):
        if not corpus.is_default:
            raise ConfigurationError(f"corpus {corpus.name} has its own collection; --collection "
                                     "applies to the default corpus only")
        env[ENV_VARS["collection"]] = args.collection
    return corpus.over(Settings.from_env(env))


def _unexpected(args, exc: BaseException, debug: bool) -> int:
    return _fail(args, f"unexpected error: {type(exc).__name__}: {exc} (RAG_DEBUG=1 or --debug shows the traceback)",
                 EXIT_PARTIAL, debug)


def _message(exc: BaseException) -> str:
    # FileNotFoundError(errno, strerror, filename) prints as "[Errno 2] ...": say it plainly
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc)


def _fail(args, message: str, code: int, debug: bool) -> int:
    """One clear line on stderr (the traceback only when debugging); with --json, also an object
    with the error on stdout, so a script always gets JSON."""
    if debug:
        traceback.print_exc()
    print(f"rag: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"errors": [{"error": message}], "exit_code": code}, indent=2))
    return code


def run() -> NoReturn:
    """The `rag` command (console script and `python -m rag_assets`): main(), then a quick exit."""
    exit_process(main())


if __name__ == "__main__":
    run()
