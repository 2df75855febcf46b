"""Moving a corpus's vectors into a store of its own.

Before corpora had stores of their own, every named corpus kept its collection (`<name>_chunks`)
in the default corpus's embedded store (data/chroma): one store, one writing process at a time
(chroma #7040), so an ingest of one corpus waited for another's. Now each named corpus has
`<corpora_dir>/<name>/chroma/` (rag_assets.corpus). A corpus made before that is read and written
where it was until its next `rag ingest` (or RAGPipeline.ingest) moves it, first thing, here:

1. the default corpus's store is held (its writer lock: no run writes it meanwhile; this waits once
   for an ingest of the default corpus in progress);
2. the collection is copied as it is (ids, vectors, texts, metadata: nothing is embedded again)
   into `<name>/chroma.moving/`, counted, and that folder renamed to `<name>/chroma/`: from that
   moment every process reads and writes the corpus there (Corpus.settings looks each time);
3. the corpus's index records name the copy's collection id instead of the old one's, and the
   index generation moves, so readers load the copy;
4. the old collection is dropped from the default corpus's store.

A crash before (2)'s rename leaves the old store as it was (the next ingest starts over); after it,
records still naming the old collection make those documents stale, and the ingest indexes them
again from the embedding cache (no embedding), and the old collection, still in the default corpus's
store, is dropped by the next ingest of the corpus (Corpus.left_behind_store; it stayed there for
good before). A corpus whose collection was the default corpus's
own (a folder named `rag`, before names were reserved) shares its vectors with the default
corpus: nothing is copied; its own store starts empty and its ingest indexes it from its embedding
cache, and the chunks only it recorded are deleted from the default corpus's collection.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from filelock import Timeout

from rag_assets.corpus import Corpus
from rag_assets.index.chroma_store import copy_collection, delete_from_collection, drop_collection, embedded_collection_id
from rag_assets.index.generation import bump_generation
from rag_assets.index.stage_store import INDEXED, StageStore

from .resources import store_writer_lock

MOVING = ".moving"


@dataclass(frozen=True)
class StoreMove:
    corpus: str
    source: str  # the default corpus's store it left
    target: str  # its own
    vectors_copied: int
    records_renamed: int
    shared_with_default: bool = False  # its collection was the default corpus's: re-indexed, not copied
    vectors_removed_from_default: int = 0


def move_to_own_store(corpus: Corpus) -> StoreMove | None:
    """Move the corpus's collection out of the default corpus's store into its own (see the module
    docstring), when it is still there; None when there is nothing to move. The caller holds the
    corpus's ingest lock."""
    legacy = corpus.legacy_store()
    if legacy is None:
        _finish_a_stopped_move(corpus)
        return None
    own = Path(corpus.own_store)
    shared = corpus.base_settings()  # the default corpus's, as the edge resolved them
    lock = _default_store_lock(corpus, Path(legacy), f"moving corpus {corpus.name}'s vectors into a store of its own "
                                                     f"({own}) once")
    try:
        if corpus.legacy_store() is None:  # another process moved it meanwhile
            return None
        settings = corpus.settings()  # the old store's, until the rename below
        collection = settings.collection
        stages = StageStore.for_settings(settings.paths)
        staging = own.with_name(own.name + MOVING)
        shutil.rmtree(staging, ignore_errors=True)  # a move that crashed half-way
        if collection == shared.collection:
            return _split_from_default(corpus, Path(legacy), own, stages, collection)
        old_id, new_id, copied = copy_collection(Path(legacy), staging, collection)
        staging.rename(own)
        renamed = 0
        if old_id is not None:
            for fingerprint in stages.fingerprints(INDEXED):
                name, sep, rest = fingerprint.partition(":")
                if sep and name == collection and rest.startswith(f"{old_id}:"):
                    renamed += stages.replace_fingerprint(INDEXED, fingerprint,
                                                          f"{collection}:{new_id}:{rest[len(old_id) + 1:]}")
        bump_generation(stages.db)
        drop_collection(Path(legacy), collection)
        return StoreMove(corpus.name, str(legacy), str(own), copied, renamed)
    finally:
        lock.release()


def _default_store_lock(corpus: Corpus, store: Path, doing: str):
    """The default corpus's store's writer lock, acquired (waiting for its writer, and saying so)."""
    lock = store_writer_lock(replace(corpus.base_settings(), chroma_path=store))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"rag: {doing}; waiting for the writer of {store} to finish", file=sys.stderr, flush=True)
        lock.acquire()
    return lock


def _finish_a_stopped_move(corpus: Corpus) -> None:
    """A move killed after its rename left the corpus's old collection in the default corpus's store:
    its copy is complete (the rename comes after the count), so the old one is dropped now."""
    store = corpus.left_behind_store()
    if store is None:
        return
    collection = corpus.settings().collection
    lock = _default_store_lock(corpus, store, f"dropping corpus {corpus.name}'s old collection from {store}")
    try:
        if corpus.left_behind_store() is not None and drop_collection(store, collection):
            print(f"rag: corpus {corpus.name}: its old collection {collection} left behind in {store} by a move "
                  "that was stopped was dropped (its store of its own has it)", file=sys.stderr, flush=True)
    finally:
        lock.release()


def _split_from_default(corpus: Corpus, legacy: Path, own: Path, stages: StageStore, collection: str) -> StoreMove:
    """The corpus's collection is the default corpus's own: an empty store of its own (its ingest
    indexes it from the embedding cache), and the chunks only it recorded out of the default's."""
    default_stages = StageStore.for_settings(corpus.base_settings().paths)
    theirs = stages.chunk_ids() - default_stages.chunk_ids()
    own.mkdir(parents=True)  # its store from now on, empty until the ingest indexes it
    removed = delete_from_collection(legacy, collection, sorted(theirs)) if embedded_collection_id(legacy, collection) else 0
    if removed:
        bump_generation(default_stages.db)
    bump_generation(stages.db)
    return StoreMove(corpus.name, str(legacy), str(own), 0, 0, shared_with_default=True,
                     vectors_removed_from_default=removed)
