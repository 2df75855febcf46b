"""A corpus: a named docs folder with its own index (vector store, state, eval sets and results).

The project's own corpus is `default`: its settings are the base settings the edge resolved once (the
component / code location, a resource, the CLI, the Python API's constructors: the environment's,
with the CLI's `--docs-dir` / `--collection` over them) and that every corpus carries (`base`), its
Dagster assets keep their plain keys (`document_chunks`), and it is what `rag` works on unless told
otherwise. Every other corpus pins the settings that keep it apart — its docs folder, its embedded
Chroma store and collection, state folder, eval sets and results, all under `RAG_CORPORA_DIR/<name>/`
— and the environment fills in the rest (model, chunk sizes, ...), so one corpus can never delete or
change another's index, nor wait for another's writer (an embedded Chroma store admits one writing
process: a store of its own per corpus). Its Dagster assets are prefixed with its name
(`my_docs/document_chunks`).

Corpora come from two places: Dagster components (`rag_assets.MarkdownCorpus` in the project's corpora folder, rag_assets/corpora) and
folders indexed with `rag ingest --docs-dir DIR [--name NAME]`, which registers the folder as a corpus of its own
(a `corpus.json` under `RAG_CORPORA_DIR/<name>/`) when no corpus owns it yet.

Names (docs/reliability.md): 1-63 lowercase letters, digits and underscores, starting with a letter
or digit; `default` is the project's own corpus, and a new corpus may not take a RESERVED name (the
default corpus's collection and asset groups). A name made from a folder is normalised
(`My Docs` -> `my_docs`) and given a short hash when it is reserved or taken; a name given by hand is
refused with the name it could be instead.

Where a corpus's vectors are: `<name>/chroma/` (a Chroma server, CHROMA_HOST: its collection
there). A corpus indexed before corpora had stores of their own still has its collection in the
default corpus's store until its next `rag ingest` moves it (orchestration/corpus_stores.py);
until then it is read and written there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Union

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError

DEFAULT_CORPUS = "default"
REGISTRY_FILE = "corpus.json"
STORE_FOLDER = "chroma"  # a named corpus's embedded Chroma store, in its own folder
# Dagster asset-key parts and group names allow letters, digits and underscores only; lowercase, so
# two names never differ by case alone (nor do their folders, on a case-insensitive disk)
_NAME = re.compile(r"[a-z0-9][a-z0-9_]{0,62}")
# names a new corpus may not take, and why
RESERVED = {
    DEFAULT_CORPUS: "the project's own corpus (RAG_DOCS_DIR)",
    "rag": "its collection would be rag_chunks, the default corpus's",
    "ingestion": "the default corpus's asset group",
    "evaluation": "the default corpus's asset group",
}
log = logging.getLogger(__name__)
# Where a corpus's base settings come from, as its edge says: the settings themselves (the CLI, the
# Python API: resolved once), or the edge's own reader of them (the code location: the settings of
# the process that runs a run or a sensor tick, read when it asks: Settings.from_env).
SettingsSource = Union[Settings, Callable[[], Settings]]


def resolve_settings(source: SettingsSource) -> Settings:
    return source if isinstance(source, Settings) else source()


@dataclass(frozen=True)
class Corpus:
    name: str = DEFAULT_CORPUS
    pinned: tuple[tuple[str, Any], ...] = ()  # Settings fields this corpus fixes (over the base settings)
    # the settings resolved once at the edge (the default corpus's); nothing below the edge reads the
    # environment. Not part of a corpus's identity: the same corpus over other settings is equal.
    base: SettingsSource | None = field(default=None, compare=False, repr=False)

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_CORPUS

    def over(self, base: SettingsSource) -> "Corpus":
        """The same corpus over the base settings an edge resolved."""
        return replace(self, base=base)

    def base_settings(self) -> Settings:
        """The base settings (the default corpus's) this corpus was resolved over at the edge."""
        if self.base is None:
            raise ConfigurationError(f"corpus {self.name}: its settings were not resolved (Corpus.over(settings) at "
                                     "the edge: the CLI, the component or code location, the Python API)")
        return resolve_settings(self.base)

    def settings(self) -> Settings:
        """The corpus's settings now: its pinned fields over the base settings; a named corpus's store
        is the one that holds its vectors now (store_folder)."""
        base = self.base_settings()
        if self.is_default:
            return base
        settings = replace(base, **dict(self.pinned)).resolved().validated()
        if settings.chroma_host:
            shared = base.collection
            if settings.collection == shared:
                raise ConfigurationError(
                    f"corpus {self.name}'s collection {shared!r} is the default corpus's RAG_COLLECTION on the Chroma "
                    f"server {settings.chroma_host}: set RAG_COLLECTION to another name")
            return settings
        store = self.store_folder()
        return settings if store == settings.chroma_path else replace(settings, chroma_path=store)

    @property
    def docs_dir(self) -> Path | None:
        return dict(self.pinned).get("docs_dir")

    @property
    def own_store(self) -> Path | None:
        """A named corpus's own embedded store folder (`<corpora_dir>/<name>/chroma`)."""
        return dict(self.pinned).get("chroma_path")

    def legacy_store(self) -> Path | None:
        """The default corpus's store when it still holds this corpus's collection, put there before
        corpora had stores of their own (not yet moved: orchestration/corpus_stores.py); else None."""
        own = self.own_store
        if self.is_default or own is None or Path(own).exists():
            return None
        pinned = dict(self.pinned)
        shared = self.base_settings()
        if shared.chroma_host:
            return None
        from rag_assets.index.chroma_store import embedded_collection_id

        try:
            held = embedded_collection_id(shared.chroma_path, pinned["collection"]) is not None
        except LookupError as exc:
            log.warning("corpus %s: %s; reading its own store", self.name, exc)
            return None
        # a collection of that name which is the default corpus's own is this corpus's only when it
        # wrote there (its state exists): a corpus named so before the names were reserved
        if held and (pinned["collection"] != shared.collection or Path(pinned["state_dir"]).exists()):
            return shared.chroma_path
        return None

    def left_behind_store(self) -> Path | None:
        """The default corpus's store when it still holds this corpus's collection although the corpus
        has its own store now: a move stopped (killed) between its rename and its last step, dropping
        the old collection (orchestration/corpus_stores.py finishes it); else None."""
        own = self.own_store
        if self.is_default or own is None or not Path(own).exists():
            return None
        pinned = dict(self.pinned)
        shared = self.base_settings()
        if shared.chroma_host or pinned["collection"] == shared.collection:
            return None  # a Chroma server, or the default corpus's own collection: never this corpus's to drop
        from rag_assets.index.chroma_store import embedded_collection_id

        try:
            held = embedded_collection_id(shared.chroma_path, pinned["collection"]) is not None
        except LookupError:
            return None
        return shared.chroma_path if held else None

    def store_folder(self) -> Path:
        """Where the corpus's embedded store is now: its own folder, or the default corpus's store
        while that still holds its collection (legacy_store)."""
        return self.legacy_store() or self.own_store

    @classmethod
    def named(cls, name: str, docs_dir: Path | str, corpora_dir: Path, *, base: SettingsSource | None = None,
              **settings: Any) -> "Corpus":
        """A corpus of its own: everything it writes under corpora_dir/<name>/, its own collection.
        `settings` pins more fields (chunk sizes, embedder, required metadata, ...) over `base`."""
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
            "chroma_path": home / STORE_FOLDER,
            "state_dir": home / "state",
            "eval_dir": home / "eval",
            "eval_results_dir": home / "eval_results",
            **{k: v for k, v in settings.items() if v is not None},
        }
        return cls(name, tuple(sorted(pinned.items())), base)


