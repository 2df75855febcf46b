"""Which corpus a `rag` command works on, and `rag corpora`.

`--corpus NAME` picks one. Without it, the folder decides: `--docs-dir DIR` (or RAG_DOCS_DIR) names
the default corpus's folder while the default index is empty or was built from DIR; a folder
another corpus owns is that corpus; any other folder of markdown becomes a corpus of its own, named
after it (`rag ingest` registers it), so pointing `rag` at a second folder never touches the first
one's index. `rag ingest --docs-dir DIR --name NAME` names that new corpus (and makes DIR a corpus of
its own even while the default index is empty). An empty or missing folder is no corpus: it stays
the default corpus's to refuse. `--corpus default --docs-dir DIR` moves the default corpus to DIR
(the deletion guard asks for `--allow-mass-delete` before its old documents go).
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path
from typing import Mapping

from rag_assets.config import ENV_VARS, Settings
from rag_assets.corpus import DEFAULT_CORPUS, Corpus, find_corpus, new_corpus_for, owner_of, register, registered
from rag_assets.errors import ConfigurationError


def select_corpus(name: str | None, folder: str | None, *, create: bool, new_name: str | None = None,
                  env: Mapping[str, str] | None = None) -> Corpus:
    """The corpus a command works on (see the module docstring), as the environment `env` (default:
    the process's) says; `create` registers a new one, named `new_name` when given (`rag ingest
    --name`). The caller puts the settings it resolved under it (Corpus.over)."""
    env = os.environ if env is None else env
    base = Settings.from_env(env)
    if new_name is not None:
        return _named_corpus(new_name, name, folder, base)
    if name == DEFAULT_CORPUS or (name is None and folder is None and not env.get(ENV_VARS["docs_dir"])):
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

    default_folder = StageStore.for_settings(base.paths).catalog_folder()
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
    print(f"rag: {target} is a new corpus, {corpus.name!r} (its own vector store and state under "
          f"{base.corpora_dir / corpus.name}); the index of {default_folder} is left as it is. "
          f"Query it with `rag --corpus {corpus.name} query ...`", file=sys.stderr)
    return corpus


def _named_corpus(new_name: str, name: str | None, folder: str | None, base: Settings) -> Corpus:
    """`rag ingest --docs-dir DIR --name NAME`: the corpus NAME for DIR, made and registered if new."""
    if folder is None:
        raise ConfigurationError("--name names the corpus a new folder becomes: give the folder with --docs-dir")
    if name is not None and name != new_name:
        raise ConfigurationError(f"--corpus {name} and --name {new_name}: give one of them")
    target = Path(folder).expanduser().resolve()
    others = _all_named(base)
    same = next((c for c in others if c.name == new_name), None)
    owner = owner_of(target, others)
    if same is not None:
        if same is not owner and Path(same.docs_dir) != target:
            raise ConfigurationError(f"corpus {new_name} indexes {same.docs_dir}, not {target}; pick another name")
        return same
    if owner is not None:
        raise ConfigurationError(f"{target} is corpus {owner.name}'s folder already; use --corpus {owner.name}")
    if new_name == DEFAULT_CORPUS:
        raise ConfigurationError(f"'{DEFAULT_CORPUS}' is the project's own corpus: use --corpus {DEFAULT_CORPUS}")
    if not _holds_markdown(target):
        raise ConfigurationError(f"no markdown files (*.md, *.mdx) under {target}: nothing to make corpus {new_name} of")
    corpus = new_corpus_for(target, base.corpora_dir, [DEFAULT_CORPUS, *(c.name for c in others)], name=new_name)
    register(corpus, base.corpora_dir)
    print(f"rag: {target} is a new corpus, {corpus.name!r} (its own vector store and state under "
          f"{base.corpora_dir / corpus.name}). Query it with `rag --corpus {corpus.name} query ...`", file=sys.stderr)
    return corpus


def _all_named(base: Settings) -> list[Corpus]:
    """The project's component corpora and the registered folders."""
    from rag_assets.corpus_registry import known_corpora

    return known_corpora(base)


def _holds_markdown(folder: Path) -> bool:
    from rag_assets.ingest.discovery import iter_markdown_files

    try:
        paths, _refused = iter_markdown_files(folder)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return bool(paths)


def corpus_rows() -> list[dict]:
    """Every corpus with what it holds: documents found, indexed, failed and left out, chunks, where
    its vectors are, its last ingest (how it ended, when) and its last evaluation."""
    from rag_assets.index.chroma_store import collection_count
    from rag_assets.index.stage_store import INDEXED, StageStore
    from rag_assets.orchestration.definitions import CORPORA
    from rag_assets.orchestration.instance import get_instance
    from rag_assets.orchestration.run_records import last_ingest

    instance = get_instance()

    def last(asset) -> str | None:
        event = instance.get_latest_materialization_event(asset.key)
        if event is None:
            return None
        return datetime.datetime.fromtimestamp(event.timestamp, datetime.timezone.utc).isoformat(timespec="seconds")

    rows = []
    for name, defs in CORPORA.items():
        settings = defs.corpus.settings()
        stages = StageStore.for_settings(settings.paths)
        catalog = stages.read_catalog()
        ingest = last_ingest(stages)
        scope = stages.read_scope()
        indexed_at = last(defs.ingestion.vector_index)
        rows.append({
            "name": name,
            "docs_dir": str(catalog.docs_dir if catalog is not None else settings.docs_dir),
            "collection": settings.collection,
            "store": f"{settings.chroma_host}:{settings.chroma_port}" if settings.chroma_host else str(settings.chroma_path),
            "documents": len(catalog.documents) if catalog is not None else 0,
            "indexed": len(stages.doc_paths(INDEXED)),
            "failed": len(stages.failures()),
            "left_out": left_out(scope),  # pages out of its scope (ignore files, drafts, translations: by reason below)
            "left_out_by_reason": dict((scope or {}).get("left_out") or {}),
            "chunks": collection_count(settings),
            # the last `rag ingest` / RAGPipeline.ingest: finished, interrupted (stopped, or killed) or
            # failed, and when it ended; a run from the UI or a sensor shows in last_indexed
            "last_ingest": ingest.get("at") if ingest else indexed_at,
            "last_ingest_outcome": ingest.get("outcome") if ingest else None,
            "last_ingest_documents_not_started": ingest.get("documents_not_started", 0) if ingest else 0,
            "last_indexed": indexed_at,
            "last_evaluation": last(defs.evaluation.retrieval_evaluation),
            "assets": defs.ingestion.vector_index.key.to_user_string(),
        })
    return rows


def left_out(scope: dict | None) -> int | None:
    """How many pages the corpus's scope left out at its last look (None before any look)."""
    if not scope:
        return None
    return int(scope.get("documents_left_out") or 0)


def left_out_pages(scope: dict | None) -> list[dict]:
    """The pages a recorded look left out of a corpus's scope (StageStore.read_scope), by path: each
    {"doc_path", "reason"}, and "language" for a translation (when the look recorded it)."""
    scope = scope or {}
    languages = scope.get("page_languages") or {}
    rows = []
    for path, reason in sorted((scope.get("pages") or {}).items()):
        row = {"doc_path": path, "reason": reason}
        if path in languages:
            row["language"] = languages[path]
        rows.append(row)
    return rows


def add_parser(sub) -> None:
    p = sub.add_parser("corpora", help="list the corpora: documents indexed, failed and left out, chunks, last "
                                       "ingest (how it ended, when) and last evaluation")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--left-out", nargs="?", const="", metavar="NAME",
                   help="list each page the corpus's scope left out at its last look and why (a translation with its "
                        "language), from the state its last ingest recorded; NAME: the corpus (default: `rag --corpus "
                        "NAME`, else default)")


