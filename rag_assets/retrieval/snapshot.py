"""The search snapshot as a query reads it: everything a query needs of the index, in one place, read
without the vector store.

The ingest commits the snapshot whenever it changes the index (snapshot_writer.py): per chunk its
text, stored metadata and embedding, the BM25 postings of its indexed text and of its
``title > h1 > h2`` header, and the row table ranking and context windows use (snapshot_segments.py),
in segments listed by a manifest that ``CURRENT`` names (snapshot_builds.py). A query ranks over a
``SnapshotView`` of one manifest: BM25 (bm25.py, scored at query time over the live chunks, the header
counted ``heading_repeats`` more times: RAG_KEYWORD_HEADING_REPEATS), the dense list by exact cosine over
the stored vectors (memory-mapped), the row table, then the texts, metadata and context windows of its
results, all from the same view, so a query never mixes two versions of a document, and a commit
never makes it wait (readers take no lock; the switch is the atomic replace of CURRENT).

``SearchSnapshot`` is what a reader holds: each ``view()`` reads the index generation (one small read of
the state database) and CURRENT, and returns the view of the live manifest, reusing the segments it
already has open (a long-lived reader follows a commit by opening the new segment, not the whole
index). A reader made with ``recheck_seconds`` > 0 (`rag serve`: serving.service.RECHECK_SECONDS) makes
those two reads at most once in that many seconds and answers from the view they last confirmed in
between: a commit is seen at most that much later, and every query still reads one whole view. When the snapshot does not answer for the state database's generation — an index written by an
earlier version of this project, or by a writer that did not commit — or when a segment of the live
manifest is missing or not as written (snapshot_integrity.py: never served) — the reader builds it from
the store once, under the snapshot's lock, and logs a WARNING saying so (snapshot_writer.SnapshotWriter.rebuild);
on a state folder it may not write (a read-only mount) it builds one for itself in a temporary folder.
"""

from __future__ import annotations

import atexit
import bisect
import logging
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.index.generation import EMPTY, current_generation
from rag_assets.retrieval import bm25
from rag_assets.retrieval.snapshot_builds import FolderBuilds, builds_for, follows
from rag_assets.retrieval.snapshot_integrity import DamagedSegment
from rag_assets.retrieval.snapshot_segments import Segment
from rag_assets.retrieval.terms import function_terms, query_terms

log = logging.getLogger(__name__)

# Extra times a chunk's header is counted in the BM25 index (see the module docstring).
DEFAULT_HEADING_REPEATS: int = DEFAULTS["keyword_heading_repeats"]  # RAG_KEYWORD_HEADING_REPEATS'
_VIEWS_KEPT = 2  # the live view and the one before (a query's context is read from its own)
_TERMS_KEPT = 64  # queries whose terms a view keeps (a query asks for them once per list it scores)
_ATTEMPTS = 5  # reads of CURRENT when segments are collected under a reader's feet


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    score: float  # BM25
    row: int  # the chunk's row in the view


@dataclass(frozen=True)
class ChunkRow:
    """What ranking needs to know about a chunk."""

    doc_path: str
    section: str  # section_key
    text: str  # text_key
    chunk_index: int = 0
    tokens: int = 0  # the stored token_count of the chunk's text
    opens: bool = False  # its text starts with a heading line: the first chunk of a section


