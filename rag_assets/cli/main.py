"""The `rag` command line: ingest, ingest-doc, query, evaluate, ask, corpora, ui, watch. Ingestion always runs through Dagster.

Every command works on one corpus (rag_assets.cli.corpora): `--corpus NAME`, or the one that owns
the docs folder given; `rag ingest --docs-dir DIR` on a folder no corpus owns makes it a corpus of its own.

Exit codes: 0 success; 1 some documents failed (the others are indexed); 2 usage or configuration.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from rag_assets.cli import ui, watch
from rag_assets.cli.filter_args import add_filter_arguments, filters_from_args
from rag_assets.cli.process_exit import exit_process
from rag_assets.config import apply_offline_defaults
from rag_assets.errors import ConfigurationError, RagError
from rag_assets.process_start import imports_without_gc
from rag_assets.vocabulary.modes import MAX_TOP_K, RetrievalMode, validate_top_k

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell tool killed by a closed pipe reports

apply_offline_defaults()  # before Dagster, Chroma, onnxruntime or ragas are imported


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks (also RAG_DEBUG=1)")
    parser.add_argument("--corpus", metavar="NAME",
                        help="the corpus to work on (default: the one that owns --docs-dir / RAG_DOCS_DIR, "
                             "else `default`); `rag corpora` lists them")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("corpora", help="list the corpora: documents, chunks, last ingest and last evaluation")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("ingest", help="discover, chunk, embed and index every markdown file")
    p.add_argument("--docs-dir", help="docs folder (default: RAG_DOCS_DIR or data/docs)")
    p.add_argument("--allow-mass-delete", action="store_true",
                   help="remove vanished documents even when that empties most of the index (RAG_ALLOW_MASS_DELETE=1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--collection", help="the Chroma collection to write (default: RAG_COLLECTION or rag_chunks)")
    p.add_argument("--workers", type=int, default=1,
                   help="document runs in flight at once, launched through the instance's run launcher "
                        "(needs a Chroma server, CHROMA_HOST; default 1: runs in this process)")

    p = sub.add_parser("ingest-doc", help="ingest one document")
    p.add_argument("path", help="the file, as a path or relative to the docs folder")
    p.add_argument("--force", action="store_true",
                   help="read the file again even if its size and modification time did not change")
    p.add_argument("--docs-dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bars")

    p = sub.add_parser(
        "query",
        help="retrieve the chunks that best answer a question",
        description="Retrieve the chunks that best answer a question (or every question of a JSONL file).",
    )
    p.add_argument("text", nargs="?", help="the question (omit with --batch)")
    p.add_argument("--batch", metavar="FILE.jsonl",
                   help='one JSON object a line with "id" and "question" (or "query"); prints one JSON line per input')
    p.add_argument("--mode", choices=RetrievalMode.names(), default=None,
                   help="retrieval mode (default: RAG_RETRIEVAL_MODE or hybrid)")
    p.add_argument("--top-k", type=int, default=5, help=f"results per question, 1-{MAX_TOP_K} (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--collection", help="the Chroma collection to search (default: RAG_COLLECTION or rag_chunks)")
    p.add_argument("--corpus", dest="query_corpora", action="append", metavar="NAME",
                   help="search this corpus (repeat it to search several at once, one ranking with comparable scores)")
    add_filter_arguments(p)

    p = sub.add_parser(
        "ask",
        help="answer a question from the indexed documents, citing them as [Source N]",
        description="Retrieve the most relevant chunks (hybrid) and have the chat model (RAG_CHAT_MODEL at "
                    "OPENAI_BASE_URL, key OPENAI_API_KEY) answer from them with [Source N] citations. "
                    "Exit 1 when the chat model failed (the sources are still printed).",
    )
    p.add_argument("question", help="the question")
    p.add_argument("--max-sources", type=int, default=5, help=f"sources retrieved and cited, 1-{MAX_TOP_K} (default 5)")
    p.add_argument("--chapter-context", metavar="PLACE",
                   help="the module, chapter or doc_path the reader is in: its chunks rank first (nothing is filtered)")
    p.add_argument("--selected-text", metavar="TEXT", help="a passage the reader selected: Source 1, with context around it")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--collection", help="the Chroma collection to search (default: RAG_COLLECTION or rag_chunks)")
    add_filter_arguments(p)

    p = sub.add_parser("evaluate", help="score retrieval on the eval sets, or on a synthetic set generated from the "
                                        "documents when there is none (materializes retrieval_evaluation)")
    p.add_argument("--eval-set", action="append", metavar="FILE.jsonl",
                   help="an eval set (repeatable; default: every *.jsonl under RAG_EVAL_DIR)")
    p.add_argument("--test-set", metavar="FILE",
                   help="a JSONL eval set (as --eval-set), or a JSON test set of the ingestion contract's shape "
                        "({\"queries\": [...]} with expected_modules / expected_keywords / selected_text), "
                        "scored by module hit@k and keyword coverage")
    p.add_argument("--collection", help="the Chroma collection to score (default: RAG_COLLECTION or rag_chunks)")
    p.add_argument("--top-k", type=int, default=0, help="results retrieved per question (default RAG_EVAL_TOP_K=10)")
    p.add_argument("--json", action="store_true", help="print the metrics (mode -> metric -> value) and per-question rows")
    p.add_argument("--against", metavar="RUN.parquet",
                   help="also compare with this earlier run (an eval-*.parquet under RAG_EVAL_RESULTS_DIR), "
                        "paired over the questions both asked")

    watch.add_parser(sub)
    for name, command in sub.choices.items():
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
    debug = args.debug or os.environ.get("RAG_DEBUG", "").lower() in ("1", "true", "yes")
    try:
        across = list(dict.fromkeys([*([args.corpus] if args.corpus else []), *(getattr(args, "query_corpora", None) or []),
                                     *([args.sub_corpus] if getattr(args, "sub_corpus", None) else [])]))
        if len(across) > 1 and args.command != "query":
            raise ConfigurationError(f"rag {args.command} works on one corpus, got {', '.join(across)}")
        if args.command == "query" and len(across) > 1:
            return _query_across(args, across)
        if across:
            args.corpus = across[0]
        if args.command not in ("corpora", "ui"):
            docs_dir = getattr(args, "docs_dir", None)
            with imports_without_gc():  # sqlalchemy and the state database's modules: most of a no-op's time
                from rag_assets.cli.corpora import select_corpus

                args.corpus = select_corpus(args.corpus, docs_dir, create=args.command in ("ingest", "ingest-doc"))
            if args.corpus.is_default and docs_dir:
                os.environ["RAG_DOCS_DIR"] = str(Path(docs_dir).resolve())
            if getattr(args, "collection", None):
                if not args.corpus.is_default:
                    raise ConfigurationError(f"corpus {args.corpus.name} has its own collection; --collection "
                                             "applies to the default corpus only")
                os.environ["RAG_COLLECTION"] = args.collection
        if args.command == "corpora":
            from rag_assets.cli.corpora import run_corpora

            return run_corpora(args)
        return {"ingest": _ingest, "ingest-doc": _ingest_doc, "query": _query, "evaluate": _evaluate, "ask": _ask,
                "ui": ui.run, "watch": watch.run}[args.command](args)
    except (ConfigurationError, FileNotFoundError) as exc:
        return _fail(args, f"configuration error: {_message(exc)}", EXIT_USAGE, debug)
    except RagError as exc:
        return _fail(args, str(exc), EXIT_PARTIAL, debug)
    except BrokenPipeError:
        # the reader went away (`rag query ... | head -1`): no traceback, and none at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            return _unexpected(args, exc, debug)
        # e.g. an ingest on a state or index folder this user may not write, or a read-only mount
        return _fail(args, f"{exc.strerror.lower()}: {exc.filename or exc}: an ingest writes the state, cache and "
                           "index folders (a query only reads them)", EXIT_PARTIAL, debug)
    except KeyboardInterrupt:
        return _fail(args, "interrupted; finished runs are kept, the next `rag ingest` continues", 130, debug)
    except Exception as exc:  # a bug or an unexpected failure: still one line, the traceback on request
        return _unexpected(args, exc, debug)


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


def _print_summary(summary, as_json: bool) -> int:
    from dataclasses import asdict

    data = asdict(summary)
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        print(
            f"documents: {summary.documents_discovered} discovered, {summary.documents_processed} processed, "
            f"{summary.documents_unchanged} unchanged, {summary.documents_failed} failed, {summary.documents_deleted} deleted\n"
            f"chunks written: {summary.chunks_written}; embeddings computed: {summary.embeddings_computed}, "
            f"reused: {summary.embeddings_reused}; {summary.duration_seconds:.1f} s"
            + (f", {summary.embedding_seconds:.1f} s of it embedding" if summary.embedding_seconds else "")
            + f" (runs: {', '.join(summary.run_ids)})"
        )
        if summary.chunks_truncated:
            print(f"{summary.chunks_truncated} chunk(s) exceed the embedding model's input and were embedded from their "
                  "start only (an oversized code block or table: see chunk_embeddings in the UI)")
        if summary.blocks_split:
            print(f"{summary.blocks_split} code/table block(s) too big for one chunk were split at line boundaries")
        for err in summary.errors:
            print(f"  FAILED {err['doc_path']}: {err['error']}", file=sys.stderr)
    if summary.removal_refused:
        print(f"rag: {summary.removal_refused}", file=sys.stderr)
    return EXIT_PARTIAL if summary.documents_failed or summary.removal_refused else EXIT_OK


def _ingest(args) -> int:
    from rag_assets.ingest.catalog import content_changed
    from rag_assets.orchestration.noop_check import check_noop

    started = time.perf_counter()
    settings = args.corpus.settings()  # validate configuration before any run starts
    # nothing changed since the last full ingest? answered without importing Dagster (~2 s)
    summary, look = check_noop(settings) if args.workers == 1 else (None, None)
    if summary is not None:
        summary.duration_seconds = round(time.perf_counter() - started, 3)
        return _print_summary(summary, args.json)
    if _nothing_to_index(settings):
        print(f"rag: no markdown files (*.md, *.mdx) under {settings.docs_dir}, and nothing is indexed yet: "
              "point --docs-dir (or RAG_DOCS_DIR) at the folder that holds your documents", file=sys.stderr)
        return EXIT_USAGE
    warming = None
    if args.workers == 1 and (look is None or content_changed(look.stored, look.seen.documents)):
        # this process's runs will embed: the model loads on the other core while Dagster is imported
        from rag_assets.embedding import warm_in_background

        warming = warm_in_background(settings)
    with imports_without_gc():
        from rag_assets.orchestration.runs import corpus_definitions, ingest
        import chromadb  # noqa: F401 - the runs open the store: imported here, with the rest

    try:
        with _progress_bars(args):
            summary = ingest(allow_mass_delete=args.allow_mass_delete, workers=args.workers,
                             corpus=corpus_definitions(args.corpus.name), look=look)
    finally:
        if warming is not None:
            warming.join()
    return _print_summary(summary, args.json)


def _nothing_to_index(settings) -> bool:
    """An empty docs folder on a fresh index: the typical result of pointing one level too low (or at
    the wrong folder). An emptied folder over an existing index is the deletion guard's to answer."""
    from rag_assets.index.stage_store import StageStore
    from rag_assets.ingest.discovery import has_markdown_files

    if has_markdown_files(settings.docs_dir):  # FileNotFoundError: the missing-folder message
        return False
    return StageStore.for_settings(settings).catalog_folder() is None


