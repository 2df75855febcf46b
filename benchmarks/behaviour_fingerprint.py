"""What the code does on the four development corpora, as data: every chunk id, and every eval
question's top 10 in each retrieval mode. Written before a refactor and compared after it, it shows
that chunk ids and retrieval results did not move (or exactly which did).

    python benchmarks/behaviour_fingerprint.py --out /tmp/before.json            # at the old commit
    python benchmarks/behaviour_fingerprint.py --out /tmp/after.json --compare /tmp/before.json

Indexes come from benchmarks/corpora.py (built into --workdir; pass --rebuild so the chunks are
those of the code checked out, not of an index an older commit left there). Exit 1 when --compare
finds a difference: chunk ids added or removed per corpus, and the questions whose ranked chunk
ids changed, per mode (scores are compared to 4 decimals, ranks exactly).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402

MODES = ("vector", "keyword", "hybrid")
TOP_K = 10


def fingerprint(name: str, workdir: Path, rebuild: bool) -> dict:
    from rag_assets.evaluation import load_eval_set

    retriever, _ = open_corpus(name, workdir, rebuild=rebuild)
    ids = sorted(retriever.store.ids())
    questions = load_eval_set(CORPORA[name].eval_set).questions
    rankings: dict[str, dict[str, list]] = {mode: {} for mode in MODES}
    for mode in MODES:
        for q in questions:
            results = retriever.search(q.question, mode, TOP_K)
            rankings[mode][q.id] = [[r.chunk_id, round(float(r.score), 4), hashlib.sha1(r.context.encode()).hexdigest()[:12]]
                                    for r in results]
    return {"chunks": len(ids), "chunk_ids_sha1": hashlib.sha1("\n".join(ids).encode()).hexdigest(),
            "chunk_ids": ids, "rankings": rankings}


def compare(before: dict, after: dict) -> list[str]:
    problems = []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            problems.append(f"{name}: only in {'after' if name in after else 'before'}")
            continue
        b, a = before[name], after[name]
        gone, new = set(b["chunk_ids"]) - set(a["chunk_ids"]), set(a["chunk_ids"]) - set(b["chunk_ids"])
        if gone or new:
            problems.append(f"{name}: chunk ids {len(b['chunk_ids'])} -> {len(a['chunk_ids'])}, "
                            f"{len(gone)} gone, {len(new)} new (e.g. {sorted(gone)[:2]} / {sorted(new)[:2]})")
        for mode in MODES:
            moved = [qid for qid in b["rankings"][mode]
                     if [r[0] for r in b["rankings"][mode][qid]] != [r[0] for r in a["rankings"][mode].get(qid, [])]]
            rescored = [qid for qid in b["rankings"][mode] if qid not in moved
                        and b["rankings"][mode][qid] != a["rankings"][mode].get(qid)]
            if moved:
                problems.append(f"{name} {mode}: ranking changed for {len(moved)} of {len(b['rankings'][mode])} "
                                f"questions (e.g. {moved[:5]})")
            if rescored:
                problems.append(f"{name} {mode}: same ranking, other scores or contexts for {len(rescored)} "
                                f"questions (e.g. {rescored[:5]})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--rebuild", action="store_true", help="re-chunk and re-index each corpus first")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--out", required=True, help="write the fingerprint (JSON) here")
    parser.add_argument("--compare", help="a fingerprint written before: report every difference")
    args = parser.parse_args(argv)
    data = {}
    for name in args.corpora.split(","):
        data[name] = fingerprint(name, Path(args.workdir), args.rebuild)
        print(f"{name}: {data[name]['chunks']} chunks, ids {data[name]['chunk_ids_sha1'][:12]}", flush=True)
    Path(args.out).write_text(json.dumps(data), encoding="utf-8")
    if not args.compare:
        return 0
    problems = compare(json.loads(Path(args.compare).read_text(encoding="utf-8")), data)
    print("\n".join(problems) if problems else "no difference: the same chunk ids and rankings on every corpus")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
