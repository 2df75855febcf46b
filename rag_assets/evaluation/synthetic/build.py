"""The set: candidates per document (cached under its content hash), the selection spread over the
documents, LLM questions where a chat model is configured, and the files written (eval_set.jsonl,
manifest.json, cache.json)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from rag_assets.evaluation.evalset import EvalQuestion, load_eval_set
from rag_assets.evaluation.matching import normalize
from rag_assets.evaluation.synthetic.llm import _ask_llm
from rag_assets.evaluation.synthetic.offline import _clean_heading, _rank, offline_question
from rag_assets.evaluation.synthetic.passages import Passage, document_passages
from rag_assets.evaluation.synthetic.tuning import (CACHE_FILE, DEFAULT_SIZE, DEFAULT_STYLE, KIND, LLM_GENERATOR,
                                                  LLM_PASSAGE_CHARS, MANIFEST_FILE, OFFLINE_GENERATOR, SET_FILE,
                                                  STYLES)
from rag_assets.models import Block

log = logging.getLogger(__name__)


@dataclass
class DocumentSource:
    """A document as the generator needs it: its path, content hash, and a way to read its blocks."""

    doc_path: str
    content_hash: str
    read: Callable[[], tuple[str, list[Block]]]  # -> (title, blocks)


@dataclass
class SyntheticSet:
    path: Path
    manifest: dict
    questions: list[EvalQuestion]
    documents_regenerated: list[str] = field(default_factory=list)
    documents_reused: int = 0
    llm_calls: int = 0
    llm_fallbacks: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        return self.manifest["version"]

    def describe(self) -> dict:
        """What reports say about the set (``eval_set`` in JSON output)."""
        keys = ("kind", "version", "generator", "seed", "questions", "documents", "kinds", "created_at")
        return {**{k: self.manifest[k] for k in keys if k in self.manifest}, "path": str(self.path)}


def _candidate(passage: Passage, seed: int | str, style: str, record: dict | None = None) -> dict | None:
    """The passage's candidate: its offline question (`record`, else offline_question's) and the passage."""
    record = record or offline_question(passage, seed, style)
    if record is None:
        return None
    return {"uid": passage.uid, "rank": _rank(seed, passage.uid), "offline": record,
            "passage": {"key": passage.key, "section": passage.section, "breadcrumb": list(passage.breadcrumb),
                        "title": passage.title, "text": passage.text[:LLM_PASSAGE_CHARS]}}


def _english(passages: list[Passage]) -> bool:
    """Whether a document reads as English (or cannot tell): the offline questions' templates are English."""
    from rag_assets.ingest.languages import detect, primary

    found = detect("\n".join(p.text for p in passages[:5]))
    return not found or primary(found) == "en"


def _heading_candidate(passage: Passage, seed: int | str, style: str) -> dict | None:
    """A document in another language: its section's heading as a reader would type it (the English
    templates of heading and sentence questions would read "Usuarios right generar: what should I know
    about …"); a passage without a heading is not asked about."""
    if passage.section is None:
        return None
    heading = _clean_heading(passage.section) or _clean_heading(passage.title)
    parents = [_clean_heading(h) for h in passage.breadcrumb[:-1] if _clean_heading(h)]
    if len(heading.split()) <= 1 and parents and parents[-1].casefold() != heading.casefold():
        heading = f"{parents[-1]}: {heading}"  # "Uso" alone asks nothing: "Insignias: Uso"
    if not heading:
        return None
    return _candidate(passage, seed, style, {"question": heading, "kind": "heading",
                                             "expected": [{"doc_path": passage.doc_path, "section": passage.section}]})


def select(candidates: dict[str, list[dict]], size: int, seed: int | str = 0) -> list[tuple[str, dict]]:
    """Up to ``size`` (doc_path, candidate) pairs, spread over the documents: each document's first
    candidate (in seeded hash order), then each one's second, … Documents in seeded hash order too."""
    docs = sorted((d for d in candidates if candidates[d]), key=lambda d: _rank(seed, "doc", d))
    ordered = {d: sorted(candidates[d], key=lambda c: c["rank"]) for d in docs}
    chosen: list[tuple[str, dict]] = []
    seen_questions: set[str] = set()
    depth = 0
    while len(chosen) < size and any(depth < len(ordered[d]) for d in docs):
        for d in docs:
            if depth < len(ordered[d]) and len(chosen) < size:
                candidate = ordered[d][depth]
                text = normalize(candidate["offline"]["question"])
                if text not in seen_questions:
                    seen_questions.add(text)
                    chosen.append((d, candidate))
        depth += 1
    return chosen


def _question_id(uid: str) -> str:
    return "syn-" + hashlib.sha256(uid.encode("utf-8")).hexdigest()[:12]


def build_synthetic_set(
    documents: Iterable[DocumentSource],
    out_dir: Path | str,
    *,
    size: int = DEFAULT_SIZE,
    seed: int = 0,
    llm: Any = None,
    concurrency: int = 4,
    logger: Callable[[str], None] | None = None,
    style: str = DEFAULT_STYLE,
) -> SyntheticSet:
    """Generate (or bring up to date) the synthetic set of these documents under ``out_dir``.

    ``llm``: a ChatLLM (rag_assets.answer.generation) for LLM-written questions, or None for offline
    ones. Only documents whose content hash (or the generator, or the seed) changed since the last call
    are read and asked about again."""
    say = logger or log.info
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = _read_json(out / CACHE_FILE)
    if style not in STYLES:
        raise ValueError(f"style must be one of {sorted(STYLES)}, got {style!r}")
    offline_name = OFFLINE_GENERATOR if style == DEFAULT_STYLE else f"{OFFLINE_GENERATOR}/{style}"
    entries: dict = cache.get("documents", {}) if cache.get("offline_generator") == offline_name \
        and cache.get("seed") == seed else {}
    llm_name = f"{LLM_GENERATOR}:{llm.model}" if llm is not None else None
    result_docs, regenerated, warnings = _document_candidates(documents, entries, seed, style)
    chosen = select({d: e["candidates"] for d, e in result_docs.items()}, size, seed)
    llm_calls = 0
    if llm is not None:
        llm_calls, failures = _add_llm_questions(llm, llm_name, chosen, result_docs, concurrency, say)
        warnings.extend(failures)
    lines, kinds, generators, fallbacks = _set_lines(chosen, result_docs, llm_name, offline_name)
    version = hashlib.sha256(json.dumps(
        [[ln["id"], ln["question"], ln["expected"]] for ln in lines], sort_keys=True, ensure_ascii=False
    ).encode("utf-8")).hexdigest()[:12]
    for line in lines:
        line["synthetic"]["set_version"] = version
    generator = "+".join(sorted(generators)) if generators else (llm_name or offline_name)
    manifest = {
        "kind": KIND, "version": version, "generator": generator, "seed": seed, "size": size,
        "questions": len(lines), "documents": len({ln["synthetic"]["passage"].split("#")[0] for ln in lines}),
        "documents_in_corpus": len(result_docs), "kinds": dict(sorted(kinds.items())),
        "documents_regenerated": len(regenerated), "documents_reused": len(result_docs) - len(regenerated),
        "llm_calls": llm_calls, "llm_fallbacks": fallbacks,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path = out / SET_FILE
    _write_text(path, "".join(json.dumps(ln, ensure_ascii=False) + "\n" for ln in lines))
    _write_text(out / MANIFEST_FILE, json.dumps({**manifest, "path": str(path)}, indent=2) + "\n")
    _write_text(out / CACHE_FILE, json.dumps({"offline_generator": offline_name, "seed": seed,
                                              "documents": result_docs}, ensure_ascii=False))
    loaded = load_eval_set(path)
    return SyntheticSet(path, manifest, loaded.questions, regenerated, len(result_docs) - len(regenerated),
                        llm_calls, fallbacks, warnings)


def _document_candidates(documents: Iterable[DocumentSource], entries: dict, seed: int | str,
                         style: str) -> tuple[dict[str, dict], list[str], list[str]]:
    """Each document's cache entry: the cached one while its content hash holds, else its passages'
    candidates made anew. Returns (doc_path -> entry, the documents read again, warnings)."""
    result_docs: dict[str, dict] = {}
    regenerated: list[str] = []
    warnings: list[str] = []
    for doc in documents:
        entry = entries.get(doc.doc_path)
        if entry is not None and entry.get("content_hash") == doc.content_hash:
            result_docs[doc.doc_path] = entry
            continue
        try:
            title, blocks = doc.read()
        except Exception as exc:  # noqa: BLE001 - one unreadable document must not stop the set
            warnings.append(f"{doc.doc_path}: not read ({type(exc).__name__}: {exc})")
            continue
        passages = document_passages(doc.doc_path, title, blocks)
        make = _candidate if _english(passages) else _heading_candidate
        candidates = [c for c in (make(p, seed, style) for p in passages) if c is not None]
        result_docs[doc.doc_path] = {"content_hash": doc.content_hash, "candidates": candidates, "llm": {}}
        regenerated.append(doc.doc_path)
    return result_docs, regenerated, warnings


def _add_llm_questions(llm, llm_name: str, chosen: list[tuple[str, dict]], result_docs: dict[str, dict],
                       concurrency: int, say: Callable[[str], None]) -> tuple[int, list[str]]:
    """Ask the chat model for the chosen passages it has no question of this generator for; the
    questions go into their documents' entries. Returns (calls made, warnings)."""
    todo = [(d, c) for d, c in chosen if result_docs[d].get("llm", {}).get(c["uid"], {}).get("generator") != llm_name]
    if todo:
        say(f"synthetic eval set: asking {llm_name} for {len(todo)} question(s)")
    made, failures = _ask_llm(llm, todo, concurrency)
    for (d, c), record in zip(todo, made):
        if record is not None:
            result_docs[d].setdefault("llm", {})[c["uid"]] = {**record, "generator": llm_name}
    return len(todo), failures


def _set_lines(chosen: list[tuple[str, dict]], result_docs: dict[str, dict], llm_name: str | None,
               offline_name: str) -> tuple[list[dict], dict[str, int], set[str], int]:
    """The set's lines (the LLM question where there is one of this generator, else the offline
    one), with the count of each kind, the generators used and the LLM fallbacks."""
    lines = []
    kinds: dict[str, int] = {}
    generators: set[str] = set()
    fallbacks = 0
    for d, c in chosen:
        record = result_docs[d].get("llm", {}).get(c["uid"]) if llm_name is not None else None
        if record is not None and record.get("generator") == llm_name:
            generator = llm_name
        else:
            if llm_name is not None:
                fallbacks += 1
            record, generator = c["offline"], offline_name
        generators.add(generator)
        kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
        line = {"id": _question_id(c["uid"]), "question": record["question"], "expected": record["expected"]}
        if record.get("reference_answer"):
            line["reference_answer"] = record["reference_answer"]
        line["synthetic"] = {"kind": record["kind"], "generator": generator,
                             "doc_hash": result_docs[d]["content_hash"][:16], "passage": c["uid"]}
        lines.append(line)
    return lines, kinds, generators, fallbacks


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