def _ingest_doc(args) -> int:
    from rag_assets.orchestration.runs import corpus_definitions, ingest

    settings = args.corpus.settings()
    path = Path(args.path)
    candidate = path.resolve() if path.exists() else (settings.docs_dir / path).resolve()
    if not candidate.is_file():
        raise FileNotFoundError(f"no such document: {args.path}")
    if not candidate.is_relative_to(settings.docs_dir):
        raise ConfigurationError(f"{args.path} is not inside the docs folder {settings.docs_dir} (set RAG_DOCS_DIR)")
    doc_path = candidate.relative_to(settings.docs_dir).as_posix()
    if args.force:
        from rag_assets.index.stage_store import StageStore

        StageStore.for_settings(settings).forget_fingerprints([doc_path])
    with _progress_bars(args):
        summary = ingest(only_doc_paths=[doc_path], corpus=corpus_definitions(args.corpus.name))
    if summary.documents_processed + summary.documents_unchanged + summary.documents_failed == 0:
        summary.errors.append({"doc_path": doc_path, "error": "not discovered (hidden, not markdown, or refused)"})
        summary.documents_failed = len(summary.errors)
    return _print_summary(summary, args.json)


@contextmanager
def _progress_bars(args):
    """Progress bars on stderr while a terminal watches; nothing with --json/--quiet or when piped."""
    if getattr(args, "json", False) or getattr(args, "quiet", False) or not sys.stderr.isatty():
        yield
        return
    from rag_assets.progress import listening
    from rag_assets.cli.progress_bars import TerminalProgress

    bars = TerminalProgress(sys.stderr)
    try:
        with listening(bars):
            yield
    finally:
        bars.close()


