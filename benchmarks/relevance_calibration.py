"""Fit and check the calibrated relevance (rag_assets/retrieval/relevance.py), leave one corpus out.

    python benchmarks/relevance_calibration.py collect [--workdir /tmp/rag-corpora] [--embedder NAME]
    python benchmarks/relevance_calibration.py fit [--workdir ...] [--write] [--markdown FILE] [--check-embedder NAME]

``collect`` runs every question of the four development corpora (benchmarks/corpora.py; their eval
sets: answerable, each result labelled relevant when it satisfies the question's first expected entry,
its answer, by the evaluation's own rule, rag_assets.evaluation.matching) and the questions they do not
answer (benchmarks/unanswerable/, written for this: other products, other subjects, near misses; every
result irrelevant) in each mode, 10 results a question, and keeps what the features are made of
(relevance.Evidence; the results' cosines with each other and which share a text, for
relevance.duplicates_of; the question's cosines with its 100 nearest chunks, for trying features read off
the corpus) with the labels in ``<workdir>/relevance/<embedder>/<corpus>.json``. The first
entry, not any entry: the eval sets label their questions unevenly (two or more expected entries for 83 of
claude-docs' 100 questions, 24 of fastapi's 60, 3 of textbook's 40, none of covid-qa-dev's 250), and a
probability fitted on one corpus's density of labels is off by that much on another's (the "labelled by
any expected entry" rows of the comparison table). The price: a result that satisfies a question's second
entry counts as not relevant (fastapi's "How do I add a WebSocket route...?" ranks its second entry first). ``--embedder`` indexes with another model
(RAG_EMBEDDING_MODEL, e.g. multilingual-e5-small) into ``<workdir>/<embedder>/``.

``fit`` fits the logistic model (SHIPPED of relevance.FEATURES; every corpus weighs the same, and within it every
question, answerable or not; the results of every mode), then for each corpus held out in turn: the model
and the default threshold (choose_threshold) chosen on the three others, scored on it: expected calibration error of every result handed on
(the first 5 of a ranking; 10 equal-width bins), area under the ROC curve of the gate (the best relevance
of the first 5) between answerable and unanswerable questions, and at the threshold the share of
answerable questions that pass and of unanswerable ones refused. The same for the previous gate (mean
cosine of the first 5, threshold 0.25) beside it; how much of each ECE is the sample's size (ece_spread);
and every feature set of FEATURE_SETS held out the same way, with its log loss on corpora it was not
fitted on and what its model gives on the rules-bot contract's own queries and fixture (contract_rows:
indexed in ``<workdir>/relevance/contract/``), from which SHIPPED was chosen. ``--write`` writes the
model fitted on all four corpora, with its threshold, to rag_assets/retrieval/relevance_calibration.json;
``--check-embedder`` scores that model, unchanged, on questions collected with another embedder.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import CORPORA, DEFAULT_WORKDIR, open_corpus  # noqa: E402

MODES = ("hybrid", "vector", "keyword")
TOP_K = 10
HANDED_ON = 5  # RetrieveRequest.max_chunks' default: the results ECE is measured on
BINS = 10
L2 = 1e-3
OLD_THRESHOLD = 0.25
DEEP = 100  # the question's cosines with its nearest chunks, this deep (kept for features read off the corpus)
HEADING_QUERIES = 60  # a corpus's heading queries (heading_queries)
SCORED = ("answerable", "other product", "other subject", "near miss")
UNANSWERABLE = HERE / "unanswerable"
OUTPUT = HERE.parent / "rag_assets" / "retrieval" / "relevance_calibration.json"


# -- collect ------------------------------------------------------------------------------------
def collect(workdir: Path, embedder_name: str | None, names: list[str]) -> None:
    from rag_assets.evaluation import load_eval_set
    from rag_assets.retrieval.relevance import anchors_for

    label = embedder_name or "default"
    out_dir = workdir / "relevance" / label
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        corpus = CORPORA[name]
        started = time.perf_counter()
        overrides = {"embedding_model": embedder_name} if embedder_name else {}
        retriever, built = open_corpus(name, workdir / label if embedder_name else workdir, **overrides)
        anchors = anchors_for(retriever.embedder)
        questions = [(q.question, q.expected, "answerable") for q in load_eval_set(corpus.eval_set).questions]
        questions += [(row["question"], [], row["kind"]) for row in map(json.loads, (UNANSWERABLE / f"{name}.jsonl")
                                                                         .read_text().splitlines()) if row]
        questions += heading_queries(retriever)
        rows = [ranking_row(retriever, anchors, text, expected, kind, mode)
                for text, expected, kind in questions for mode in MODES]
        (out_dir / f"{name}.json").write_text(json.dumps({"corpus": name, "model": retriever.embedder.model_name,
                                                          "build": built, "rows": rows}))
        print(f"{name}: {len(questions)} questions x {len(MODES)} modes in {time.perf_counter() - started:.0f} s"
              f" ({retriever.embedder.model_name}; index {'built' if built else 'reused'})", flush=True)


def ranking_row(retriever, anchors, text: str, expected: list, kind: str, mode: str, top_k: int = TOP_K) -> dict:
    """One question's ranking in one mode, labelled, with what its features are made of."""
    from rag_assets.evaluation.matching import entry_matches

    view = retriever.view()
    vector = retriever.embed_query(text)
    results = retriever.search(text, mode, top_k)
    found = [view.row(r.chunk_id) for r in results]
    idf, known, present, in_header = view.term_presence(text, [-1 if f is None else f for f in found])
    vectors = view.vectors([0 if f is None else f for f in found])
    return {
        "question": text, "kind": kind, "mode": mode,
        "labels": [int(any(entry_matches(e, r) for e in expected)) for r in results],
        "primary": [int(bool(expected) and entry_matches(expected[0], r)) for r in results],
        "sections": [r.metadata.get("section") for r in results],
        "cosines": [float(r.cosine or 0.0) for r in results],
        "relevance": [float(r.relevance or 0.0) for r in results],
        "background": anchors.background(vector), "contrast": anchors.contrast,
        "idf": idf.tolist(), "known": known.tolist(), "present": present.astype(int).tolist(),
        "in_header": in_header.astype(int).tolist(),
        "pairwise": np.round(vectors @ vectors.T, 4).tolist(),
        "same_text": [[int(a.text == b.text) for b in results] for a in results],
        "deep": np.round(view.nearest(vector, DEEP)[1], 4).tolist(),
    }


