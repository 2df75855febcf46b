"""The development corpora of the retrieval benchmarks, each indexed once into a scratch folder.

| name | docs | eval set | licence |
|---|---|---|---|
| claude-docs | data/docs (bundled) | data/eval/claude-docs.jsonl (100 questions) | MIT |
| fastapi | data/samples/fastapi/docs (bundled) | its eval.jsonl (60 questions) | MIT |
| textbook | ../shared/corpora/physical-ai-textbook | benchmarks/textbook_eval.jsonl (40 questions) | none: read in place, never copied |
| covid-qa-dev | ../shared/datasets/covid-qa-dev/docs (40 papers, no headings) | its eval.jsonl (250 questions labelled by answer span) | Apache-2.0: read in place, never copied |

covid-qa-dev is scored by the same evaluation: its expected entries are ``{doc_path, text}``, so a
result satisfies one when it is from that paper and holds the answer span (in its ``context`` when
results carry one). Each paper is one section (no headings), so its section-level hit@k / MRR are
*answer* hit@k / MRR, and document recall@k is whether the right paper is found.

`open_corpus(name)` returns a Retriever over that corpus's index in ``<workdir>/<name>/`` (Chroma,
state, search snapshot), building it first if it is empty. Vectors come from one embedding cache shared
by every corpus (``<workdir>/embeddings.sqlite``): after a chunking change only the chunks whose
indexed text changed are embedded again. Nothing here is written into the repository.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the shared datasets beside the checkout; BENCHMARK_SHARED_DIR names them for a checkout elsewhere (a worktree)
SHARED = Path(os.environ.get("BENCHMARK_SHARED_DIR") or ROOT.parent / "shared")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_WORKDIR = Path("/tmp/rag-corpora")


@dataclass(frozen=True)
class Corpus:
    name: str
    docs: Path
    eval_set: Path


CORPORA: dict[str, Corpus] = {
    "claude-docs": Corpus("claude-docs", ROOT / "data" / "docs", ROOT / "data" / "eval" / "claude-docs.jsonl"),
    "fastapi": Corpus("fastapi", ROOT / "data" / "samples" / "fastapi" / "docs",
                      ROOT / "data" / "samples" / "fastapi" / "eval.jsonl"),
    "textbook": Corpus("textbook", SHARED / "corpora" / "physical-ai-textbook", HERE / "textbook_eval.jsonl"),
    "covid-qa-dev": Corpus("covid-qa-dev", SHARED / "datasets" / "covid-qa-dev" / "docs",
                           SHARED / "datasets" / "covid-qa-dev" / "eval.jsonl"),
}


def corpus_settings(corpus: Corpus, workdir: Path = DEFAULT_WORKDIR, **overrides):
    from rag_assets.config import Settings

    root = Path(workdir) / corpus.name
    return Settings.from_env(
        {},
        docs_dir=corpus.docs,
        chroma_path=root / "chroma",
        state_dir=root / "state",
        cache_dir=Path(workdir) / "cache",
        **overrides,
    )


def open_corpus(name: str, workdir: Path = DEFAULT_WORKDIR, *, rebuild: bool = False, embedder=None, **overrides):
    """(Retriever, build stats or None) for the corpus; builds its index when empty or asked to."""
    from rag_assets.index.embedding_cache import EmbeddingCache
    from rag_assets.index.state_db import StateDB, local_state_url
    from rag_assets.retrieval.retriever import Retriever
    from rag_assets_tests.support.index_builder import build_index

    corpus = CORPORA[name]
    if not corpus.docs.is_dir():
        raise SystemExit(f"corpus {name} not found at {corpus.docs}")
    settings = corpus_settings(corpus, workdir, **overrides)
    retriever = Retriever.from_settings(settings) if embedder is None else None
    if retriever is None:
        from rag_assets.index.chroma_store import ChromaStore

        retriever = Retriever(embedder, ChromaStore.for_settings(settings.paths, embedder), settings)
    built = None
    if rebuild or retriever.store.count() == 0:
        cache = EmbeddingCache(StateDB.open(local_state_url(workdir)))
        start = time.perf_counter()
        built = build_index(corpus.docs, settings, embedder=retriever.embedder, cache=cache)
        built["seconds"] = round(time.perf_counter() - start, 1)
    retriever.view()  # the search snapshot open (built from the store once if the index predates it)
    return retriever, built


def report_main(description: str, run, argv: list[str] | None = None) -> int:
    """A benchmark's command line: ``run(workdir) -> markdown`` printed, and written with --markdown FILE."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--markdown", help="also write the tables to this file")
    args = parser.parse_args(argv)
    text = run(Path(args.workdir))
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":  # build (or refresh) every corpus index: python benchmarks/corpora.py [--rebuild]
    import argparse

    parser = argparse.ArgumentParser(description="index the development corpora into a scratch folder")
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("names", nargs="*", default=list(CORPORA))
    args = parser.parse_args()
    for corpus_name in args.names:
        r, stats = open_corpus(corpus_name, Path(args.workdir), rebuild=args.rebuild)
        print(corpus_name, r.store.count(), "chunks", stats or "(existing index)", flush=True)
