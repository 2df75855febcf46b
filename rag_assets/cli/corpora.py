"""Which corpus a `rag` command works on, and `rag corpora`.

`--corpus NAME` picks one. Without it, the folder decides: `--docs-dir DIR` (or RAG_DOCS_DIR) names
the default corpus's folder while the default index is empty or was built from DIR; a folder
another corpus owns is that corpus; any other folder of markdown becomes a corpus of its own, named
after it (`rag ingest` registers it), so pointing `rag` at a second folder never touches the first
one's index. An empty or missing folder is no corpus: it stays the default corpus's to refuse.
`--corpus default --docs-dir DIR` moves the default corpus to DIR (the deletion guard asks for
`--allow-mass-delete` before its old documents go).
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

from rag_assets.config import Settings
from rag_assets.corpus import DEFAULT_CORPUS, Corpus, find_corpus, new_corpus_for, owner_of, register, registered
from rag_assets.errors import ConfigurationError


def select_corpus(name: str | None, folder: str | None, *, create: bool) -> Corpus:
    """The corpus a command works on (see the module docstring); `create` registers a new one."""
    base = Settings.from_env()
    if name == DEFAULT_CORPUS or (name is None and folder is None and not os.environ.get("RAG_DOCS_DIR")):
        return Corpus()
    # the registry and the default index are read first: the project's components only when they
    # are needed, since looking at them imports Dagster (a no-op `rag ingest` answers without it)
    others = registered(base.corpora_dir)
    if name:
        corpus = next((c for c in others if c.name == name), None) or find_corpus(name, base, _all_named(base))
        if folder and corpus.docs_dir is not None and Path(folder).resolve() != Path(corpus.docs_dir):
            raise ConfigurationError(f"corpus {name} indexes {corpus.docs_dir}, not {Path(folder).resolve()}")
        return corpus
    target = Path(folder).expanduser().resolve() if folder else base.docs_dir
    owner = owner_of(target, others)
    if owner is not None:
        return owner
    from rag_assets.index.stage_store import StageStore

    default_folder = StageStore.for_settings(base).catalog_folder()
    if default_folder is None or Path(default_folder).resolve() == target:
        return Corpus()  # the default corpus is empty, or indexes this folder already
    others = _all_named(base)
    owner = owner_of(target, others)
    if owner is not None:
        return owner
    if not create or not _holds_markdown(target):
        # an empty or missing folder is no corpus: the default corpus's checks answer it (the
        # missing-folder message, or the deletion guard)
        return Corpus()
    corpus = new_corpus_for(target, base.corpora_dir, [DEFAULT_CORPUS, *(c.name for c in others)])
    register(corpus, base.corpora_dir)
    print(f"rag: {target} is a new corpus, {corpus.name!r} (its own collection and state under "
          f"{base.corpora_dir / corpus.name}); the index of {default_folder} is left as it is. "
          f"Query it with `rag --corpus {corpus.name} query ...`", file=sys.stderr)
    return corpus


def _all_named(base: Settings) -> list[Corpus]:
    """The project's component corpora and the registered folders."""
    from rag_assets.orchestration.component import known_corpora

    return known_corpora(base.corpora_dir)


def _holds_markdown(folder: Path) -> bool:
    from rag_assets.ingest.discovery import iter_markdown_files

    try:
        paths, _refused = iter_markdown_files(folder)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return bool(paths)


def corpus_rows() -> list[dict]:
    """Every corpus with what it holds: documents, chunks, last ingest and last evaluation."""
    from rag_assets.index.chroma_store import collection_count
    from rag_assets.index.stage_store import StageStore
    from rag_assets.orchestration.definitions import CORPORA
    from rag_assets.orchestration.runs import get_instance

    instance = get_instance()

    def last(asset) -> str | None:
        event = instance.get_latest_materialization_event(asset.key)
        if event is None:
            return None
        return datetime.datetime.fromtimestamp(event.timestamp, datetime.timezone.utc).isoformat(timespec="seconds")

    rows = []
    for name, defs in CORPORA.items():
        settings = defs.corpus.settings()
        catalog = StageStore.for_settings(settings).read_catalog()
        rows.append({
            "name": name,
            "docs_dir": str(catalog.docs_dir if catalog is not None else settings.docs_dir),
            "collection": settings.collection,
            "documents": len(catalog.documents) if catalog is not None else 0,
            "chunks": collection_count(settings),
            "last_ingest": last(defs.ingestion.vector_index),
            "last_evaluation": last(defs.evaluation.retrieval_evaluation),
            "assets": defs.ingestion.vector_index.key.to_user_string(),
        })
    return rows


def add_parser(sub) -> None:
    p = sub.add_parser("corpora", help="list the corpora: documents, chunks, last ingest and last evaluation")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run_corpora(args) -> int:
    import json

    rows = corpus_rows()
    if args.json:
        print(json.dumps({"corpora": rows}, indent=2))
        return 0
    print(f"{'corpus':16} {'documents':>9} {'chunks':>7}  {'last ingest':25} {'last evaluation':25} folder")
    for r in rows:
        print(f"{r['name']:16} {r['documents']:>9} {r['chunks'] if r['chunks'] is not None else '-':>7}  "
              f"{r['last_ingest'] or '-':25} {r['last_evaluation'] or '-':25} {r['docs_dir']}")
    return 0
