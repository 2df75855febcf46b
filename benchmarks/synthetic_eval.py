"""Do synthetic eval sets rank retrieval configurations as the labelled sets do? (issue 20, item 5)

    python benchmarks/synthetic_eval.py [--workdir /tmp/synth-eval] [--corpora claude-docs,fastapi-docs,...]
        [--variants 40-100-140,40-160-200,60-250-300] [--styles mixed,heading,sentence,verbatim] [--json FILE]

For each development corpus (../shared: claude-docs, fastapi-docs, the physical-AI textbook with
benchmarks/textbook_eval.jsonl, covid-qa-dev) and each chunk-size variant (RAG_CHUNK_MIN/TARGET/MAX_TOKENS),
an index is built once into ``<workdir>/<variant>/<corpus>`` (benchmarks/corpora.py: embeddings cached).
Each index is scored with the corpus's labelled set and with synthetic sets generated from its documents
(rag_assets.evaluation.synthetic; one set per style, the same for every variant: a set depends only on the
documents). Per corpus and metric (section R@5, hit@5, MRR@10), the configurations are ranked by the
labelled figures and by the synthetic ones, and compared by Kendall's tau-b:

- modes: vector / keyword / hybrid at the default chunk sizes (3 items: tau is 1, 1/3, -1/3 or -1);
- chunk sizes: the variants in hybrid mode;
- all: every mode x variant (9 configurations).

Style ``llm`` asks the chat model configured in the environment (OPENAI_API_KEY, RAG_CHAT_MODEL or
OPENAI_BASE_URL) for the questions. Prints markdown tables (``--markdown FILE`` writes them too) and, with ``--json FILE``, every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, Corpus, SHARED, open_corpus  # noqa: E402

DEFAULT_WORKDIR = Path("/tmp/synth-eval")
DEV_CORPORA = {
    "claude-docs": Corpus("claude-docs", SHARED / "datasets" / "claude-docs" / "docs",
                          SHARED / "datasets" / "claude-docs" / "eval.jsonl"),
    "fastapi-docs": Corpus("fastapi-docs", SHARED / "datasets" / "fastapi-docs" / "docs",
                           SHARED / "datasets" / "fastapi-docs" / "eval.jsonl"),
    "textbook": Corpus("textbook", SHARED / "corpora" / "physical-ai-textbook", HERE / "textbook_eval.jsonl"),
    "covid-qa-dev": Corpus("covid-qa-dev", SHARED / "datasets" / "covid-qa-dev" / "docs",
                           SHARED / "datasets" / "covid-qa-dev" / "eval.jsonl"),
}
VARIANTS = ("40-100-140", "40-160-200", "60-250-300")
DEFAULT_VARIANT = "40-100-140"
MODES = ("vector", "keyword", "hybrid")
METRICS = {"R@5": "section.recall@5", "hit@5": "section.hit@5", "MRR": "section.mrr@10"}
STYLES = ("heading", "mixed", "sentence", "plain", "verbatim")


def kendall_tau_b(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b of two score lists over the same items (ties counted as neither concordant nor
    discordant, tau-b's denominator); NaN when either list is constant."""
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if abs(dx) < 1e-12 and abs(dy) < 1e-12:
                continue
            if abs(dx) < 1e-12:
                ties_x += 1
            elif abs(dy) < 1e-12:
                ties_y += 1
            elif dx * dy > 0:
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def order(scores: dict[str, float]) -> str:
    return " > ".join(sorted(scores, key=lambda k: -scores[k]))


def synthetic_questions(name: str, workdir: Path, style: str, size: int = 100, seed: int = 0):
    from rag_assets.config import Settings
    from rag_assets.evaluation.synthetic.build import build_synthetic_set
    from rag_assets.evaluation.synthetic.folder import folder_documents

    corpus = DEV_CORPORA[name]
    settings = Settings.from_env({}, docs_dir=corpus.docs, cache_dir=workdir / "cache")
    sources, _ = folder_documents(settings)
    llm = None
    if style == "llm":  # LLM-written questions: the chat model of the environment (OPENAI_API_KEY, RAG_CHAT_MODEL...)
        from rag_assets.answer.generation import ChatLLM

        llm = ChatLLM.from_settings(Settings.from_env().answer, temperature=0.0, max_tokens=300)
    built = build_synthetic_set(sources, workdir / "sets" / name / f"{style}-{size}", size=size, seed=seed,
                                style="heading" if llm else style, llm=llm)
    return built


def score(retriever, questions) -> dict[str, dict[str, float]]:
    from rag_assets.evaluation import evaluate_retrieval

    report = evaluate_retrieval(questions, retriever.search, modes=MODES, top_k=10, ragas=False)
    return {m: {k: report.metrics[m][v] for k, v in METRICS.items()} for m in MODES}


