"""`rag query`: the chunks that best answer a question (text or --json), every question of a JSONL
file (--batch), or one question over several corpora (repeated --corpus: one ranking)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rag_assets.cli.common import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, library_log_lines, valid_count
from rag_assets.cli.filter_args import add_filter_arguments, filters_from_args
from rag_assets.errors import ConfigurationError
from rag_assets.vocabulary.modes import MAX_TOP_K, RetrievalMode
from rag_assets.vocabulary.site import url_of


def add_parser(sub) -> None:
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


def run(args) -> int:
    from rag_assets.embedding import load_embedder, warm_up

    library_log_lines()
    settings = args.corpus.settings()
    embedder = load_embedder(settings.embedding)
    warm_up(embedder)  # the model loads on the other core while the retrieval code is imported
    from rag_assets.errors import InvalidQueryError
    from rag_assets.pipeline import RAGPipeline
    from rag_assets.retrieval.context import relevance_gate
    from rag_assets.retrieval.result_fields import result_fields

    if (args.text is None) == (args.batch is None):
        print("rag: query needs either a question or --batch FILE.jsonl (not both)", file=sys.stderr)
        return EXIT_USAGE
    if not valid_count(args.top_k, "--top-k"):
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
        pipeline = RAGPipeline.from_settings(settings, embedder=embedder)
        pipeline.open_snapshot()  # a build from the store, if one is due, waited for (not a retrieval timeout)
        return _query_batch(pipeline, batch, args.mode, args.top_k, filters, args.corpus.name)

    pipeline = RAGPipeline.from_settings(settings, embedder=embedder)
    pipeline.open_snapshot()
    try:
        results = pipeline.search(args.text, args.mode, args.top_k, filters)
    except InvalidQueryError as exc:
        print(f"rag: invalid query: {exc}", file=sys.stderr)
        return EXIT_USAGE
    mode = RetrievalMode.parse(args.mode, pipeline.settings.retrieval_mode)
    threshold = pipeline.settings.min_relevance
    avg, meets = relevance_gate(results, threshold)  # RAGPipeline.retrieve's gate
    fields = [result_fields(r, rank, args.corpus.name) for rank, r in enumerate(results, 1)]  # as /search gives them
    if args.json:
        print(json.dumps(
            {"query": args.text, "mode": mode, "filters": filters, "avg_relevance": round(avg, 6),
             "meets_threshold": meets, "results": fields},
            indent=2, ensure_ascii=False,
        ))
    else:
        print_results(fields, mode, filters, avg, meets, threshold)
    return EXIT_OK


# what each mode's score is, as the text output labels it
SCORE_LABELS = {RetrievalMode.VECTOR: "cos", RetrievalMode.KEYWORD: "bm25", RetrievalMode.HYBRID: "fused"}
PLACED = "↑"


def print_results(results: list[dict], mode: str, filters, avg: float, meets: bool, threshold: float) -> None:
    """The text output of one corpus's results (result_fields each), local or from a server: each
    result's rank, its score labelled with what it is (fused, bm25 or cos), its relevance and the raw
    cosine; a result ranked above one with a higher score is marked, and the mark explained once."""
    label = SCORE_LABELS.get(RetrievalMode.parse(mode), "score")
    scores = [r["score"] for r in results]
    placed = False
    for rank, r in enumerate(results, 1):
        crumb = r["heading_breadcrumb"] or r["section"]
        rel = f" · rel {r['relevance']:.2f}" if r.get("relevance") is not None else ""
        cos = f" · cos {r['cosine']:.3f}" if r.get("cosine") is not None and label != "cos" else ""
        above_better = any(later > r["score"] for later in scores[rank:])
        placed = placed or above_better
        print(f"{rank}. [{label} {r['score']:.3f}{PLACED if above_better else ''}{rel}{cos}] {r['doc_path']} — {crumb}"
              f"{_published(r)}")
        snippet = " ".join(r["text"].split())[:240]
        print(f"   {snippet}")
    if not results:
        print("no chunk matches these filters" if filters else "no results (is the index empty? run `rag ingest`)")
    elif not meets:
        print(f"(the best relevance, {avg:.2f}, is under RAG_MIN_RELEVANCE={threshold}: "
              "the indexed documents probably do not answer this)")
    if placed:
        print(f"({PLACED}: ranked above a result with a higher {label} score by the ranking's rules: a keyword or "
              "exact-term hit it is sure of stays near the top, and a page's results past RAG_MAX_RESULTS_PER_PAGE "
              "come after other pages'; docs/retrieval.md)")


def _published(result: dict) -> str:
    """ <URL>: where a result's page is published, when its folder is a docs site (its metadata's `url`)."""
    url = url_of(result.get("metadata"))
    return f" <{url}>" if url else ""


def run_across(args, names: list[str]) -> int:
    """One question over several corpora: one ranking whose scores compare (rag_assets.retrieval.across)."""
    from rag_assets.config import Settings
    from rag_assets.corpus import find_corpus
    from rag_assets.embedding import embedder_key
    from rag_assets.errors import InvalidQueryError
    from rag_assets.corpus_registry import known_corpora
    from rag_assets.pipeline import RAGPipeline
    from rag_assets.retrieval.across import merge_rankings
    from rag_assets.retrieval.result_fields import result_fields

    library_log_lines()
    if args.text is None or args.batch is not None:
        print("rag: a query over several corpora takes one question (no --batch)", file=sys.stderr)
        return EXIT_USAGE
    if not valid_count(args.top_k, "--top-k"):
        return EXIT_USAGE
    if args.collection:
        raise ConfigurationError("--collection does not go with several --corpus: each corpus has its own")
    try:
        filters = filters_from_args(args)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return EXIT_USAGE
    base = Settings.from_env()
    known = known_corpora(base)
    pipelines = {}
    embedders = {}  # corpora with the same embedder settings share one model (loaded once)
    for name in names:
        settings = find_corpus(name, base, known).settings()
        pipeline = RAGPipeline.from_settings(settings, embedder=embedders.get(embedder_key(settings)))
        embedders.setdefault(embedder_key(settings), pipeline.retriever.embedder)
        pipeline.open_snapshot()
        pipelines[name] = pipeline
    try:
        rankings = {name: p.search(args.text, args.mode, args.top_k, filters) for name, p in pipelines.items()}
    except InvalidQueryError as exc:
        print(f"rag: invalid query: {exc}", file=sys.stderr)
        return EXIT_USAGE
    models = {p.settings.model_name for p in pipelines.values()}
    merged = merge_rankings(rankings, args.top_k, same_model=len(models) == 1)
    mode = RetrievalMode.parse(args.mode, base.retrieval_mode)
    results = [{**result_fields(hit.result, rank, hit.corpus), "score": round(hit.score, 6),
                "corpus_score": round(float(hit.result.score), 6)} for rank, hit in enumerate(merged, 1)]
    if args.json:
        print(json.dumps({
            "query": args.text, "mode": mode, "filters": filters, "corpora": names,
            "confidence": {name: round(h, 6) for name, h in
                           {hit.corpus: hit.confidence for hit in merged}.items()},
            "results": results,
        }, indent=2, ensure_ascii=False))
        return EXIT_OK
    print_across(results)
    return EXIT_OK


def print_across(results: list[dict]) -> None:
    """The text output of one ranking over several corpora, local or from a server."""
    for rank, r in enumerate(results, 1):  # the merged score falls with the rank (retrieval/across.py)
        print(f"{rank}. [merged {r['score']:.4f}] {r['corpus']}: {r['doc_path']} — {r['heading_breadcrumb'] or r['section']}"
              f"{_published(r)}")
        print(f"   {' '.join(r['text'].split())[:240]}")
    if not results:
        print("no results (are the corpora indexed? `rag corpora`)")


def run_via_server(args, names: list[str]) -> int | None:
    """The query answered by a running `rag serve` for its corpora (rag_assets.cli.remote), printed as
    the local path prints it; None when no server answers (the caller then runs it locally)."""
    from rag_assets.cli import remote

    if args.text is None or args.batch is not None or args.collection or not 1 <= args.top_k <= MAX_TOP_K:
        return None  # batches, another collection and usage errors: the local path
    try:
        filters = filters_from_args(args)
    except ValueError:
        return None
    server = remote.find_server(names)
    if server is None:
        return None
    body = {"query": args.text, "top_k": args.top_k, "mode": args.mode, "filters": filters,
            "corpus": names or "default"}
    try:
        found = remote.search(*server, {k: v for k, v in body.items() if v is not None})
    except remote.ServerRefused as exc:
        print(f"rag: invalid query: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if found is None:
        return None
    results = found["results"]
    if len(names) > 1:
        if args.json:
            print(json.dumps({"query": args.text, "mode": found["mode"], "filters": filters, "corpora": names,
                              "confidence": found["confidence"],
                              "results": results},
                             indent=2, ensure_ascii=False))
        else:
            print_across(results)
        return EXIT_OK
    if args.json:
        print(json.dumps(
            {"query": args.text, "mode": found["mode"], "filters": filters, "avg_relevance": found["avg_relevance"],
             "meets_threshold": found["meets_threshold"], "results": results},
            indent=2, ensure_ascii=False))
    else:
        print_results(results, found["mode"], filters, found["avg_relevance"], found["meets_threshold"],
                      found["min_relevance"])
    return EXIT_OK


def _query_batch(pipeline, batch: Path, mode: str | None, top_k: int, filters=None, corpus: str = "default") -> int:
    """One JSON line per input line; a bad line is reported (file:line) and skipped, exit 1 at the end.
    A line's own "filters" object replaces the flags' filters for that line."""
    from rag_assets.errors import InvalidQueryError
    from rag_assets.retrieval.result_fields import result_fields

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
                {"id": item.get("id"), "query": question,
                 "results": [result_fields(r, rank, corpus) for rank, r in enumerate(results, 1)]},
                ensure_ascii=False,
            ), flush=True)
    if failures:
        print(f"rag: {failures} line(s) of {batch} failed", file=sys.stderr)
    return EXIT_PARTIAL if failures else EXIT_OK
