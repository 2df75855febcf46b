"""Context windows (issue 20, item 2): answer hit@k against the context's token cost.

    python benchmarks/context_windows.py [--workdir /tmp/rag-corpora] [--corpora covid-qa-dev,claude-docs,fastapi]
        [--modes vector,keyword,hybrid] [--budgets 0,200,300,400,600] [--markdown FILE] [--json FILE]

Every question is retrieved once per mode (10 results, ``context_tokens=0``: the ranking does not
depend on the context); then every variant below builds each result's context from the same index
(the keyword index's row table for the sections, the store for the texts) and the project's own
evaluation scores it (rag_assets.evaluation: a ``text`` label is looked for in the context). So the
variants differ in the context only, never in the ranking.

Variants:
- ``chunk``: no context (RAG_CONTEXT_TOKENS=0, the results before issue 20);
- ``window B``: the shipped rule (rag_assets.retrieval.windows.grow, the following chunk first,
  alternating) with a budget of B tokens; ``window B, <policy>`` the other growth orders
  (``before``: the preceding chunk first; ``forward`` / ``backward``: all of one side that fits, then
  the other);
- ``section``: the whole section (for covid-qa-dev, a whole paper: it has no headings);
- ``±n chunks``: n chunks either side, whatever their size, within the section (a fixed window:
  LlamaIndex's sentence window at chunk granularity);
- ``±n sentences``: the chunk plus its n neighbouring sentences either side, within the section
  (LlamaIndex's SentenceWindowNodeParser, its window at the chunk's edges), n chosen so its mean cost
  is closest to ``window 400``'s;
- ``parent B``: the section cut into consecutive blocks of at most B tokens from its start, the
  block holding the chunk (LangChain's ParentDocumentRetriever / LlamaIndex's auto-merging parents).

Reported per corpus, mode and variant: answer hit@5 and MRR@10 (the section-level hit@5 / MRR of the
evaluation: for covid-qa-dev, a result from the right paper whose context holds the answer span),
document recall@5, section R@3 / R@5 / MRR (for the documentation sites, whose labels are sections:
context cannot move them) and the mean context tokens per result over the first 5 results (stored
token counts, as the product counts them, and tiktoken's count of the joined text).
Indexes come from benchmarks/corpora.py (built once into --workdir, embeddings cached).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402

COST_OF = 5  # mean context tokens over each question's first 5 results (what hit@5 reads)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


class Sections:
    """The index's chunks grouped by section (the product's own grouping: SnapshotView.section_rows)."""

    def __init__(self, retriever):
        self.view = retriever.view()

    def of(self, chunk_id: str):
        """(chunk ids, token counts, texts) of the chunk's section in document order, its place."""
        row = self.view.row(chunk_id)
        rows, at = self.view.section_rows(row)
        ids = [self.view.chunk_id(int(r)) for r in rows]
        return ids, [self.view.tokens(int(r)) for r in rows], [self.view.text(int(r)) for r in rows], at


def window_variant(budget: int, first: str = "after"):
    from rag_assets.retrieval.windows import grow, join_texts, window_tokens

    def build(ids, tokens, texts, at):
        if budget <= 0:
            return "", 0
        start, end = grow(tokens, at, budget, first=first)
        return join_texts(texts[start:end]), window_tokens(tokens[start:end])
    return build


def section_variant(ids, tokens, texts, at):
    from rag_assets.retrieval.windows import join_texts, window_tokens

    return join_texts(texts), window_tokens(tokens)


def fixed_variant(n: int):
    from rag_assets.retrieval.windows import join_texts, window_tokens

    def build(ids, tokens, texts, at):
        lo, hi = max(0, at - n), min(len(ids), at + n + 1)
        return join_texts(texts[lo:hi]), window_tokens(tokens[lo:hi])
    return build