def _query(args) -> int:
    from rag_assets.errors import InvalidQueryError
    from rag_assets.pipeline import GATE_HEAD, RAGPipeline

    if (args.text is None) == (args.batch is None):
        print("rag: query needs either a question or --batch FILE.jsonl (not both)", file=sys.stderr)
        return EXIT_USAGE
    if not _valid_count(args.top_k, "--top-k"):
        return EXIT_USAGE
    try:
        filters = filters_from_args(args)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.batch is not None:
        batch = Path(args.batch)
        if not batch.is_file():
            print(f"rag: batch file not found: {batch}", file=sys.stderr)
            return EXIT_USAGE
        return _query_batch(RAGPipeline.from_settings(args.corpus.settings()), batch, args.mode, args.top_k, filters)

    pipeline = RAGPipeline.from_settings(args.corpus.settings())
    try:
        results = pipeline.search(args.text, args.mode, args.top_k, filters)
    except InvalidQueryError as exc:
        print(f"rag: invalid query: {exc}", file=sys.stderr)
        return EXIT_USAGE
    mode = RetrievalMode.parse(args.mode, pipeline.settings.retrieval_mode)
    threshold = pipeline.settings.min_relevance
    # the same gate as RAGPipeline.retrieve: the head of the ranking, whatever --top-k is
    relevance = [r.relevance for r in results[:GATE_HEAD] if r.relevance is not None]
    avg = sum(relevance) / len(relevance) if relevance else 0.0
    meets = bool(results) and avg >= threshold
    if args.json:
        print(json.dumps(
            {"query": args.text, "mode": mode, "filters": filters, "avg_relevance": round(avg, 6),
             "meets_threshold": meets, "results": [r.as_dict() for r in results]},
            indent=2, ensure_ascii=False,
        ))
    else:
        for rank, r in enumerate(results, 1):
            crumb = r.heading_breadcrumb or r.section
            rel = f" cos {r.relevance:.3f}" if r.relevance is not None and mode is not RetrievalMode.VECTOR else ""
            print(f"{rank}. [{r.score:.3f}{rel}] {r.doc_path} — {crumb}")
            snippet = " ".join(r.text.split())[:240]
            print(f"   {snippet}")
        if not results:
            print("no chunk matches these filters" if filters else "no results (is the index empty? run `rag ingest`)")
        elif not meets:
            print(f"(mean relevance {avg:.3f} is under RAG_MIN_RELEVANCE={threshold}: "
                  "the indexed documents probably do not answer this)")
    return EXIT_OK