def run(workdir: Path, corpora: list[str], variants: list[str], styles: list[str], size: int = 100) -> dict:
    from rag_assets.evaluation.evalset import load_eval_set

    CORPORA.update(DEV_CORPORA)  # open_corpus looks corpora up by name
    results: dict = {"corpora": {}, "sets": {}}
    for name in corpora:
        sets = {style: synthetic_questions(name, workdir, style, size) for style in styles}
        results["sets"][name] = {s: {"questions": len(b.questions), "version": b.version, "kinds": b.manifest["kinds"],
                                     "documents": b.manifest["documents"]} for s, b in sets.items()}
        labelled = load_eval_set(DEV_CORPORA[name].eval_set).questions
        results["sets"][name]["labelled"] = {"questions": len(labelled)}
        for variant in variants:
            low, target, high = map(int, variant.split("-"))
            started = time.perf_counter()
            retriever, _ = open_corpus(name, workdir / variant, chunk_min_tokens=low, chunk_target_tokens=target,
                                       chunk_max_tokens=high)
            figures = {"labelled": score(retriever, labelled)}
            for style, built in sets.items():
                figures[style] = score(retriever, built.questions)
            figures["chunks"] = retriever.store.count()
            results["corpora"].setdefault(name, {})[variant] = figures
            print(f"{name} {variant}: {figures['chunks']} chunks, scored in {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
    return results


def agreement(results: dict, styles: list[str], variants: list[str]) -> dict:
    """corpus -> style -> comparison -> metric -> (tau, same order, labelled order, synthetic order)."""
    out: dict = {}
    default = DEFAULT_VARIANT if DEFAULT_VARIANT in variants else variants[0]
    for name, by_variant in results["corpora"].items():
        for style in styles:
            for metric in METRICS:
                comparisons = {
                    "modes": {m: (by_variant[default]["labelled"][m][metric], by_variant[default][style][m][metric])
                              for m in MODES},
                    "chunk sizes (hybrid)": {v: (by_variant[v]["labelled"]["hybrid"][metric],
                                                 by_variant[v][style]["hybrid"][metric]) for v in variants},
                    "all 9": {f"{m}@{v}": (by_variant[v]["labelled"][m][metric], by_variant[v][style][m][metric])
                              for v in variants for m in MODES},
                }
                for what, pairs in comparisons.items():
                    if len(pairs) < 2:
                        continue
                    keys = list(pairs)
                    real = {k: pairs[k][0] for k in keys}
                    synthetic = {k: pairs[k][1] for k in keys}
                    tau = kendall_tau_b([real[k] for k in keys], [synthetic[k] for k in keys])
                    out.setdefault(name, {}).setdefault(style, {}).setdefault(what, {})[metric] = {
                        # the same strict order: ties on either side are not an agreement
                        "tau": tau, "same_order": tau == 1.0,
                        "labelled": order(real), "synthetic": order(synthetic)}
    return out


def markdown(results: dict, styles: list[str], variants: list[str]) -> str:
    agree = agreement(results, styles, variants)
    lines = ["## Rank agreement with the labelled sets (Kendall tau-b; ✓ = the same strict order; nan = one side ties all)", ""]
    for what in ("modes", "chunk sizes (hybrid)", "all 9"):
        lines += [f"### {what}", "", "| corpus | style | " + " | ".join(METRICS) + " |",
                  "|---|---|" + "---|" * len(METRICS)]
        for name in agree:
            for style in styles:
                cells = []
                for metric in METRICS:
                    a = agree[name][style].get(what, {}).get(metric)
                    cells.append("–" if a is None else f"{a['tau']:+.2f}{' ✓' if a['same_order'] else ''}")
                lines.append(f"| {name} | {style} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Orders (MRR)", "", "| corpus | compared | labelled | " + " | ".join(styles) + " |",
              "|---|---|---|" + "---|" * len(styles)]
    for name in agree:
        for what in ("modes", "chunk sizes (hybrid)"):
            a = {s: agree[name][s][what]["MRR"] for s in styles if what in agree[name][s]}
            if a:
                lines.append(f"| {name} | {what} | {next(iter(a.values()))['labelled']} | "
                             + " | ".join(a[s]["synthetic"] for s in styles) + " |")
    lines += ["", "## Figures (R@5 / hit@5 / MRR)", "",
              "| corpus | chunks | set | questions | vector | keyword | hybrid |", "|---|---|---|---|---|---|---|"]
    for name, by_variant in results["corpora"].items():
        for variant, figures in by_variant.items():
            for kind in ["labelled", *styles]:
                n = results["sets"][name][kind]["questions"]
                cells = [" / ".join(f"{figures[kind][m][k]:.3f}" for k in METRICS) for m in MODES]
                lines.append(f"| {name} | {variant} | {kind} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--corpora", default=",".join(DEV_CORPORA))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--styles", default=",".join(STYLES))
    parser.add_argument("--size", type=int, default=100, help="questions per synthetic set (default 100)")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args(argv)
    styles, variants = args.styles.split(","), args.variants.split(",")
    started = time.perf_counter()
    results = run(Path(args.workdir), args.corpora.split(","), variants, styles, args.size)
    results["machine"] = {"python": platform.python_version(), "platform": platform.platform(),
                          "seconds": round(time.perf_counter() - started)}
    text = markdown(results, styles, variants)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({**results, "agreement": agreement(results, styles, variants)},
                                              indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