def sentence_variant(n: int, count):
    from rag_assets.retrieval.windows import join_texts

    def build(ids, tokens, texts, at):
        before = _sentences(join_texts(texts[:at]))
        after = _sentences(join_texts(texts[at + 1:]))
        parts = before[len(before) - n:] if n and before else []
        text = " ".join(parts + [texts[at].strip()] + after[:n])
        return text, count(text)
    return build


def parent_variant(budget: int):
    from rag_assets.retrieval.windows import JOIN_TOKENS, join_texts, window_tokens

    def build(ids, tokens, texts, at):
        start, used = 0, 0
        for i, t in enumerate(tokens):
            if i > start and used + JOIN_TOKENS + t > budget:
                if i > at:
                    break
                start, used = i, 0
            used += t + (JOIN_TOKENS if i > start else 0)
            end = i + 1
        return join_texts(texts[start:end]), window_tokens(tokens[start:end])
    return build


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def per_result(build, sections):
    """A variant from a per-result rule: build(ids, tokens, texts, at) -> (context, tokens)."""
    def fill(retriever, results):
        for r in results:
            r.context, r.context_tokens = build(*sections.of(r.chunk_id))
    return fill


def shipped(budget: int, passages_: int, share: float | None = None):
    """The product's own context (Retriever.add_context) with these settings."""
    def fill(retriever, results):
        from rag_assets.retrieval import windows

        saved, saved_share = retriever.settings, windows.FIRST_SHARE
        retriever.settings = dataclasses.replace(saved, context_passages=passages_)
        windows.FIRST_SHARE = saved_share if share is None else share
        try:
            retriever.add_context(results, budget)
        finally:
            retriever.settings, windows.FIRST_SHARE = saved, saved_share
    return fill


def score(questions, ranked, fill, retriever, modes, count):
    """The evaluation's metrics for these rankings with each result's context filled by ``fill``."""
    from rag_assets.evaluation import evaluate_retrieval

    built, costs, exact, times = {}, [], [], []
    for mode in modes:
        for q in questions:
            out = [dataclasses.replace(r, section_hits=list(r.section_hits)) for r in ranked[mode][q.id]]
            started = time.perf_counter()
            fill(retriever, out[:COST_OF])
            times.append(1000 * (time.perf_counter() - started))
            fill(retriever, out[COST_OF:])
            for r in out[:COST_OF]:  # no context: what is handed over is the chunk
                costs.append(r.context_tokens if r.context else int(r.metadata.get("token_count") or 0))
                exact.append(count(r.context or r.text))
            built[(mode, q.id)] = out
    # the evaluation asks question after question, mode by mode, in the eval set's order
    queues = {m: iter([built[(m, q.id)] for q in questions]) for m in modes}
    report = evaluate_retrieval(questions, lambda question, mode, k, *_: next(queues[mode])[:k],
                                modes=modes, top_k=10, ragas=False)
    return (report, (statistics.fmean(costs) if costs else 0.0), (statistics.fmean(exact) if exact else 0.0), exact, costs,
            times)