def _query_across(args, names: list[str]) -> int:
    """One question over several corpora: one ranking whose scores compare (rag_assets.retrieval.across)."""
    from rag_assets.config import Settings
    from rag_assets.corpus import find_corpus
    from rag_assets.embedding import embedder_key
    from rag_assets.errors import InvalidQueryError
    from rag_assets.orchestration.component import known_corpora
    from rag_assets.pipeline import RAGPipeline
    from rag_assets.retrieval.across import merge_rankings

    if args.text is None or args.batch is not None:
        print("rag: a query over several corpora takes one question (no --batch)", file=sys.stderr)
        return EXIT_USAGE
    if not _valid_count(args.top_k, "--top-k"):
        return EXIT_USAGE
    if args.collection:
        raise ConfigurationError("--collection does not go with several --corpus: each corpus has its own")
    try:
        filters = filters_from_args(args)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return EXIT_USAGE
    base = Settings.from_env()
    known = known_corpora(base.corpora_dir)
    pipelines = {}
    embedders = {}  # corpora with the same embedder settings share one model (loaded once)
    for name in names:
        settings = find_corpus(name, base, known).settings()
        pipeline = RAGPipeline.from_settings(settings, embedder=embedders.get(embedder_key(settings)))
        embedders.setdefault(embedder_key(settings), pipeline.retriever.embedder)
        pipelines[name] = pipeline
    try:
        rankings = {name: p.search(args.text, args.mode, args.top_k, filters) for name, p in pipelines.items()}
    except InvalidQueryError as exc:
        print(f"rag: invalid query: {exc}", file=sys.stderr)
        return EXIT_USAGE
    models = {p.settings.model_name for p in pipelines.values()}
    merged = merge_rankings(rankings, args.top_k, same_model=len(models) == 1)
    mode = RetrievalMode.parse(args.mode, base.retrieval_mode)
    if args.json:
        print(json.dumps({
            "query": args.text, "mode": mode, "filters": filters, "corpora": names,
            "confidence": {name: round(h, 6) for name, h in
                           {hit.corpus: hit.confidence for hit in merged}.items()},
            "results": [{**hit.result.as_dict(), "corpus": hit.corpus, "score": round(hit.score, 6),
                         "corpus_score": round(float(hit.result.score), 6)} for hit in merged],
        }, indent=2, ensure_ascii=False))
        return EXIT_OK
    for rank, hit in enumerate(merged, 1):
        r = hit.result
        print(f"{rank}. [{hit.score:.4f}] {hit.corpus}: {r.doc_path} — {r.heading_breadcrumb or r.section}")
        print(f"   {' '.join(r.text.split())[:240]}")
    if not merged:
        print("no results (are the corpora indexed? `rag corpora`)")
    return EXIT_OK