def run_corpora(args) -> int:
    import json

    if args.left_out is not None:
        return run_left_out(args.left_out or args.corpus or DEFAULT_CORPUS, args.json)
    rows = corpus_rows()
    if args.json:
        print(json.dumps({"corpora": rows}, indent=2))
        return 0
    print(f"{'corpus':16} {'indexed':>7} {'failed':>6} {'left out':>8} {'chunks':>7}  {'last ingest':38} "
          f"{'last evaluation':25} folder")
    for r in rows:
        outcome = r["last_ingest_outcome"]
        if outcome == "interrupted" and r["last_ingest_documents_not_started"]:
            outcome = f"interrupted ({r['last_ingest_documents_not_started']} not started)"
        ingest = " ".join(x for x in (outcome, r["last_ingest"]) if x) or "-"
        print(f"{r['name']:16} {r['indexed']:>7} {r['failed']:>6} {_or_dash(r['left_out']):>8} "
              f"{_or_dash(r['chunks']):>7}  {ingest:38} {r['last_evaluation'] or '-':25} {r['docs_dir']}")
    return 0


def _or_dash(value) -> str:
    return "-" if value is None else str(value)


def run_left_out(name: str, as_json: bool) -> int:
    """`rag corpora --left-out NAME`: the pages its last look left out, read from the state database
    (the folder is not walked again: what the last `rag ingest` decided is what is shown)."""
    import json

    from rag_assets.index.stage_store import StageStore
    from rag_assets.ingest.scope import left_out_counts

    corpus = select_corpus(name, None, create=False).over(Settings.from_env())
    scope = StageStore.for_settings(corpus.settings().paths).read_scope()
    pages = left_out_pages(scope)
    by_reason = left_out_counts({p["doc_path"]: p["reason"] for p in pages})
    language = str((scope or {}).get("default_language") or "")
    if as_json:
        print(json.dumps({"corpus": corpus.name, "looked": scope is not None, "default_language": language or None,
                          "left_out": len(pages), "left_out_by_reason": by_reason, "pages": pages},
                         indent=2, ensure_ascii=False))
        return 0
    if scope is None:
        print(f"corpus {corpus.name}: no look at its folder recorded yet (`rag ingest` records one)")
        return 0
    reasons = ", ".join(f"{n} {reason}" for reason, n in by_reason.items())
    print(f"corpus {corpus.name}: {len(pages)} page(s) left out of scope" + (f": {reasons}" if reasons else "")
          + (f" (the corpus's language: {language})" if language else ""))
    width = min(max((len(p["doc_path"]) for p in pages), default=0), 72)
    for page in pages:
        why = page["reason"] + (f" ({page['language']})" if page.get("language") else "")
        print(f"  {page['doc_path']:{width}}  {why}")
    return 0
