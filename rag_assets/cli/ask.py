"""`rag ask`: an answer from the indexed documents with [Source N] citations (rag_assets.answering)."""

from __future__ import annotations

import json
import sys

from rag_assets.cli.common import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, library_log_lines, valid_count
from rag_assets.cli.filter_args import add_filter_arguments, filters_from_args
from rag_assets.vocabulary.modes import MAX_TOP_K


def add_parser(sub) -> None:
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


def run(args) -> int:
    from rag_assets.answering import answer_question
    from rag_assets.errors import InvalidQueryError

    if not valid_count(args.max_sources, "--max-sources"):
        return EXIT_USAGE
    library_log_lines()
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
                url = f" <{source.url}>" if source.url else ""
                print(f"[Source {source.number}] {source.doc_path}" + (f" — {where}" if where else "") + url + mark)
        if result.invalid_citations:
            print(f"(the answer cites sources that do not exist: {result.invalid_citations})")
    sys.stdout.flush()
    if result.error:
        print(f"rag: {result.error}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK
