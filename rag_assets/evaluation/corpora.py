"""Which eval sets the evaluation scores: the main index's, plus labelled corpora of their own.

- Main: every ``*.jsonl`` under RAG_EVAL_DIR (or the files given), scored against the main index.
- Extra corpora (``RAG_EVAL_CORPORA="fastapi=data/samples/fastapi;other=/path"``): each folder holds
  its documents in ``docs/`` and its questions in ``*.jsonl`` (top level or ``eval/``); without
  questions it is scored on a synthetic set (rag_assets.evaluation.synthetic, RAG_EVAL_SYNTHETIC). Each gets a
  side index of its own (its own Chroma collection and state under
  ``<RAG_STATE_DIR>/eval_corpora/<name>/``), kept current by rag_assets.ingest.folder_index, so the UI can
  show every corpus side by side per mode without touching the main index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

NO_EVAL_SET = "no eval set: put *.jsonl files under {eval_dir}, pass one (rag evaluate --eval-set FILE), or set RAG_EVAL_CORPORA"
SYNTHETIC_OFF = " (synthetic sets are off: RAG_EVAL_SYNTHETIC=off)"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")


@dataclass(frozen=True)
class EvalCorpus:
    name: str
    folder: Path

    @property
    def docs_dir(self) -> Path:
        return self.folder / "docs"

    def eval_sets(self) -> list[Path]:
        return sorted(self.folder.glob("*.jsonl")) + sorted((self.folder / "eval").glob("*.jsonl"))

    def problem(self, require_eval_set: bool = True) -> str | None:
        """Why this corpus cannot be scored, or None. ``require_eval_set=False``: a corpus without a
        labelled set is scored on a synthetic one (RAG_EVAL_SYNTHETIC), so only docs/ is needed."""
        if not self.docs_dir.is_dir():
            return f"eval corpus {self.name}: no docs/ folder in {self.folder}"
        if require_eval_set and not self.eval_sets():
            return f"eval corpus {self.name}: no *.jsonl eval set in {self.folder} (or its eval/ folder)"
        return None

    def settings(self, settings):
        """Settings of this corpus's side index: its own collection, Chroma folder and state."""
        root = settings.state_dir / "eval_corpora" / self.name
        # local and private even when the main state is shared (RAG_STATE_URL): a scratch side index
        return replace(settings, docs_dir=self.docs_dir, chroma_path=root / "chroma", state_dir=root / "state",
                       state_url=None, chroma_host=None, collection=f"{settings.collection}-eval-{self.name}"[:512])


def main_eval_sets(eval_dir: Path, configured: Sequence[str] = ()) -> list[str]:
    """The eval sets scored against the main index: the configured files, else RAG_EVAL_DIR/*.jsonl."""
    return [str(p) for p in configured] or sorted(str(p) for p in Path(eval_dir).glob("*.jsonl"))


def parse_eval_corpora(value: str, base: Path | None = None) -> list[EvalCorpus]:
    """``name=folder`` entries separated by ``;`` (relative folders resolve against ``base``, default cwd).
    ValueError for a malformed entry or a repeated name."""
    base = Path.cwd() if base is None else Path(base)
    corpora: list[EvalCorpus] = []
    for entry in (value or "").split(";"):
        if not entry.strip():
            continue
        name, sep, folder = entry.partition("=")
        name, folder = name.strip(), folder.strip()
        if not sep or not folder or not _NAME.fullmatch(name):
            raise ValueError(f"eval corpus entry {entry.strip()!r} must be NAME=FOLDER (NAME: letters, digits, _ or -)")
        if any(c.name == name for c in corpora):
            raise ValueError(f"eval corpus {name!r} is given twice")
        corpora.append(EvalCorpus(name, (base / Path(folder).expanduser()).resolve()))
    return corpora
