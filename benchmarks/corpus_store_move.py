"""Moving a corpus into a store of its own, against indexing it again from its embedding cache.

A corpus made before corpora had stores of their own keeps its collection in the default corpus's
store until its next `rag ingest` moves it (rag_assets/orchestration/corpus_stores.py): the vectors
are copied. The other way would be to let the ingest index every document again into an empty store of
its own: nothing is embedded again either (the embedding cache has every vector), but every document
goes through its runs. This measures both on the same corpus, and the first ingest for scale:

1. the corpus ingested the old way (its store pinned to the default corpus's, in this process);
2. `rag --corpus NAME ingest --json`: the move (copy, records renamed, old collection dropped);
3. its store deleted, `rag --corpus NAME ingest --json` again: indexed again from the embedding cache.

    .venv/bin/python benchmarks/corpus_store_move.py --docs data/docs --workdir /tmp/corpus-move

Prints a markdown table (results in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scratch import scratch_env  # noqa: E402 - beside this script
NAME = "moved"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(ROOT / "data" / "docs"), help="the corpus's folder")
    parser.add_argument("--workdir", default="/tmp/corpus-move", help="scratch state (emptied first)")
    args = parser.parse_args()
    work = Path(args.workdir)
    os.environ.update(scratch_env(work))

    started = time.perf_counter()
    first = old_way_ingest(Path(args.docs).resolve())
    rows = [("first ingest, the old way (every chunk embedded)", time.perf_counter() - started, first)]

    started = time.perf_counter()
    moved = rag("--corpus", NAME, "ingest", "--json")
    rows.append(("the move: `rag ingest` copies the collection", time.perf_counter() - started, moved))

    shutil.rmtree(work / "corpora" / NAME / "chroma")
    started = time.perf_counter()
    again = rag("--corpus", NAME, "ingest", "--json")
    rows.append(("indexed again into an empty store, from the embedding cache", time.perf_counter() - started, again))

    print(f"\n{first['chunks_written']} chunks, {first['documents_processed']} documents ({args.docs}); "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| step | wall s | documents processed | embeddings computed | vectors written |")
    print("|---|---|---|---|---|")
    for label, seconds, summary in rows:
        print(f"| {label} | {seconds:.1f} | {summary['documents_processed']} | {summary['embeddings_computed']} | "
              f"{summary['chunks_written']} |")


def old_way_ingest(docs: Path) -> dict:
    """The corpus registered and ingested with its store where every corpus's used to be."""
    from dataclasses import asdict

    from rag_assets.config import Settings
    from rag_assets.corpus import Corpus, register
    from rag_assets.indexing import service
    from rag_assets.orchestration.loaded_corpora import corpus_definitions

    settings = Settings.from_env()
    corpus = Corpus.named(NAME, docs, settings.corpora_dir, base=settings)
    register(corpus, settings.corpora_dir)
    Corpus.store_folder = lambda self: self.base_settings().chroma_path  # the layout before
    service.move_to_own_store = lambda corpus: None
    return asdict(service.ingest(corpus=corpus_definitions(corpus)))


def rag(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True, timeout=7200)
    if proc.returncode != 0:
        raise SystemExit(f"rag {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    print(proc.stderr.strip(), file=sys.stderr)
    return json.loads(proc.stdout)


if __name__ == "__main__":
    main()