def heading_queries(retriever, count: int = HEADING_QUERIES) -> list[tuple[str, list, str]]:
    """Keyword-style queries, a section's own heading each ("Barricade", "Creating test cases"), labelled
    with that section: the short queries a bot's users type (the rules-bot contract's "Barricade rules"),
    which the eval sets' full questions do not show. Training only; never scored."""
    import random

    from rag_assets.evaluation.evalset import ExpectedSource

    sections = sorted({(meta["doc_path"], meta.get("section") or "") for _, _, meta in retriever.store.iter_all()})
    sections = [(d, h) for d, h in sections if len(h.split()) <= 6 and any(ch.isalpha() for ch in h)]
    picked = random.Random(43).sample(sections, min(count, len(sections)))
    return [(heading, [ExpectedSource(doc_path=doc_path, section=heading)], "heading") for doc_path, heading in picked]


# -- fit ----------------------------------------------------------------------------------------
def load(workdir: Path, label: str = "default") -> dict[str, list[dict]]:
    folder = workdir / "relevance" / label
    return {name: json.loads((folder / f"{name}.json").read_text())["rows"] for name in CORPORA
            if (folder / f"{name}.json").is_file()}


def row_features(row: dict) -> np.ndarray:
    from rag_assets.retrieval.relevance import NEAR_DUPLICATE, Evidence, features

    n = len(row["cosines"])
    shape = (len(row["idf"]), n)
    duplicates = None
    if "pairwise" in row:  # as relevance.duplicates_of reads them (rows collected before it: none)
        duplicates = ((np.asarray(row["pairwise"]).reshape(n, n) >= NEAR_DUPLICATE)
                      | np.asarray(row["same_text"], dtype=bool).reshape(n, n) | np.eye(n, dtype=bool))
    return features(Evidence(np.asarray(row["cosines"]), row["background"], row["contrast"], np.asarray(row["idf"]),
                             np.asarray(row["known"], dtype=bool), np.asarray(row["present"], dtype=bool).reshape(shape),
                             np.asarray(row["in_header"], dtype=bool).reshape(shape), duplicates))