def _query_batch(pipeline, batch: Path, mode: str | None, top_k: int, filters=None) -> int:
    """One JSON line per input line; a bad line is reported (file:line) and skipped, exit 1 at the end.
    A line's own "filters" object replaces the flags' filters for that line."""
    from rag_assets.errors import InvalidQueryError

    failures = 0
    # Binary, decoded line by line: one line in another encoding must fail alone, not the whole file.
    with open(batch, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if lineno == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                failures += 1
                print(f"rag: {batch}:{lineno}: not valid UTF-8 (byte {exc.start + 1} of the line): "
                      "re-save the file as UTF-8", file=sys.stderr)
                continue
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item, dict):
                    raise ValueError(f"expected a JSON object, got {type(item).__name__}")
                question = item.get("question", item.get("query"))
                if not isinstance(question, str):
                    raise ValueError('needs a "question" (or "query") string')
                results = pipeline.search(question, mode, top_k, item.get("filters", filters))
            except (ValueError, InvalidQueryError) as exc:  # json.JSONDecodeError is a ValueError
                failures += 1
                print(f"rag: {batch}:{lineno}: {exc}", file=sys.stderr)
                continue
            print(json.dumps(
                {"id": item.get("id"), "query": question, "results": [r.as_dict() for r in results]},
                ensure_ascii=False,
            ), flush=True)
    if failures:
        print(f"rag: {failures} line(s) of {batch} failed", file=sys.stderr)
    return EXIT_PARTIAL if failures else EXIT_OK


