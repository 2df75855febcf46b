"""Score covid-qa-dev (answer-span labels) with the rag_assets of ANY checkout, through its own CLI
(`rag ingest`, then `rag query --batch --json`): what the bisect of issue 20 ran on old commits,
whose Python APIs and benchmark scripts differ from today's.

    git worktree add /tmp/old <commit>
    python benchmarks/covid_checkout_eval.py --code /tmp/old [--modes hybrid,keyword,vector]
        [--env RAG_FUSION=rrf ...] [--field text|context]

Scoring (../shared/README.md): a result holds the answer when it is from the expected paper and its
normalised text (or `--field context`) contains the normalised answer span; answer hit@5, answer
MRR@10 over the top 10, document R@5. Each run indexes into a fresh temp folder.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
PY = sys.executable
COVID = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "covid-qa-dev"

def norm(s):
    s = re.sub(r"[*_`]", "", s or "")
    return " ".join(s.split()).casefold()

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--code", type=Path, required=True)
    p.add_argument("--modes", default="hybrid,keyword,vector")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--field", default="text", help="result field holding the text an answer is given (text|context)")
    a = p.parse_args()
    qs = [json.loads(l) for l in (COVID / "eval.jsonl").read_text().splitlines() if l.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="covid-"))
    (tmp / "dagster").mkdir()
    shutil.copy(a.code / "dagster.yaml", tmp / "dagster" / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "CHROMA_"))}
    env.update(PYTHONPATH=str(a.code.resolve()), DAGSTER_HOME=str(tmp / "dagster"), RAG_DOCS_DIR=str(COVID / "docs"),
               RAG_STATE_DIR=str(tmp / "state"), RAG_CHROMA_PATH=str(tmp / "chroma"), RAG_CACHE_DIR=str(tmp / "cache"),
               RAG_EVAL_DIR=str(tmp / "noeval"))
    for kv in a.env:
        k, v = kv.split("=", 1); env[k] = v
    t = time.time()
    r = subprocess.run([PY, "-m", "rag_assets", "ingest", "--json"], env=env, cwd=tmp, capture_output=True, text=True)
    if r.returncode: sys.exit(r.stdout[-2000:] + r.stderr[-3000:])
    ing = json.loads(r.stdout)
    print(f"{a.code} ingest {ing.get('chunks_written')} chunks {time.time()-t:.0f}s", file=sys.stderr)
    batch = tmp / "q.jsonl"
    batch.write_text("".join(json.dumps({"id": q["id"], "question": q["question"]}) + "\n" for q in qs))
    out = {}
    for mode in a.modes.split(","):
        r = subprocess.run([PY, "-m", "rag_assets", "query", "--batch", str(batch), "--top-k", "10", "--mode", mode, "--json"],
                           env=env, cwd=tmp, capture_output=True, text=True)
        if r.returncode: sys.exit(r.stderr[-3000:])
        res = {x["id"]: x["results"] for x in map(json.loads, r.stdout.splitlines())}
        hit5 = mrr = doc5 = 0; ctx = []
        for q in qs:
            e = q["expected"][0]; want = norm(e["text"]); rs = res.get(q["id"], [])[:10]
            rank = next((i for i, x in enumerate(rs, 1) if x["doc_path"] == e["doc_path"] and want in norm(x.get(a.field) or x["text"])), None)
            hit5 += bool(rank and rank <= 5); mrr += 1 / rank if rank else 0
            doc5 += e["doc_path"] in [x["doc_path"] for x in rs[:5]]
            ctx += [len((x.get(a.field) or x["text"]).split()) for x in rs[:5]]
        n = len(qs)
        out[mode] = {"answer_hit@5": round(hit5 / n, 3), "answer_mrr@10": round(mrr / n, 3), "doc_R@5": round(doc5 / n, 3),
                     "mean_words@5": round(sum(ctx) / max(len(ctx), 1))}
    print(json.dumps({"code": str(a.code), "env": a.env, "chunks": ing.get("chunks_written"), **out}))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