def design(data: dict[str, list[dict]], modes=MODES, depth: int = TOP_K, headings: bool = False,
           label: str = "primary"):
    """(features, labels, weights) of every result of every question: each corpus weighs the same, and
    within it each question (heading queries too, with ``headings``)."""
    xs, ys, ws = [], [], []
    kinds = SCORED + (("heading",) if headings else ())
    for name, rows in data.items():
        rows = [r for r in rows if r["mode"] in modes and r["cosines"] and r["kind"] in kinds]
        for r in rows:
            x = row_features(r)[:depth]
            xs.append(x)
            ys.append(np.asarray(r[label][:depth], dtype=np.float64))
            ws.append(np.full(len(x), 1.0 / (len(rows) * len(x))))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws) * len(data)


def fit(data: dict[str, list[dict]], names: tuple[str, ...], headings: bool = False, label: str = "primary"):
    """The model over the named features: (their columns, coefficients, intercept)."""
    from rag_assets.retrieval.relevance import FEATURES

    columns = [FEATURES.index(n) for n in names]
    x, y, w = design(data, headings=headings, label=label)
    return (columns, *fit_logistic(x[:, columns], y, w))


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = L2) -> tuple[np.ndarray, float]:
    """Weighted logistic regression by Newton's method (a small ridge on the coefficients)."""
    xb = np.column_stack([np.ones(len(x)), x])
    beta = np.zeros(xb.shape[1])
    ridge = np.full(xb.shape[1], l2)
    ridge[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ beta, -40, 40)))
        grad = xb.T @ (w * (p - y)) + ridge * beta
        hess = (xb * (w * p * (1 - p))[:, None]).T @ xb + np.diag(ridge)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta[1:], float(beta[0])


def predict(model, x: np.ndarray) -> np.ndarray:
    columns, coef, intercept = model
    return 1.0 / (1.0 + np.exp(-np.clip(intercept + x[:, columns] @ coef, -40, 40)))


def ece(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).sum()
                     for b in range(bins) if (edges == b).any()) / len(p))


def auroc(positive: list[float], negative: list[float]) -> float:
    """P(a random answerable question's score > a random unanswerable one's), ties half."""
    if not positive or not negative:
        return float("nan")
    pos, neg = np.asarray(positive), np.asarray(negative)
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (len(pos) * len(neg)))


def gate_auroc(gates, at: int = 1) -> float:
    """auroc of a scores() gate column (1: the gate, 2: the previous gate) between answerable questions
    and unanswerable ones."""
    return auroc([g[at] for g in gates if g[0]], [g[at] for g in gates if not g[0]])


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def scores(rows: list[dict], model, mode: str, label: str = "primary"):
    """Per question of the mode: (answerable, gate score, old gate score), and every handed-on result's
    (probability, label)."""
    gates, probs, labels = [], [], []
    for r in rows:
        if r["mode"] != mode or r["kind"] not in SCORED:
            continue
        p = predict(model, row_features(r))[:HANDED_ON] if r["cosines"] else np.zeros(0)
        gates.append((r["kind"] == "answerable", float(p.max()) if len(p) else 0.0,
                      statistics.fmean(r["cosines"][:HANDED_ON]) if r["cosines"] else 0.0))
        probs.extend(p.tolist())
        labels.extend(r[label][:HANDED_ON])
    return gates, np.asarray(probs), np.asarray(labels, dtype=np.float64)


def rates(gates, threshold: float, old: bool = False) -> tuple[float, float]:
    """(share of answerable questions that pass, share of unanswerable ones refused)."""
    at = 2 if old else 1
    answerable = [g[at] >= threshold for g in gates if g[0]]
    unanswerable = [g[at] < threshold for g in gates if not g[0]]
    return statistics.fmean(answerable), statistics.fmean(unanswerable)


