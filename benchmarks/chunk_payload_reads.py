"""What reading and deserialising a corpus's chunk records costs, against the document_chunks checks.

    python benchmarks/chunk_payload_reads.py STATE_DIR [--repeat 5]

STATE_DIR: the RAG_STATE_DIR of an ingested corpus (its catalog and chunk records; e.g. data/state
after `rag ingest`). Prints, as medians over --repeat runs: one read of every document's chunk
records (what each of the chunk checks did on its own before rag_assets.index.invariants.chunk_checks,
and what run_embed and run_index each do once), and both chunk checks from one read, as the
document_chunks asset and index_audit run them now (before, each check read the records itself:
one read more).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    from rag_assets.embedding import MiniLMOnnxEmbedder
    from rag_assets.index import invariants
    from rag_assets.index.stage_store import StageStore

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state_dir")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    stages = StageStore(Path(args.state_dir))
    catalog = stages.read_catalog()
    if catalog is None:
        print(f"no catalog in {args.state_dir}: ingest first", file=sys.stderr)
        return 2
    refs = catalog.documents
    fits = MiniLMOnnxEmbedder().fits
    chunks = sum(len(c) for _, c in invariants._current_chunks(stages, refs))
    read = _median_seconds(lambda: list(invariants._current_chunks(stages, refs)), args.repeat)
    checks = _median_seconds(lambda: invariants.chunk_checks(stages, refs, fits), args.repeat)
    print(f"{len(refs)} documents, {chunks} chunks")
    print(f"one read of the chunk records: {read * 1000:.1f} ms")
    print(f"both chunk checks from one read: {checks * 1000:.1f} ms (before: about {(checks + read) * 1000:.1f} ms, "
          "one read more)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
