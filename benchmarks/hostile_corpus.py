"""Run `rag ingest` over the hostile corpus by hand and show what was indexed and what was reported.

    .venv/bin/python benchmarks/hostile_corpus.py [--keep DIR]

Everything lives in a temporary folder (docs, Chroma, state, DAGSTER_HOME) unless --keep names
one. Steps: ingest the conftest sample corpus, snapshot the index, add the hostile files
(rag_assets_tests/support/hostile_corpus.py), ingest again, then print the exit code, every reported file
with its reason, whether each expected-bad file was reported with the expected reason, the chunk
count of every good document, and whether the first snapshot survived untouched.
Exit status 0 when everything matched the expectations, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_assets_tests.conftest import SAMPLE_DOCS, write_corpus  # noqa: E402
from rag_assets_tests.support.hostile_corpus import EMPTY, GOOD, build_hostile_corpus, unlock  # noqa: E402


def ingest(env: dict) -> tuple[int, dict, float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    took = time.perf_counter() - started
    try:
        return proc.returncode, json.loads(proc.stdout), took
    except ValueError:
        sys.exit(f"ingest did not print JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def index_snapshot(env: dict) -> dict[str, Counter]:
    code = (
        "import json, chromadb; from collections import defaultdict\n"
        "from chromadb.config import Settings\n"
        f"c = chromadb.PersistentClient(path={env['RAG_CHROMA_PATH']!r}, settings=Settings(anonymized_telemetry=False))\n"
        "g = c.get_collection('rag_chunks').get(include=['documents','metadatas'])\n"
        "out = defaultdict(dict)\n"
        "[out[m['doc_path']].__setitem__(i, t) for i, t, m in zip(g['ids'], g['documents'], g['metadatas'])]\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary folder)")
    args = parser.parse_args()
    work = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="rag-hostile-"))
    if args.keep and work.exists():
        unlock(work / "docs")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / "dagster_home").mkdir()
    (work / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(work / "dagster_home"),
        "RAG_DOCS_DIR": str(write_corpus(work / "docs")),
        "RAG_CHROMA_PATH": str(work / "chroma"),
        "RAG_STATE_DIR": str(work / "state"),
        "RAG_CACHE_DIR": str(work / "cache"),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "ORT_DISABLE_TELEMETRY": "1",
    }
    env.pop("CHROMA_HOST", None)
    ok = True
    try:
        code, first, took = ingest(env)
        print(f"good corpus: exit {code}, {first['documents_processed']} documents, {took:.1f} s")
        before = index_snapshot(env)

        bad = build_hostile_corpus(work / "docs", outside=work / "outside")
        code, report, took = ingest(env)
        print(f"\nhostile corpus: exit {code} (expected 1), {took:.1f} s, "
              f"{report['documents_processed']} processed, {report['documents_failed']} failed")
        ok &= code == 1
        reported = {e["doc_path"]: e["error"] for e in report["errors"]}
        print("\nreported:")
        for doc_path, error in sorted(reported.items()):
            want = bad.get(doc_path)
            verdict = "ok" if want and want in error else ("UNEXPECTED" if not want else f"WRONG REASON (want {want!r})")
            ok &= verdict == "ok"
            print(f"  [{verdict}] {doc_path}: {error}")
        for doc_path in sorted(set(bad) - set(reported)):
            ok = False
            print(f"  [MISSING] {doc_path}: expected {bad[doc_path]!r}")

        after = index_snapshot(env)
        print("\nindexed (chunks):")
        for doc_path in sorted(set(GOOD) | set(EMPTY)):
            n = len(after.get(doc_path, {}))
            good = (n > 0) if doc_path in GOOD else (n == 0 and doc_path not in reported)
            ok &= good
            print(f"  [{'ok' if good else 'WRONG'}] {doc_path}: {n}")
        kept = all(after.get(p) == before.get(p) for p in SAMPLE_DOCS)
        ok &= kept
        print(f"\npreviously indexed documents untouched: {kept}")
        leaked = any("PLATYPUS" in t for chunks in after.values() for t in chunks.values())
        ok &= not leaked
        print(f"symlink target outside the docs folder read: {leaked}")
    finally:
        unlock(work / "docs")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"\nkept in {work}")
    print("\nALL AS EXPECTED" if ok else "\nSOME EXPECTATIONS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
