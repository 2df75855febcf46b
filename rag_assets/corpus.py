"""A corpus: a named docs folder with its own index (collection, state, eval sets and results).

The project's own corpus is `default`: its settings are the environment's (`Settings.from_env`), its
Dagster assets keep their plain keys (`document_chunks`), and it is what `rag` works on unless told
otherwise. Every other corpus pins the settings that keep it apart — its docs folder, Chroma
collection, state folder, eval sets and results, all under `RAG_CORPORA_DIR/<name>/` — and the
environment fills in the rest (model, chunk sizes, ...), so one corpus can never delete or change
another's index. Its Dagster assets are prefixed with its name (`my_docs/document_chunks`).

Corpora come from two places: Dagster components (`rag_assets.MarkdownCorpus` in the project's corpora folder, rag_assets/corpora) and
folders indexed with `rag ingest --docs-dir DIR`, which registers the folder as a corpus of its own
(a `corpus.json` under `RAG_CORPORA_DIR/<name>/`) when no corpus owns it yet.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError

DEFAULT_CORPUS = "default"
REGISTRY_FILE = "corpus.json"
# Dagster asset-key parts and group names allow letters, digits and underscores only
_NAME = re.compile(r"[a-z0-9][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Corpus:
    name: str = DEFAULT_CORPUS
    pinned: tuple[tuple[str, Any], ...] = ()  # Settings fields this corpus fixes (over the environment)

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_CORPUS

    def settings(self, env: Mapping[str, str] | None = None) -> Settings:
        """The corpus's settings now: its pinned fields over the environment over the defaults."""
        return Settings.from_env(env, **dict(self.pinned))

    @property
    def docs_dir(self) -> Path | None:
        return dict(self.pinned).get("docs_dir")

    @classmethod
    def named(cls, name: str, docs_dir: Path | str, corpora_dir: Path, **settings: Any) -> "Corpus":
        """A corpus of its own: everything it writes under corpora_dir/<name>/, its own collection.
        `settings` pins more fields (chunk sizes, embedder, required metadata, ...)."""
        name = validate_name(name)
        if name == DEFAULT_CORPUS:
            raise ConfigurationError(f"'{DEFAULT_CORPUS}' is the project's own corpus (RAG_DOCS_DIR); pick another name")
        unknown = sorted(set(settings) - {f for f in Settings.__dataclass_fields__})
        if unknown:
            raise ConfigurationError(f"corpus {name}: unknown setting(s) {', '.join(unknown)}")
        home = Path(corpora_dir) / name
        pinned = {
            "docs_dir": Path(docs_dir).expanduser().resolve(),
            "collection": f"{name}_chunks",
            "state_dir": home / "state",
            "eval_dir": home / "eval",
            "eval_results_dir": home / "eval_results",
            **{k: v for k, v in settings.items() if v is not None},
        }
        return cls(name, tuple(sorted(pinned.items())))


def validate_name(name: str) -> str:
    if not _NAME.fullmatch(name or ""):
        raise ConfigurationError(
            f"corpus name {name!r}: use 1-63 lowercase letters, digits and underscores, starting with a letter "
            "or digit (it prefixes Dagster asset keys)")
    return name


def name_for_folder(folder: Path) -> str:
    """A corpus name from a folder's name: `~/My Docs` -> `my_docs`."""
    name = re.sub(r"[^a-z0-9]+", "_", Path(folder).name.lower()).strip("_")[:50]
    return name if name and name != DEFAULT_CORPUS else "docs"


# -- the registry of folders indexed with `rag ingest --docs-dir` ------------------------------------
def registered(corpora_dir: Path) -> list[Corpus]:
    """The corpora registered under corpora_dir, by name (a malformed entry names its file)."""
    found = []
    for entry in sorted(Path(corpora_dir).glob(f"*/{REGISTRY_FILE}")):
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
            found.append(Corpus.named(data["name"], data["docs_dir"], corpora_dir))
        except (OSError, ValueError, KeyError, TypeError, ConfigurationError) as exc:
            raise ConfigurationError(f"{entry}: not a corpus registration ({exc}); fix or delete it") from None
    return found


def register(corpus: Corpus, corpora_dir: Path) -> Path:
    path = Path(corpora_dir) / corpus.name / REGISTRY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"name": corpus.name, "docs_dir": str(corpus.docs_dir)}, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def owner_of(folder: Path, corpora: Iterable[Corpus]) -> Corpus | None:
    folder = Path(folder).expanduser().resolve()
    return next((c for c in corpora if c.docs_dir is not None and Path(c.docs_dir) == folder), None)


def new_corpus_for(folder: Path, corpora_dir: Path, taken: Iterable[str]) -> Corpus:
    """A corpus for a folder nobody owns, named after it (with a short hash when the name is taken)."""
    folder = Path(folder).expanduser().resolve()
    name = name_for_folder(folder)
    if name in set(taken):
        name = f"{name[:43]}_{hashlib.sha256(str(folder).encode()).hexdigest()[:6]}"
    return Corpus.named(name, folder, corpora_dir)


def find_corpus(name: str | None, base: Settings | None = None, known: Iterable[Corpus] | None = None) -> Corpus:
    """A corpus by name: None or `default` is the project's own, any other one of `known` (default:
    the registered ones)."""
    if name in (None, "", DEFAULT_CORPUS):
        return Corpus()
    base = base or Settings.from_env()
    known = list(registered(base.corpora_dir) if known is None else known)
    found = next((c for c in known if c.name == name), None)
    if found is None:
        names = ", ".join([DEFAULT_CORPUS, *(c.name for c in known)])
        raise ConfigurationError(f"no corpus named {name!r} (known: {names}); `rag ingest --docs-dir DIR` makes one")
    return found