def choose_threshold(data: dict[str, list[dict]], model) -> float:
    """The threshold the default ships: the one whose worst margin to the two targets over the corpora
    given (answerable passed - 90 %, unanswerable refused - 80 %, each corpus, hybrid mode) is largest;
    ties to the lower (the one that refuses less). The gate is there for both targets, so neither is
    traded for the other on a corpus it was not chosen on. (Before: the best mean balanced accuracy of
    those that pass 90 % everywhere, which pushes the threshold up to the edge of the pass target.)"""
    gates = [scores(rows, model, "hybrid")[0] for rows in data.values()]
    best, margin = 0.01, -math.inf
    for t in np.arange(0.01, 0.96, 0.01):
        worst = min(min(passed - 0.9, refused - 0.8) for passed, refused in (rates(g, float(t)) for g in gates))
        if worst > margin + 1e-12:
            best, margin = float(t), worst
    return round(best, 2)


def held_out_table(data: dict[str, list[dict]], names: tuple[str, ...], modes=MODES, headings: bool = False,
                   label: str = "primary") -> tuple[list[str], dict]:
    lines = ["| held out | mode | results | ECE | AUROC | threshold | answerable pass | unanswerable refused | "
             "previous gate: AUROC | pass | refused |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for held in data:
        train = {n: rows for n, rows in data.items() if n != held}
        model = fit(train, names, headings, label)
        threshold = choose_threshold(train, model)
        for mode in modes:
            gates, p, y = scores(data[held], model, mode, label)
            a, old = gate_auroc(gates), gate_auroc(gates, at=2)
            passed, refused = rates(gates, threshold)
            old_passed, old_refused = rates(gates, OLD_THRESHOLD, old=True)
            summary[(held, mode)] = dict(ece=ece(p, y), auroc=a, passed=passed, refused=refused, threshold=threshold,
                                         probs=p, labels=y, gates=gates, model=model, log_loss=log_loss(p, y))
            lines.append(f"| {held} | {mode} | {len(p)} | {ece(p, y):.3f} | {a:.3f} | {threshold:.2f} | {passed:.1%} | "
                         f"{refused:.1%} | {old:.3f} | {old_passed:.1%} | {old_refused:.1%} |")
    return lines, summary


# The features shipped. Chosen among FEATURE_SETS (below) by the one rule that does not read a held-out
# corpus's figures: of the sets whose model, fitted on all four corpora, meets the rules-bot contract's own
# figures on its fixture (contract_figures: "What can I do during movement?" >= 0.8 with "Movement Phase" first,
# "How do I cook pasta?" < 0.6 and refused, "Barricade rules" with "Barricade" first), the one with the lowest
# log loss when each corpus is scored by the model fitted on the three others (selection_table).
SHIPPED = ("similarity", "best_similarity", "margin", "coverage", "best_coverage", "unknown_terms", "log_rank",
           "known_terms", "heading_per_term", "rarest_term", "lead")
PREVIOUS = ("similarity", "best_similarity", "margin", "coverage", "best_coverage", "heading_coverage",
            "unknown_terms", "log_rank")  # shipped until 2026-11-28 (main ae15aba)
BASE = tuple(f for f in PREVIOUS if f != "heading_coverage")
FEATURE_SETS = {  # label: (features; heading queries in training; the label)
    "cosine only": (("similarity",), False, "primary"),
    "cosine and ranking": (("similarity", "best_similarity", "margin", "log_rank"), False, "primary"),
    "previous (heading_coverage)": (PREVIOUS, False, "primary"),
    "previous, labelled by any expected entry": (PREVIOUS, False, "labels"),
    "previous, heading queries in training too": (PREVIOUS, True, "primary"),
    "previous without heading_coverage": (BASE, False, "primary"),
    "previous, heading_match instead of heading_coverage": (BASE + ("heading_match",), False, "primary"),
    "previous + known_terms, rarest_term": (PREVIOUS + ("known_terms", "rarest_term"), False, "primary"),
    "heading_per_term, known_terms": (BASE + ("known_terms", "heading_per_term"), False, "primary"),
    "heading_per_term, known_terms, rarest_term": (BASE + ("known_terms", "heading_per_term", "rarest_term"), False,
                                                   "primary"),
    "heading_per_term, known_terms, rarest_term, heading_match": (
        BASE + ("known_terms", "heading_per_term", "rarest_term", "heading_match"), False, "primary"),
    "shipped": (SHIPPED, False, "primary"),
    "shipped, labelled by any expected entry": (SHIPPED, False, "labels"),
}


CONTRACT_QUERIES = {  # the rules-bot contract's queries: the fixture they run on, the section that must come first
    # (None: refused, avg_relevance < 0.6), the avg_relevance it must reach
    "What can I do during movement?": ("rules", "Movement Phase", 0.8),
    "Barricade rules": ("rules", "Barricade", 0.0),
    "How do I cook pasta?": ("weapons", None, 0.0),
}


def contract_rows(workdir: Path) -> dict[str, dict]:
    """The rules-bot contract's queries, ranked (hybrid, its max_chunks 5) on its fixture documents
    (rag_assets_tests/support/contract_documents.py: "rules-1-phases.md" and "weapon-rules.md"; "weapon-rules.md"
    alone for the pasta question) as collect ranks the corpora's questions: {query: row}."""
    import shutil

    from rag_assets.retrieval.relevance import anchors_for
    from rag_assets.retrieval.retriever import Retriever
    from rag_assets_tests.support.contract_documents import PHASES, WEAPONS, contract_settings
    from rag_assets_tests.support.index_builder import build_index

    fixtures = {"rules": {"rules-1-phases.md": PHASES, "weapon-rules.md": WEAPONS}, "weapons": {"weapon-rules.md": WEAPONS}}
    rows = {}
    for fixture, documents in fixtures.items():
        root = workdir / "relevance" / "contract" / fixture
        shutil.rmtree(root, ignore_errors=True)
        settings = contract_settings(root)
        for name, text in documents.items():
            (settings.docs_dir / name).write_text(text, encoding="utf-8")
        build_index(settings.docs_dir, settings)
        retriever = Retriever.from_settings(settings)
        anchors = anchors_for(retriever.embedder, settings.cache_dir)
        for query, (at, _, _) in CONTRACT_QUERIES.items():
            if at == fixture:
                rows[query] = ranking_row(retriever, anchors, query, [], "contract", "hybrid", top_k=5)
    return rows


def contract_figures(rows: dict[str, dict], model, threshold: float) -> tuple[bool, str]:
    """(whether the model meets the contract's figures, what it gives): avg_relevance (the mean relevance
    of the results that reach the threshold) >= 0.8 and the named section first for the movement question,
    < 0.6 and refused for the pasta question, the named section first (by relevance, as RAGContext orders
    them) for "Barricade rules"."""
    said, meets = [], True
    for query, (_, section, least) in CONTRACT_QUERIES.items():
        p = predict(model, row_features(rows[query]))
        first = rows[query]["sections"][int(np.argmax(p))]
        passing = p[p >= threshold]
        avg = float(passing.mean()) if len(passing) else float(p.max())
        if section is None:
            meets &= avg < 0.6 and not len(passing)
            said.append(f"pasta {avg:.2f}{' refused' if not len(passing) else ' passed'}")
        else:
            meets &= first == section and avg >= least
            said.append(f"{section} {avg:.2f}" + ("" if first == section else f" ({first} first)"))
    return meets, "; ".join(said)


def inner_log_loss(data: dict[str, list[dict]], names, headings: bool, label: str) -> float:
    """Mean over the corpora of the handed-on results' log loss (hybrid), each corpus scored by the model
    fitted on the others: how well a feature set generalises to a corpus it was not fitted on, read
    without a target's threshold."""
    losses = []
    for held in data:
        model = fit({n: rows for n, rows in data.items() if n != held}, names, headings, label)
        losses.append(log_loss(*scores(data[held], model, "hybrid", label)[1:]))
    return statistics.fmean(losses)


def compare_feature_sets(data: dict[str, list[dict]], contract: dict[str, dict] | None) -> list[str]:
    """Each feature set: its held-out figures (hybrid; mean and the worst corpus's ECE), its log loss on a
    corpus it was not fitted on, and what its model fitted on all four gives on the contract's fixture."""
    lines = ["| features | mean held-out ECE | worst ECE | mean AUROC | mean answerable pass | mean unanswerable "
             "refused | log loss held out | rules-bot contract (fitted on all four) |", "|---|---|---|---|---|---|---|---|"]
    for title, (names, headings, label) in FEATURE_SETS.items():
        _, summary = held_out_table(data, names, ("hybrid",), headings, label)
        rows = list(summary.values())
        said = "—"
        if contract is not None:
            model = fit(data, names, headings, label)
            meets, said = contract_figures(contract, model, choose_threshold(data, model))
            said = ("meets: " if meets else "misses: ") + said
        lines.append(f"| {title} | {statistics.fmean(r['ece'] for r in rows):.3f} | {max(r['ece'] for r in rows):.3f} | "
                     f"{statistics.fmean(r['auroc'] for r in rows):.3f} | {statistics.fmean(r['passed'] for r in rows):.1%} | "
                     f"{statistics.fmean(r['refused'] for r in rows):.1%} | {statistics.fmean(r['log_loss'] for r in rows):.4f} | "
                     f"{said} |")
    return lines


def nested_selection(data: dict[str, list[dict]], contract: dict[str, dict]) -> list[str]:
    """SHIPPED's rule applied inside each held-out fold: on the three training corpora alone, the set of
    lowest held-out log loss among those whose model meets the contract (the lowest of all when none
    does), then scored on the fourth. The selection above reads all four corpora; this one never reads
    the corpus it is scored on."""
    sets = {title: names for title, (names, headings, label) in FEATURE_SETS.items() if label == "primary" and not headings}
    lines = ["| held out | set chosen on the three others | ECE | AUROC | threshold | answerable pass | unanswerable refused |",
             "|---|---|---|---|---|---|---|"]
    for held in data:
        train = {n: rows for n, rows in data.items() if n != held}
        ranked = []
        for title, names in sets.items():
            model = fit(train, names)
            meets = contract_figures(contract, model, choose_threshold(train, model))[0]
            ranked.append((inner_log_loss(train, names, False, "primary"), title, meets))
        ranked.sort()
        title = next((t for _, t, meets in ranked if meets), None)
        note = "" if title else " (none meets the contract: the lowest log loss)"
        title = title or ranked[0][1]
        model = fit(train, sets[title])
        threshold = choose_threshold(train, model)
        gates, p, y = scores(data[held], model, "hybrid")
        passed, refused = rates(gates, threshold)
        lines.append(f"| {held} | {title}{note} | {ece(p, y):.3f} | "
                     f"{gate_auroc(gates):.3f} | {threshold:.2f} | "
                     f"{passed:.1%} | {refused:.1%} |")
    return lines


def ece_spread(gates_rows: list[dict], model, label: str = "primary", draws: int = 1000, seed: int = 43):
    """(the 95 % interval of the ECE over questions drawn again with replacement, the median ECE a perfectly
    calibrated model would show on the same predictions): how much of an ECE is the sample's size."""
    rng = np.random.default_rng(seed)
    per_question = []
    for r in gates_rows:
        if r["mode"] == "hybrid" and r["kind"] in SCORED and r["cosines"]:
            per_question.append((predict(model, row_features(r))[:HANDED_ON], np.asarray(r[label][:HANDED_ON], float)))
    p = np.concatenate([q[0] for q in per_question])
    drawn = []
    for _ in range(draws):
        pick = rng.integers(0, len(per_question), len(per_question))
        drawn.append(ece(np.concatenate([per_question[i][0] for i in pick]), np.concatenate([per_question[i][1] for i in pick])))
    floor = [ece(p, (rng.random(len(p)) < p).astype(float)) for _ in range(draws)]
    return (float(np.percentile(drawn, 2.5)), float(np.percentile(drawn, 97.5))), float(np.median(floor))


def fit_report(workdir: Path, write: bool, check_embedder: str | None, names: tuple[str, ...] | None = None) -> str:
    names = names or SHIPPED
    data = load(workdir)
    started = time.perf_counter()
    lines = [f"Run {time.strftime('%Y-%m-%d')} on {platform.machine()}, Python {platform.python_version()}; "
             "`benchmarks/relevance_calibration.py fit`.", "",
             "Leave one corpus out: model and threshold fitted on the three other corpora.", ""]
    table, summary = held_out_table(data, names)
    lines += table
    lines += ["", "The four held-out corpora pooled (each result, each question scored by the model that did not see its corpus):",
              "", "| mode | ECE | AUROC | answerable pass | unanswerable refused |", "|---|---|---|---|---|"]
    for mode in MODES:
        rows = [v for (held, m), v in summary.items() if m == mode]
        p, y = np.concatenate([r["probs"] for r in rows]), np.concatenate([r["labels"] for r in rows])
        gates = [g for r in rows for g in r["gates"]]
        passed = statistics.fmean(1.0 if g[1] >= r["threshold"] else 0.0 for r in rows for g in r["gates"] if g[0])
        refused = statistics.fmean(1.0 if g[1] < r["threshold"] else 0.0 for r in rows for g in r["gates"] if not g[0])
        lines.append(f"| {mode} | {ece(p, y):.3f} | {gate_auroc(gates):.3f} | {passed:.1%} | {refused:.1%} |")
    lines += ["", "How much of each held-out ECE (hybrid) is the sample: its 95 % interval over the questions drawn "
              "again with replacement, and the ECE a perfectly calibrated model would show on the same predictions "
              "(median of labels drawn from them):", "",
              "| held out | ECE | 95 % interval | a calibrated model's ECE here |", "|---|---|---|---|"]
    for held in data:
        (low, high), floor = ece_spread(data[held], summary[(held, "hybrid")]["model"])
        lines.append(f"| {held} | {summary[(held, 'hybrid')]['ece']:.3f} | {low:.3f}–{high:.3f} | {floor:.3f} |")
    contract = contract_rows(workdir)
    lines += ["", "Each feature set, held out in turn (hybrid), and the rules-bot contract's figures of its model "
              "fitted on all four:", ""] + compare_feature_sets(data, contract)
    lines += ["", "The same choice made inside each fold (nested_selection: chosen on the three training corpora, "
              "scored on the fourth; hybrid):", ""] + nested_selection(data, contract)
    model = fit(data, names)
    threshold = choose_threshold(data, model)
    lines += ["", f"Fitted on all four: threshold {threshold:.2f}; coefficients "
              + ", ".join(f"{f} {c:+.3f}" for f, c in zip(names, model[1])) + f", intercept {model[2]:+.3f}; "
              f"rules-bot contract: {contract_figures(contract, model, threshold)[1]}."]
    if check_embedder:
        other = load(workdir, check_embedder)
        lines += ["", f"The model fitted on all-MiniLM-L6-v2, unchanged, on {check_embedder}'s rankings:", "",
                  "| corpus | mode | ECE | AUROC | answerable pass | unanswerable refused |", "|---|---|---|---|---|---|"]
        for name, rows in other.items():
            for mode in MODES:
                gates, p, y = scores(rows, model, mode)
                passed, refused = rates(gates, threshold)
                lines.append(f"| {name} | {mode} | {ece(p, y):.3f} | {gate_auroc(gates):.3f} | {passed:.1%} | {refused:.1%} |")
    if write:
        OUTPUT.write_text(json.dumps({
            "about": "Calibrated relevance (rag_assets/retrieval/relevance.py): a logistic model over FEATURES, "
                     "fitted by benchmarks/relevance_calibration.py on the four development corpora's labelled "
                     "questions and the questions they do not answer (benchmarks/unanswerable/), with all-MiniLM-L6-v2; "
                     "default_threshold: the default RAG_MIN_RELEVANCE it chose.",
            "fitted": time.strftime("%Y-%m-%d"),
            "features": list(names), "coefficients": [round(float(c), 6) for c in model[1]],
            "intercept": round(model[2], 6), "default_threshold": threshold}, indent=1) + "\n")
        lines += ["", f"Written to {OUTPUT.relative_to(HERE.parent)}."]
    lines += ["", f"({time.perf_counter() - started:.0f} s)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("collect", "fit"))
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    parser.add_argument("--embedder", help="collect: index and query with this RAG_EMBEDDING_MODEL")
    parser.add_argument("--check-embedder", help="fit: also score the fitted model on this embedder's rankings")
    parser.add_argument("--corpora", default=",".join(CORPORA), help="collect: these corpora (comma-separated)")
    parser.add_argument("--features", help="fit: these features (comma-separated; default: SHIPPED)")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--markdown")
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(Path(args.workdir), args.embedder, args.corpora.split(","))
        return 0
    text = fit_report(Path(args.workdir), args.write, args.check_embedder,
                      tuple(args.features.split(",")) if args.features else None)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
