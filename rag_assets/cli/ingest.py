"""`rag ingest` (every document of the corpus's folder) and `rag ingest-doc` (one): Dagster runs,
after a no-op check that answers an unchanged folder without importing Dagster.

Ctrl-C or SIGTERM stops an ingest within seconds (rag_assets.orchestration.stopping): the run in
progress is cancelled, no other starts, every document already indexed is kept, the summary says
how many were not started, and the exit code is 130 (SIGINT) or 143 (SIGTERM). A second one ends
the command at once."""

from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from rag_assets.cli.common import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from rag_assets.errors import ConfigurationError
from rag_assets.process_start import imports_without_gc


def add_parsers(sub) -> None:
    p = sub.add_parser("ingest", help="discover, chunk, embed and index every markdown file")
    p.add_argument("--docs-dir", help="docs folder (default: RAG_DOCS_DIR or data/docs)")
    p.add_argument("--name", metavar="NAME",
                   help="with --docs-dir: the name of the new corpus that folder becomes (default: the folder's name, "
                        "normalised; `rag corpora` lists them)")
    p.add_argument("--allow-mass-delete", action="store_true",
                   help="remove vanished documents even when that empties most of the index (RAG_ALLOW_MASS_DELETE=1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--collection", help="the Chroma collection to write (default: RAG_COLLECTION or rag_chunks)")
    p.add_argument("--workers", type=int, default=1,
                   help="document runs in flight at once, launched through the instance's run launcher "
                        "(needs a Chroma server, CHROMA_HOST; default 1: runs in this process)")
    p.add_argument("--languages", metavar="LANGS",
                   help="languages indexed: 'default' (the corpus's default language), 'all', or codes such as "
                        "en,es (RAG_LANGUAGES)")
    p.add_argument("--versions", metavar="VERSIONS",
                   help="a versioned site's versions indexed: 'current' (the one it serves at its unversioned "
                        "route), 'all' (every version it publishes), or its version names such as 2.0,1.9 (RAG_VERSIONS)")
    p.add_argument("--include", action="append", metavar="GLOB",
                   help="index only pages matching GLOB (gitignore syntax, relative to the docs folder; repeat for "
                        "any of them; RAG_INCLUDE)")
    p.add_argument("--exclude", action="append", metavar="GLOB",
                   help="leave out pages matching GLOB (gitignore syntax; repeat; RAG_EXCLUDE)")

    p = sub.add_parser("ingest-doc", help="ingest one document")
    p.add_argument("path", help="the file, as a path or relative to the docs folder")
    p.add_argument("--force", action="store_true",
                   help="read the file again even if its size and modification time did not change")
    p.add_argument("--docs-dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run_ingest(args) -> int:
    from rag_assets.orchestration.stopping import IngestInterrupted, say_stopping_at_once, stop_on_signals

    # from here on Ctrl-C and SIGTERM stop the ingest cleanly, a second one at once (before Dagster is imported)
    with stop_on_signals(exit_at_second=True, on_exit=say_stopping_at_once):
        try:
            return _run_ingest(args)
        except IngestInterrupted as stopped:
            return print_interrupted(stopped, args.json, args.corpus.name)


def _run_ingest(args) -> int:
    from rag_assets.ingest.catalog import content_changed
    from rag_assets.orchestration.noop_check import check_noop
    from rag_assets.retrieval.snapshot_builds import snapshot_follows

    started = time.perf_counter()
    settings = args.corpus.settings()  # validate configuration before any run starts
    # nothing changed since the last full ingest? answered without importing Dagster (~2 s); unless
    # the corpus's vectors are still in the default corpus's store: this ingest moves them out first
    moving = not args.corpus.is_default and (args.corpus.legacy_store() or args.corpus.left_behind_store()) is not None
    summary, look = check_noop(settings) if args.workers == 1 and not moving else (None, None)
    if summary is not None and snapshot_follows(settings):  # else the full path builds the search snapshot
        summary.duration_seconds = round(time.perf_counter() - started, 3)
        return print_summary(summary, args.json, args.corpus.name)
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
        from rag_assets.indexing.service import ingest
        from rag_assets.orchestration.loaded_corpora import corpus_definitions
        import chromadb  # noqa: F401 - the runs open the store: imported here, with the rest

    try:
        with _progress_bars(args):
            summary = ingest(allow_mass_delete=args.allow_mass_delete, workers=args.workers,
                             corpus=corpus_definitions(args.corpus), look=look)
    finally:
        if warming is not None:
            warming.join()
    return print_summary(summary, args.json, args.corpus.name)


def scope_flags(args, env: dict[str, str]) -> dict[str, str]:
    """--languages / --versions / --include / --exclude: this command's RAG_LANGUAGES / RAG_VERSIONS /
    RAG_INCLUDE / RAG_EXCLUDE over env (the settings the CLI resolves at its edge; the settings validate them)."""
    env = dict(env)
    from rag_assets.config import ENV_VARS

    for flag in ("languages", "versions"):
        if getattr(args, flag, None):
            env[ENV_VARS[flag]] = getattr(args, flag)
    for flag in ("include", "exclude"):
        if getattr(args, flag, None):
            env[ENV_VARS[flag]] = ";".join(getattr(args, flag))
    return env


def _nothing_to_index(settings) -> bool:
    """An empty docs folder on a fresh index: the typical result of pointing one level too low (or at
    the wrong folder). An emptied folder over an existing index is the deletion guard's to answer."""
    from rag_assets.index.stage_store import StageStore
    from rag_assets.ingest.discovery import has_markdown_files

    if has_markdown_files(settings.docs_dir):  # FileNotFoundError: the missing-folder message
        return False
    return StageStore.for_settings(settings.paths).catalog_folder() is None


def run_ingest_doc(args) -> int:
    from rag_assets.orchestration.stopping import IngestInterrupted, say_stopping_at_once, stop_on_signals

    with stop_on_signals(exit_at_second=True, on_exit=say_stopping_at_once):
        try:
            return _run_ingest_doc(args)
        except IngestInterrupted as stopped:
            return print_interrupted(stopped, args.json, args.corpus.name)


def _run_ingest_doc(args) -> int:
    from rag_assets.indexing.service import ingest
    from rag_assets.orchestration.loaded_corpora import corpus_definitions

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

        StageStore.for_settings(settings.paths).forget_fingerprints([doc_path])
    with _progress_bars(args):
        summary = ingest(only_doc_paths=[doc_path], corpus=corpus_definitions(args.corpus))
    if summary.documents_processed + summary.documents_unchanged + summary.documents_failed == 0:
        summary.errors.append({"doc_path": doc_path, "error": "not discovered (hidden, not markdown, refused, or left out of the corpus's scope)"})
        summary.documents_failed = len(summary.errors)
    return print_summary(summary, args.json, args.corpus.name)


def print_summary(summary, as_json: bool, corpus: str = "default") -> int:
    """The summary of an ingest of `corpus` (its name: where to look for what its scope left out)."""
    from dataclasses import asdict

    data = asdict(summary)
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        print(
            f"documents: {summary.documents_discovered} discovered, {summary.documents_processed} processed, "
            f"{summary.documents_unchanged} unchanged, {summary.documents_failed} failed, {summary.documents_deleted} deleted"
            + (f", {summary.documents_not_started} not started" if summary.documents_not_started else "") + "\n"
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
        print_unrendered(summary)
        print_left_out(summary, corpus)
        for err in summary.errors:
            print(f"  FAILED {err['doc_path']}: {err['error']}", file=sys.stderr)
    if summary.removal_refused:
        print(f"rag: {summary.removal_refused}", file=sys.stderr)
    return EXIT_PARTIAL if summary.documents_failed or summary.removal_refused else EXIT_OK


def print_interrupted(stopped, as_json: bool, corpus: str = "default") -> int:
    """A stopped ingest: what it kept, what it did not start, and that the next `rag ingest` continues;
    130 for SIGINT, 143 for SIGTERM."""
    summary = stopped.summary
    print_summary(summary, as_json, corpus)
    how = "Ctrl-C" if summary.interrupted == "SIGINT" else summary.interrupted or "an interrupt"
    kept = (f"{summary.documents_processed} document(s) indexed by this ingest are kept"
            if summary.documents_processed else "no document was indexed by this ingest")
    rest = f"; {summary.documents_not_started} not started (not failed)" if summary.documents_not_started else ""
    print(f"rag: stopped by {how}: {kept}{rest}; the next `rag ingest` continues from there", file=sys.stderr)
    return stopped.exit_code


def print_unrendered(summary, shown: int = 8) -> None:
    """The components whose text comes from the site's own code, so is not indexed, by name."""
    by_name = summary.unrendered_components
    if not by_name:
        return
    names = ", ".join(f"{name} {n}" for name, n in list(by_name.items())[:shown])
    more = f", {len(by_name) - shown} more" if len(by_name) > shown else ""
    print(f"{sum(by_name.values())} component(s) show text from the site's own code, which is not in the index: "
          f"{names}{more}")


def print_left_out(summary, corpus: str = "default") -> None:
    """What the corpus's scope left out, by reason, where the pages are listed, where its languages came
    from, and how to bring translations in (named when few)."""
    if summary.languages_from:
        print(f"languages: from {summary.languages_from}")
    if not summary.left_out:
        return
    reasons = ", ".join(f"{n} {reason}" for reason, n in summary.left_out.items())
    print(f"left out of scope: {sum(summary.left_out.values())} page(s): {reasons}"
          + (f" (the corpus's language: {summary.default_language})" if summary.default_language else ""))
    print(f"  each page and why: `rag corpora --left-out {corpus}` (and the document_catalog run's left_out_pages in the UI)")
    translations = summary.left_out.get("translation")
    if translations:
        named = summary.translations_left_out
        print(f"  {translations} translated page(s) not indexed"
              + (f" ({', '.join(named)})" if named else "")
              + ": `rag ingest --languages all` (or RAG_LANGUAGES=all, "
              "or codes: RAG_LANGUAGES=en,es) indexes them too")
    versions = sum(summary.left_out.get(r, 0) for r in ("older_version", "unreleased_version"))
    if versions:
        print(f"  {versions} page(s) of other versions not indexed: `rag ingest --versions all` (or RAG_VERSIONS=all, "
              "or the site's version names: RAG_VERSIONS=2.0,1.9) indexes them too")


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