def run(workdir: Path, corpora: list[str], modes: list[str], budgets: list[int]) -> dict:
    from rag_assets.evaluation import load_eval_set
    from rag_assets.ingest.tokens import TokenCounter, get_encoding

    encoding = get_encoding("cl100k_base")
    counter = TokenCounter(encoding)
    count = counter.count
    out: dict = {"corpora": {}, "machine": machine()}
    for name in corpora:
        retriever, _ = open_corpus(name, workdir)
        questions = load_eval_set(CORPORA[name].eval_set).questions
        sections = Sections(retriever)
        ranked = {m: {} for m in modes}
        started = time.perf_counter()
        for mode in modes:
            for q in questions:
                filters = q.metadata.get("filters")
                ranked[mode][q.id] = retriever.search(q.question, mode, 10, filters, context_tokens=0)
        retrieve_s = time.perf_counter() - started
        probe = 400 if 400 in budgets else max(budgets)
        variants: list[tuple[str, object]] = [("chunk", shipped(0, 1))]
        variants += [(f"window {b}", shipped(b, 1)) for b in budgets if b > 0]
        variants += [(f"window {probe}, {p}", per_result(window_variant(probe, p), sections))
                     for p in ("before", "forward", "backward")]
        variants += [(f"passages {b}", shipped(b, 2)) for b in budgets if b > 0]
        variants += [(f"passages {probe}, first {sh:.0%}", shipped(probe, 2, sh)) for sh in (0.5, 0.7)]
        variants += [(f"3 passages {probe}", shipped(probe, 3))]
        variants += [("section", per_result(section_variant, sections)),
                     ("±1 chunk", per_result(fixed_variant(1), sections)),
                     ("±2 chunks", per_result(fixed_variant(2), sections)),
                     (f"parent {probe}", per_result(parent_variant(probe), sections))]
        rows = {}
        for label, fill in variants:
            rows[label] = _row(*score(questions, ranked, fill, retriever, modes, count), modes=modes)
            print(f"{name}: {label}", file=sys.stderr, flush=True)
        # the sentence window whose mean cost is closest to the shipped window's
        target = rows[f"passages {probe}"]["tokens"]
        best = None
        for n in range(1, 12):
            row = _row(*score(questions, ranked, per_result(sentence_variant(n, count), sections), retriever, modes,
                              count), modes=modes)
            if best is None or abs(row["tokens"] - target) < abs(best[1]["tokens"] - target):
                best = (n, row)
            if row["tokens"] > target:
                break
        rows[f"±{best[0]} sentences"] = best[1]
        out["corpora"][name] = {"questions": len(questions), "chunks": retriever.store.count(),
                                "retrieve_seconds": round(retrieve_s, 1), "rows": rows}
        print(f"{name}: done ({len(questions)} questions)", file=sys.stderr, flush=True)
    return out


def _row(report, cost, exact_cost, exact, est, times, *, modes) -> dict:
    keys = ("section.hit@5", "section.mrr@10", "document.recall@5", "section.recall@3", "section.recall@5")
    over = sum(1 for e, s in zip(exact, est) if e > s)
    ordered = sorted(times)
    ms = {"p50": round(ordered[len(ordered) // 2], 2), "p95": round(ordered[int(len(ordered) * 0.95)], 2)}
    return {"tokens": cost, "tiktoken": exact_cost, "over_estimate": over, "fill_ms_top5": ms,
            **{m: {k: report.metrics[m][k] for k in keys} for m in modes}}


def machine() -> dict:
    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "load": round(os.getloadavg()[0], 2), "date": time.strftime("%Y-%m-%d")}


def markdown(result: dict, modes: list[str]) -> str:
    lines = []
    for name, data in result["corpora"].items():
        answers = name == "covid-qa-dev"
        lines.append(f"### {name} ({data['questions']} questions, {data['chunks']} chunks)\n")
        if answers:
            head = "| context | tokens / result | " + " | ".join(
                f"{m} hit@5 | {m} MRR | {m} doc R@5" for m in modes) + " |"
        else:
            head = "| context | tokens / result | " + " | ".join(f"{m} R@3 | {m} R@5 | {m} MRR" for m in modes) + " |"
        lines += [head, "|---|---|" + "---|" * (3 * len(modes))]
        for label, row in data["rows"].items():
            cells = []
            for m in modes:
                v = row[m]
                keys = (("section.hit@5", "section.mrr@10", "document.recall@5") if answers
                        else ("section.recall@3", "section.recall@5", "section.mrr@10"))
                cells += [f"{v[k]:.3f}" for k in keys]
            lines.append(f"| {label} | {row['tokens']:.0f} ({row['tiktoken']:.0f}) | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--corpora", default="covid-qa-dev,claude-docs,fastapi")
    parser.add_argument("--modes", default="vector,keyword,hybrid")
    parser.add_argument("--budgets", default="0,200,300,400,600")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    result = run(Path(args.workdir), args.corpora.split(","), modes, [int(b) for b in args.budgets.split(",")])
    text = markdown(result, modes)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