def validate_name(name: str, *, new: bool = False) -> str:
    """The name, when it is one (see the module docstring); a new corpus's may not be RESERVED."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        better = normalised_name(str(name or ""))
        hint = f"; `{better}` would do" if better and better not in RESERVED else ""
        raise ConfigurationError(
            f"corpus name {name!r}: use 1-63 lowercase letters, digits and underscores, starting with a letter "
            f"or digit (it names a folder and prefixes Dagster asset keys){hint}")
    if new and name in RESERVED:
        raise ConfigurationError(f"corpus name {name!r} is reserved: {RESERVED[name]}; pick another name")
    return name


def normalised_name(text: str) -> str:
    """A name made of any text: lowercase, each run of other characters one underscore (`My Docs!`
    -> `my_docs`); "" when nothing is left."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:50].strip("_")


def name_for_folder(folder: Path) -> str:
    """A corpus name from a folder's name: `~/My Docs` -> `my_docs` (`docs` when nothing is left)."""
    return normalised_name(Path(folder).name) or "docs"


# -- the registry of folders indexed with `rag ingest --docs-dir` ------------------------------------
def registered(corpora_dir: Path, base: SettingsSource | None = None) -> list[Corpus]:
    """The corpora registered under corpora_dir, by name (a malformed entry names its file), over
    the base settings."""
    found = []
    for entry in sorted(Path(corpora_dir).glob(f"*/{REGISTRY_FILE}")):
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
            found.append(Corpus.named(data["name"], data["docs_dir"], corpora_dir, base=base))
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


def new_corpus_for(folder: Path, corpora_dir: Path, taken: Iterable[str], name: str | None = None,
                   base: SettingsSource | None = None) -> Corpus:
    """A corpus for a folder nobody owns: named `name` (refused when it is not a name, reserved or
    taken), else after the folder (with a short hash when that name is reserved or taken)."""
    folder = Path(folder).expanduser().resolve()
    taken = set(taken)
    if name is not None:
        validate_name(name, new=True)
        if name in taken:
            raise ConfigurationError(f"there is a corpus named {name!r} already (`rag corpora` lists them); pick another name")
        return Corpus.named(name, folder, corpora_dir, base=base)
    name = name_for_folder(folder)
    if name in taken or name in RESERVED:
        name = f"{name[:43]}_{hashlib.sha256(str(folder).encode()).hexdigest()[:6]}"
    return Corpus.named(name, folder, corpora_dir, base=base)


def find_corpus(name: str | None, base: Settings, known: Iterable[Corpus] | None = None) -> Corpus:
    """A corpus by name, over the base settings: None or `default` is the project's own, any other
    one of `known` (default: the registered ones)."""
    if name in (None, "", DEFAULT_CORPUS):
        return Corpus(base=base)
    known = list(registered(base.corpora_dir, base) if known is None else known)
    found = next((c for c in known if c.name == name), None)
    if found is None:
        names = ", ".join([DEFAULT_CORPUS, *(c.name for c in known)])
        raise ConfigurationError(f"no corpus named {name!r} (known: {names}); `rag ingest --docs-dir DIR` makes one")
    return found if found.base is not None else found.over(base)