class SnapshotView:
    """One manifest of the snapshot: its live chunks as rows 0..len-1 (segment order, then row order
    within a segment), everything a query reads. Immutable: shared by the queries of its generation."""

    def __init__(self, manifest: dict | None, segments: Sequence[Segment], heading_repeats: int):
        manifest = manifest or {}
        self.manifest = manifest
        self.name = manifest.get("name")
        self.generation = manifest.get("generation", EMPTY)  # no manifest: nothing was ever indexed
        self.lineage = frozenset(manifest.get("lineage", (EMPTY,)))
        self.embedding_model = manifest.get("embedding_model")
        self.dimension = manifest.get("dimension")
        self.segments = list(segments)
        self.heading_repeats = heading_repeats
        # the tokenizer families of its segments' documents: a query is read as each of them reads it
        self.languages = tuple(sorted({lang for s in self.segments for lang in s.languages})) or ("en",)
        sizes = [s.rows for s in self.segments]
        self._bases = [0, *np.cumsum(sizes, dtype=np.int64).tolist()]
        live = np.ones(self._bases[-1], dtype=bool)
        for base, entry in zip(self._bases, manifest.get("segments", [])):
            for lo, hi in entry.get("dead", []):
                live[base + lo:base + hi] = False
        self._row_phys = np.flatnonzero(live)  # row -> position over all segments' rows
        self._phys_row = np.full(len(live), -1, dtype=np.int64)
        self._phys_row[self._row_phys] = np.arange(len(self._row_phys))
        body = np.concatenate([np.asarray(s.body_len, dtype=np.int64) for s in self.segments]) if self.segments else np.zeros(0, np.int64)
        head = np.concatenate([np.asarray(s.head_len, dtype=np.int64) for s in self.segments]) if self.segments else np.zeros(0, np.int64)
        self._dl_body = bm25.lengths(body[self._row_phys] + heading_repeats * head[self._row_phys])
        self._dl_head = bm25.lengths(head[self._row_phys])
        self._avg_body, self._avg_head = bm25.mean_length(self._dl_body), bm25.mean_length(self._dl_head)
        self._documents: dict[str, dict] | None = None
        self._doc_lock = threading.Lock()
        self._terms: dict[str, list[str]] = {}  # the last queries' terms: a hybrid query reads them 3 times

    def __len__(self) -> int:
        return len(self._row_phys)

    @property
    def meta(self) -> dict:
        return dict(self.manifest)

    # -- rows ------------------------------------------------------------------------------------
    def _locate(self, row: int) -> tuple[Segment, int, int]:
        """(the row's segment, its row there, the segment's base)."""
        phys = int(self._row_phys[row])
        s = bisect.bisect_right(self._bases, phys) - 1
        return self.segments[s], phys - self._bases[s], self._bases[s]

    def chunk_id(self, row: int) -> str:
        segment, local, _ = self._locate(row)
        return segment.chunk_id(local)

    def row(self, chunk_id: str) -> int | None:
        """The chunk's row (None when it is not in this view)."""
        for segment, base in zip(self.segments, self._bases):
            local = segment.find_chunk(chunk_id)
            if local is not None and self._phys_row[base + local] >= 0:
                return int(self._phys_row[base + local])
        return None

    def table(self, row: int) -> ChunkRow:
        segment, local, _ = self._locate(row)
        doc = int(segment.row_doc[local])
        return ChunkRow(segment.doc_path(doc), segment.section(local), segment.text_keys[local].decode("ascii"),
                        int(segment.chunk_index[local]), int(segment.tokens[local]), bool(segment.opens[local]))

    def text(self, row: int) -> str:
        segment, local, _ = self._locate(row)
        return segment.text(local)

    def tokens(self, row: int) -> int:
        segment, local, _ = self._locate(row)
        return int(segment.tokens[local])

    def metadata(self, row: int) -> dict:
        segment, local, _ = self._locate(row)
        return segment.metadata(local)

    def section_rows(self, row: int) -> tuple[np.ndarray, int]:
        """The rows of the row's section in document order and the row's place among them."""
        segment, local, base = self._locate(row)
        lo, hi = segment.section_span(local)
        return self._phys_row[base + lo:base + hi], local - lo

    # -- documents -------------------------------------------------------------------------------
    def documents(self) -> dict[str, dict]:
        """Every live document's filterable fields (retrieval.filters)."""
        with self._doc_lock:
            if self._documents is None:
                found: dict[str, dict] = {}
                for segment, base in zip(self.segments, self._bases):
                    starts = np.asarray(segment.doc_bounds[:-1], dtype=np.int64)
                    for doc in np.flatnonzero(self._phys_row[base + starts] >= 0):
                        found[segment.doc_path(int(doc))] = segment.fields(int(doc))
                self._documents = found
        return self._documents

    def rows_of(self, doc_paths: set[str]) -> np.ndarray:
        """A boolean mask over the rows: True where the chunk belongs to one of doc_paths."""
        parts = []
        for segment in self.segments:
            wanted = np.fromiter((segment.doc_path(d) in doc_paths for d in range(segment.documents)), dtype=bool,
                                 count=segment.documents)
            parts.append(wanted[np.asarray(segment.row_doc, dtype=np.int64)])
        return np.concatenate(parts)[self._row_phys] if parts else np.zeros(0, dtype=bool)

    # -- BM25 ------------------------------------------------------------------------------------
    def query_terms(self, query: str) -> list[str]:
        """The query's BM25 terms as the languages of this view's chunks read them (terms.query_terms)."""
        terms = self._terms.get(query)
        if terms is None:
            if len(self._terms) >= _TERMS_KEPT:
                self._terms.clear()
            terms = self._terms[query] = query_terms(query, self.languages)
        return list(terms)

    def _postings(self, term: str, header_repeats: int | None) -> list[bm25.Postings]:
        parts = []
        for segment, base in zip(self.segments, self._bases):
            found = segment.postings(term, header_repeats)
            if found is None or not len(found.rows):
                continue
            rows = self._phys_row[base + found.rows]
            keep = rows >= 0
            if keep.any():
                parts.append(bm25.Postings(rows[keep], found.tf[keep]))
        return parts

    def _scores(self, terms: list[str], header_repeats: int | None) -> np.ndarray | None:
        cache: dict[str, list[bm25.Postings]] = {}
        postings = [cache.setdefault(t, self._postings(t, header_repeats)) if t not in cache else cache[t] for t in terms]
        dl, avg = (self._dl_head, self._avg_head) if header_repeats is None else (self._dl_body, self._avg_body)
        return bm25.score(postings, len(self), dl, avg) if len(self) else None

    def scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every row (float32), or None when no query term is indexed."""
        return self._scores(self.query_terms(query), self.heading_repeats)

    def heading_scores(self, query: str, rows: Sequence[int]) -> np.ndarray:
        """BM25 of the query against the headers (title > h1 > h2) of the given rows."""
        scores = self._scores(self.query_terms(query), None)
        if scores is None:
            return np.zeros(len(rows), dtype=np.float32)
        return scores[np.asarray(rows, dtype=np.int64)]

    def search(self, query: str, top_k: int, mask: np.ndarray | None = None) -> list[KeywordHit]:
        scores = self.scores(query)
        if scores is None:
            return []
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        k = min(top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]  # by score, ties by row (stable and deterministic)
        return [KeywordHit(self.chunk_id(int(i)), float(scores[i]), int(i)) for i in top if scores[i] > 0]

    def term_presence(self, query: str, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For each distinct query term: its BM25 idf over this view (float64; a term no chunk holds gets
        the idf of df 0, the rarest there is), whether any chunk holds it, which of ``rows`` hold it (in
        their text or header) and which hold it in their header (title > h1 > h2): two terms x rows bool
        matrices. Function words the keyword index keeps ("during", "between": terms.FUNCTION_WORDS) are
        left out: no topic, and in a small index one it lacks would read as a subject it never names.
        rag_assets.retrieval.relevance reads them."""
        terms = [t for t in dict.fromkeys(self.query_terms(query)) if t not in function_terms()]
        idf = np.zeros(len(terms), dtype=np.float64)
        known = np.zeros(len(terms), dtype=bool)
        present = np.zeros((len(terms), len(rows)), dtype=bool)
        in_header = np.zeros((len(terms), len(rows)), dtype=bool)
        wanted = np.asarray(rows, dtype=np.int64)
        for i, term in enumerate(terms):
            parts = self._postings(term, self.heading_repeats)
            df = sum(len(p.rows) for p in parts)
            idf[i], known[i] = float(bm25.idf(df, len(self))), df > 0
            for p in parts:
                present[i] |= np.isin(wanted, p.rows)
            for p in self._postings(term, None):
                in_header[i] |= np.isin(wanted, p.rows)
        return idf, known, present, in_header

    def rare_terms(self, query: str, row: int, max_chunks: int) -> list[str]:
        """The query's terms that the chunk at ``row`` contains and at most ``max_chunks`` chunks do."""
        return self.rare_terms_of(query, [row], max_chunks)[0]

    def rare_terms_of(self, query: str, rows: Sequence[int], max_chunks: int) -> list[list[str]]:
        """rare_terms of each of the rows, each term's postings read once for all of them."""
        found: list[list[str]] = [[] for _ in rows]
        for term in dict.fromkeys(self.query_terms(query)):
            parts = self._postings(term, self.heading_repeats)
            if not 0 < sum(len(p.rows) for p in parts) <= max_chunks:
                continue
            for terms, row in zip(found, rows):
                if any(row in p.rows for p in parts):
                    terms.append(term)
        return found

    # -- vectors ---------------------------------------------------------------------------------
    def nearest(self, query_vector: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k rows (among mask's, or all) nearest the query by exact cosine over the stored vectors,
        best first (ties by row), with their cosines."""
        q = np.asarray(query_vector, dtype=np.float32)
        if not len(self) or not self.dimension:  # nothing indexed (or nothing with a vector): nothing near
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if mask is not None:  # the selected rows' vectors only
            rows = np.flatnonzero(mask)
            sims = self.vectors(rows) @ q
        else:  # every vector, segment by segment as stored (the dead rows' cosines are dropped after)
            rows = np.arange(len(self))
            sims = np.concatenate([np.asarray(s.vectors) @ q for s in self.segments])[self._row_phys]
        k = min(k, len(rows))
        if k <= 0:
            return rows[:0], sims[:0]
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.lexsort((rows[top], -sims[top]))]
        return rows[top], sims[top]

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The given rows' stored vectors (float32, rows x dimension, in order)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros((len(rows), self.dimension or 0), dtype=np.float32)
        phys = self._row_phys[rows]
        for s, segment in enumerate(self.segments):
            lo, hi = self._bases[s], self._bases[s + 1]
            at = np.flatnonzero((phys >= lo) & (phys < hi))
            if len(at):
                out[at] = segment.vectors[phys[at] - lo]
        return out

    def cosines(self, query_vector: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        """Dense cosine of the query with the given rows' stored vectors (float32, in order)."""
        if not self.dimension:  # nothing indexed yet: no vector table to multiply
            return np.zeros(len(rows), dtype=np.float32)
        return self.vectors(rows) @ np.asarray(query_vector, dtype=np.float32)


class SearchSnapshot:
    """A collection's search snapshot as a reader holds it (see the module docstring). ``open_store``:
    how to open the store when the snapshot must be built from it (a reader never needs it otherwise)."""

    def __init__(self, settings, *, heading_repeats: int | None = None, open_store: Callable | None = None,
                 builds: FolderBuilds | None = None, recheck_seconds: float = 0.0):
        repeats = settings.keyword_heading_repeats if heading_repeats is None else heading_repeats
        if repeats < 0:
            raise ValueError(f"heading_repeats must be >= 0, got {repeats}")
        if not recheck_seconds >= 0:
            raise ValueError(f"recheck_seconds must be >= 0, got {recheck_seconds}")
        self.recheck_seconds = float(recheck_seconds)
        # (the live view, the monotonic time its check began): what view() answers within recheck_seconds
        self._confirmed: tuple[SnapshotView | None, float] = (None, float("-inf"))
        self.checks = 0  # reads of the generation and CURRENT by view()
        self.settings = settings
        self.collection = settings.collection
        self.heading_repeats = repeats
        self.builds = builds if builds is not None else builds_for(settings)
        self._open_store = open_store
        self._private: FolderBuilds | None = None  # a build of this process's own (a folder it cannot write)
        self._segments: dict[str, Segment] = {}
        self._views: OrderedDict[str, SnapshotView] = OrderedDict()  # generation -> view, the live one last
        self._lock = threading.Lock()
        self.loads = 0  # views opened by this object (a new manifest)
        self.rebuilds = 0  # snapshots this object built from the store
        # the reasons of the builds from the store under way in this object now (threads): a caller
        # that stopped waiting can say so rather than blame the machine
        self._building: list[str] = []

    def view(self) -> SnapshotView:
        """The view of the live snapshot (see the module docstring)."""
        if self.recheck_seconds:
            confirmed, since = self._confirmed  # one tuple: read whole, set whole
            if confirmed is not None and time.monotonic() - since < self.recheck_seconds:
                return confirmed
        for _ in range(_ATTEMPTS):
            began = time.monotonic()  # the bound counts from before the reads, not after
            self.checks += 1
            generation = current_generation(self.settings)  # before CURRENT: a commit publishes, then sets it
            name = self.builds.current_name()
            with self._lock:
                live = next(reversed(self._views.values()), None)
            if live is not None and generation in live.lineage and (live.name == name or (
                    self._private is not None and live.name == self._private.current_name())):
                return self._confirm(live, began)
            manifest = self.builds.manifest(name)
            if name is not None and manifest is None and self.builds.current_name() != name:
                continue  # replaced while it was read (else it names no manifest this version reads: rebuilt)
            builds = self.builds
            if not follows(manifest, generation):
                private = self._private.current() if self._private is not None else None
                if not follows(private, generation):
                    self._rebuild(manifest, generation)
                    continue
                manifest, builds = private, self._private
            try:
                return self._confirm(self._open(manifest, builds), began)
            except (FileNotFoundError, DamagedSegment) as exc:
                if builds.current_name() != (manifest or {}).get("name"):
                    continue  # a segment was collected by a newer commit: read CURRENT again
                # a segment of the live manifest is missing or not as written: never served, rebuilt
                damage = str(exc) if isinstance(exc, DamagedSegment) else f"{exc.filename or exc}: missing"
                log.warning("search snapshot of collection %r: %s", self.collection, damage)
                self._rebuild(manifest, generation, damage=damage)
        raise RuntimeError(f"the search snapshot of collection {self.collection!r} kept changing while it was read")

    def _confirm(self, view: SnapshotView, began: float) -> SnapshotView:
        if self.recheck_seconds:
            with self._lock:
                if began >= self._confirmed[1]:  # a check that began earlier never replaces a later one's view
                    self._confirmed = (view, began)
        return view

    def view_of(self, generation: str | None) -> SnapshotView:
        """The view a query of this generation used (the live one when it is no longer held)."""
        with self._lock:
            held = self._views.get(generation) if generation is not None else None
        return held if held is not None else self.view()

    def _open(self, manifest: dict | None, builds: FolderBuilds) -> SnapshotView:
        names = [s["name"] for s in (manifest or {}).get("segments", [])]
        with self._lock:
            segments = [self._segments.get(n) for n in names]
        opened = [s if s is not None else Segment(builds.segment_folder(n)) for s, n in zip(segments, names)]
        view = SnapshotView(manifest, opened, self.heading_repeats)
        with self._lock:
            self._views[view.generation] = view
            self._views.move_to_end(view.generation)
            while len(self._views) > _VIEWS_KEPT:
                self._views.popitem(last=False)
            self._segments = {s.name: s for v in self._views.values() for s in v.segments}  # the rest are let go
            self.loads += 1
        return view

    def _rebuild(self, manifest: dict | None, generation: str, damage: str | None = None) -> None:
        """Build the snapshot from the store: it does not follow the index, or (damage) one of its
        segments is missing or not as written."""
        if self._open_store is None:
            why = f"a segment of it is damaged ({damage})" if damage else \
                f"it does not answer for the index generation {generation[:12]}"
            raise RuntimeError(f"the search snapshot of collection {self.collection!r}: {why}, and this reader has "
                               "no store to build it from")
        from rag_assets.retrieval.snapshot_builds import stale_reason

        reason = f"{f'a segment of it is damaged: {damage}' if damage else stale_reason(manifest, generation)} (found by a query)"
        with self._lock:
            self._building.append(reason)
        try:
            self._build_from_store(reason, repair=damage is not None)
        finally:
            with self._lock:
                self._building.remove(reason)

    @property
    def building(self) -> str | None:
        """Why a build of this snapshot from the store is under way in this process (None: none is)."""
        with self._lock:
            return self._building[-1] if self._building else None

    def _build_from_store(self, reason: str, repair: bool = False) -> None:
        from rag_assets.retrieval.snapshot_writer import SnapshotWriter

        store = self._open_store()
        try:
            writer = SnapshotWriter(self.settings, store)
            writer.rebuild(reason, repair=repair)
        except OSError as exc:  # a state folder this reader may not write (a read-only mount)
            log.warning("search snapshot of collection %r: %s cannot be written (%s); building it for this "
                        "process only", self.collection, self.builds.root, exc)
            if self._private is None:
                folder = Path(tempfile.mkdtemp(prefix="rag-snapshot-"))
                atexit.register(shutil.rmtree, folder, True)
                self._private = FolderBuilds(folder / self.collection)
            writer = SnapshotWriter(self.settings, store, builds=self._private)
            writer.rebuild(reason, repair=repair)
        self.rebuilds += writer.rebuilds