def _ask(args) -> int:
    from rag_assets.answering import answer_question
    from rag_assets.errors import InvalidQueryError

    if not _valid_count(args.max_sources, "--max-sources"):
        return EXIT_USAGE
    try:
        result = answer_question(args.question, args.chapter_context, args.max_sources, filters=filters_from_args(args),
                                 selected_text=args.selected_text, settings=args.corpus.settings())
    except InvalidQueryError as exc:
        print(f"rag: invalid question: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(result.answer)
        if result.sources:
            print("\nSources:")
            for source in result.sources:
                where = source.heading_breadcrumb or source.section
                mark = "" if source.number in result.cited_sources or not result.cited_sources else " (not cited)"
                print(f"[Source {source.number}] {source.doc_path}" + (f" — {where}" if where else "") + mark)
        if result.invalid_citations:
            print(f"(the answer cites sources that do not exist: {result.invalid_citations})")
    sys.stdout.flush()
    if result.error:
        print(f"rag: {result.error}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


# The table `rag evaluate` prints: section-level headline metrics, one column per mode.
_EVAL_TABLE = ("section.hit@1", "section.precision@3", "section.recall@3", "section.recall@5",
               "section.recall@10", "section.mrr@10", "section.ndcg@10", "document.recall@5", "document.mrr@10",
               "ragas.id_based_context_precision", "ragas.id_based_context_recall", "latency_ms.p95",
               "context_tokens.mean")


def _evaluate(args) -> int:
    from rag_assets.evaluation.corpora import NO_EVAL_SET, SYNTHETIC_OFF, main_eval_sets, parse_eval_corpora
    from rag_assets.evaluation.test_set import is_test_set_json
    from rag_assets.orchestration.runs import evaluate

    if args.test_set:
        if not Path(args.test_set).is_file():
            raise FileNotFoundError(f"no such test set: {args.test_set}")
        if is_test_set_json(args.test_set):
            return _evaluate_test_set(args)
        args.eval_set = [*(args.eval_set or []), args.test_set]
    settings = args.corpus.settings()
    try:
        corpora = parse_eval_corpora(settings.eval_corpora)
    except ValueError as exc:
        raise ConfigurationError(f"RAG_EVAL_CORPORA: {exc}") from None
    # no labelled set: the index is scored on a synthetic set generated from its documents, unless those are off
    if not main_eval_sets(settings.eval_dir, args.eval_set or []) and not corpora and settings.eval_synthetic == "off":
        print(f"rag: {NO_EVAL_SET.format(eval_dir=settings.eval_dir)}{SYNTHETIC_OFF}", file=sys.stderr)
        return EXIT_USAGE
    if args.top_k and not _valid_count(args.top_k, "--top-k"):
        return EXIT_USAGE
    for path in args.eval_set or []:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such eval set: {path}")
    against = _load_against(args.against) if args.against else None
    if args.against and against is None:
        return EXIT_USAGE
    from rag_assets.orchestration.runs import corpus_definitions

    outcome = evaluate(args.eval_set, args.top_k or None, corpus=corpus_definitions(args.corpus.name))
    if not outcome.success:
        print(f"rag: evaluation failed (run {outcome.run_id}): {outcome.error}", file=sys.stderr)
        return EXIT_PARTIAL
    if outcome.skipped and not outcome.summary:
        print(f"rag: {outcome.skipped}", file=sys.stderr)
        return EXIT_USAGE
    modes = outcome.summary.get("modes", {})
    # a synthetic set scored next to the labelled one (RAG_EVAL_SYNTHETIC=always)
    extra = outcome.synthetic_summary if outcome.synthetic_rows_path != outcome.rows_path else {}
    now_rows = None  # this run's saved rows, read once for --json and --against
    if outcome.rows_path and (args.json or against is not None):
        import pandas as pd

        now_rows = pd.read_parquet(outcome.rows_path)
    compared = _compare_against(args.against, against, now_rows, list(modes)) if against is not None else None
    if args.json:
        rows = now_rows.to_dict(orient="records") if now_rows is not None else []
        payload = {"metrics": modes, "eval_set": outcome.summary.get("eval_set", {}), "checks": outcome.checks,
                   "skipped": outcome.summary.get("skipped", {}),
                   "confidence": outcome.summary.get("confidence", {}),
                   "questions": outcome.summary.get("questions"), "top_k": outcome.summary.get("top_k"),
                   "run_id": outcome.run_id, "rows_path": outcome.rows_path, "rows": rows}
        if compared is not None:
            payload["against"] = compared
        if extra:
            payload["synthetic"] = {"metrics": extra.get("modes", {}), "eval_set": extra.get("eval_set", {}),
                                    "questions": extra.get("questions"), "rows_path": outcome.synthetic_rows_path}
        print(json.dumps(payload, indent=2, default=_jsonable, ensure_ascii=False))
    else:
        _print_scores(outcome.summary, outcome.rows_path, outcome.run_id)
        if compared is not None:
            _print_moves(f"against {args.against} ({compared['questions']} questions in both)",
                         compared["by_mode"], [m for m in RetrievalMode.names() if m in modes])
        if extra:
            print()
            _print_scores(extra, outcome.synthetic_rows_path, outcome.run_id)
    sys.stdout.flush()
    failed_errors = 0
    for name, check in outcome.checks.items():
        status = "passed" if check["passed"] else f"FAILED ({check['severity']})"
        detail = check["metadata"].get("problems", "")
        print(f"check {name}: {status}" + (f"\n{detail}" if detail else ""), file=sys.stderr)
        failed_errors += (not check["passed"]) and check["severity"] == "ERROR"
    return EXIT_PARTIAL if failed_errors else EXIT_OK


def _print_scores(summary: dict, rows_path, run_id: str) -> None:
    """One eval set's table, one column per mode; a synthetic set's is titled so."""
    modes = summary.get("modes", {})
    eval_set = summary.get("eval_set") or {}
    names = [m for m in RetrievalMode.names() if m in modes] + [m for m in modes if m not in RetrievalMode.names()]
    if eval_set.get("kind") == "synthetic":
        print(f"SYNTHETIC eval set (generated from the documents, not labelled by a person): version "
              f"{eval_set.get('version')}, generator {eval_set.get('generator')}, {eval_set.get('documents')} documents "
              f"({eval_set.get('path')}); put a labelled *.jsonl under RAG_EVAL_DIR to score that instead")
    print(f"{summary.get('questions')} questions, top_k={summary.get('top_k')} (run {run_id})")
    print(f"{'metric':34}" + "".join(f"{m:>10}" for m in names))
    for metric in _EVAL_TABLE:
        values = [modes[m].get(metric) for m in names]
        if all(v is None for v in values):
            continue
        print(f"{metric:34}" + "".join(f"{v:>10.3f}" if v is not None else f"{'-':>10}" for v in values))
    _print_confidence(summary.get("confidence") or {}, names, summary.get("questions"))
    for reason in sorted(set(summary.get("skipped", {}).values()))[:3]:
        print(f"skipped: {reason}")
    print(f"per-question results: {rows_path}")


def _print_confidence(confidence: dict, names: list[str], questions) -> None:
    """The headline means' intervals under their columns, then hybrid minus each mode (paired): how
    much of a difference between modes, or between two runs, the eval set can tell apart."""
    from rag_assets.evaluation.confidence import HEADLINE

    intervals = confidence.get("intervals") or {}
    shown = [m for m in HEADLINE if any(m in intervals.get(mode, {}) for mode in names)]
    if not shown:
        return
    print(f"{confidence.get('level', 0.95):.0%} intervals (bootstrap over the {questions} questions):")
    for metric in shown:
        cells = [f"{s['low']:.2f}–{s['high']:.2f}" if s else "-"
                 for s in (intervals.get(mode, {}).get(metric) for mode in names)]
        print(f"{metric:34}" + "".join(f"{c:>10}" for c in cells))
    minus = confidence.get("hybrid_minus") or {}
    for mode, by_metric in sorted(minus.items(), key=lambda item: names.index(item[0]) if item[0] in names else 99):
        parts = [f"{metric} {d['value']:+.3f} ({d['low']:+.3f} to {d['high']:+.3f}: {d['verdict']})"
                 for metric in shown if (d := by_metric.get(metric))]
        if parts:
            print(f"hybrid − {mode}: " + "; ".join(parts))
    since = confidence.get("since_last") or {}
    if since.get("by_mode"):
        from rag_assets.evaluation.confidence import run_label

        _print_moves(f"since the evaluation of {run_label(since.get('created_at'))} ({since.get('questions')} "
                     "questions in both)", since["by_mode"], names)


def _print_moves(title: str, by_mode: dict, names: list[str]) -> None:
    """How the headline metrics moved against another run, one line per mode (Change.as_dict values)."""
    from rag_assets.evaluation.confidence import HEADLINE

    print(f"{title}:" if by_mode else f"{title}: nothing to compare")
    for mode in [m for m in names if m in by_mode]:
        moves = by_mode[mode]
        parts = [f"{metric} {c['before']:.3f} → {c['now']:.3f}, {c['change']:+.3f} ({c['low']:+.3f} to "
                 f"{c['high']:+.3f}: {c['verdict']})" for metric in HEADLINE if (c := moves.get(metric))]
        print(f"  {mode}: " + "; ".join(parts))


def _load_against(path: str):
    """An earlier run's per-question rows for --against, or None (the reason printed, naming the file)."""
    import pandas as pd

    from rag_assets.evaluation.confidence import QUESTION_KEY

    try:
        rows = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        print(f"rag: --against {path}: not a saved evaluation run (an eval-*.parquet): {exc}", file=sys.stderr)
        return None
    missing = [c for c in QUESTION_KEY if c not in rows]
    if missing:
        print(f"rag: --against {path}: no {', '.join(missing)} column: not a saved evaluation run", file=sys.stderr)
        return None
    return rows


def _compare_against(path: str, before, now, modes: list[str]) -> dict:
    """This run's rows (a DataFrame, or None) against --against's, paired over the questions both asked."""
    from rag_assets.evaluation.confidence import changes_as_dict, changes_between
    from rag_assets.evaluation.metrics import KS
    from rag_assets.evaluation.runner import interval_metrics

    shared, changes = changes_between(before, now, modes, interval_metrics(KS)) if now is not None else (0, {})
    return {"path": str(path), "questions": shared, "by_mode": changes_as_dict(changes)}


def _evaluate_test_set(args) -> int:
    """A JSON test set (the ingestion contract's shape): module hit@k and keyword coverage per mode,
    scored here over the index (such a set labels no sections, so the evaluation asset's metrics
    do not apply). Exit 1 when an entry of the file was malformed (the others are scored)."""
    from rag_assets.evaluation.test_set import load_test_set, score_test_set
    from rag_assets.pipeline import RAGPipeline

    try:
        loaded = load_test_set(args.test_set)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return EXIT_USAGE
    k = args.top_k or 5
    if not _valid_count(k, "--top-k"):
        return EXIT_USAGE
    pipeline = RAGPipeline.from_settings(args.corpus.settings())
    report = score_test_set(loaded.questions, pipeline.search, RetrievalMode.names(), k)
    if args.json:
        print(json.dumps({**report, "errors": loaded.errors, "test_set": str(args.test_set)}, indent=2))
    else:
        print(f"{report['questions']} questions from {args.test_set}, top_k={k} "
              f"({report['skipped']} skipped: answer-only or unlabelled)")
        names = sorted({n for m in report["modes"].values() for n in m if not n.endswith(".questions")})
        print(f"{'metric':34}" + "".join(f"{m:>10}" for m in report["modes"]))
        for name in names:
            values = [report["modes"][m].get(name) for m in report["modes"]]
            count = max(report["modes"][m].get(f"{name}.questions", 0) for m in report["modes"])
            print(f"{name + f' ({count} q)':34}" + "".join(f"{v:>10.3f}" if v is not None else f"{'-':>10}" for v in values))
    for error in loaded.errors:
        print(f"rag: {error}", file=sys.stderr)
    return EXIT_PARTIAL if loaded.errors else EXIT_OK


def _valid_count(value: int, flag: str) -> bool:
    try:
        validate_top_k(value, flag)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return False
    return True


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def run() -> NoReturn:
    """The `rag` command (console script and `python -m rag_assets`): main(), then a quick exit."""
    exit_process(main())


if __name__ == "__main__":
    run()
