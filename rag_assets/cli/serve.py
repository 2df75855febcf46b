"""`rag serve` (HTTP/JSON and MCP over streamable HTTP at /mcp) and `rag mcp` (MCP over stdio): one
long-lived process with every corpus's index warm (rag_assets.serving; docs/serve.md)."""

from __future__ import annotations

import argparse
import os

# numpy's BLAS (OpenBLAS) threads for the server: one. A search's dense list is one matrix-vector
# product (1,657 x 384 at the bundled corpus, 10,000 x 384 at 10k chunks); split over both cores it
# waits for the other core to be free (p95 20 ms and p50 16 ms under load 6, against 0.15 and 0.5 ms
# on one thread: docs/benchmarks.md, serving), and a server's parallelism is its request threads.
# The user's own setting wins; it must be in the environment before numpy is imported.
SERVER_ENV = {"OPENBLAS_NUM_THREADS": "1"}


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the index over HTTP/JSON and MCP (streamable HTTP at /mcp)",
        description="Serve search, cited answers, the corpora and their pages over HTTP/JSON (GET /health, "
                    "POST /search, POST /answer, GET /corpora, the API at /docs) and the Model Context Protocol "
                    "(/mcp). Listens on 127.0.0.1 unless told; any other address needs RAG_SERVE_TOKEN. "
                    "SIGTERM or Ctrl-C stops it gracefully.",
    )
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8765, help="the port, 0-65535 (default 8765; 0 picks a free one)")
    p.add_argument("--log-queries", action="store_true", help="write each query's text in the request log (off by default)")
    _corpus_argument(p)
    m = sub.add_parser(
        "mcp",
        help="serve the index over the Model Context Protocol on stdin/stdout (for desktop assistants and agents)",
        description="MCP over stdio: the search, read_page, list_pages and answer tools and every page as a "
                    "resource. Logs go to stderr.",
    )
    _corpus_argument(m)


def port_number(text: str) -> int:
    """--port: a TCP port (argparse makes a refusal a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535 (0 picks a free one), got {text!r}")
    return value


def _corpus_argument(p) -> None:
    p.add_argument("--corpus", dest="serve_corpora", action="append", metavar="NAME",
                   help="serve this corpus (repeat for several; the first answers requests that name none); "
                        "default: every corpus, `default` first")


def server_environment() -> None:
    """SERVER_ENV where the user has not set it: before anything imports numpy (the CLI's dispatch
    does not; rag_assets_tests/cli/test_serve.py checks it)."""
    for var, value in SERVER_ENV.items():
        os.environ.setdefault(var, value)


def _service(args):
    from rag_assets.config import Settings
    from rag_assets.serving.service import IndexService

    names = args.serve_corpora or ([args.corpus] if isinstance(args.corpus, str) else None)  # `rag --corpus X serve`
    return IndexService.for_corpora(Settings.from_env(), names)


def run_serve(args) -> int:
    server_environment()
    from rag_assets.serving.runner import check_bind, configure_logging, serve

    from rag_assets.config import switch

    token = switch("serve_token") or None
    check_bind(args.host, token)  # before anything loads
    configure_logging(args.log_queries)
    return serve(_service(args), args.host, args.port, token=token, log_queries=args.log_queries)


def run_mcp(args) -> int:
    server_environment()
    from rag_assets.serving.runner import configure_logging, serve_stdio

    configure_logging()
    return serve_stdio(_service(args))
