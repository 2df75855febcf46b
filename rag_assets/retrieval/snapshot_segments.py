"""A segment of the search snapshot: an immutable folder holding some documents' chunks, everything a
query reads of them, as flat arrays that are memory-mapped on open.

A segment is written once (``write_segment``: from the chunks an ingest has just written to the store,
or ``merge_segments``: the live documents of several segments) and never changed; the manifest
(snapshot_builds.py) says which segments make up the snapshot and which of their documents are
dead (replaced or removed since). Rows are chunks, a document's chunks contiguous and in
``chunk_index`` order, so a document is a row range and a section a run of rows.

Per row: the chunk id, its document, ``chunk_index``, stored token count, whether it opens a section,
a key of its normalised text, its section (doc_path + heading path) and the run of rows that section
is, its text and stored metadata (the store's, as JSON), its embedding (float32, the store's
vector), and its BM25 lengths: terms of the indexed text and of the ``title > h1 > h2`` header alone.
Per term (sorted vocabulary): the rows holding it with its frequency in the indexed text and in the
header, so BM25 (bm25.py) is scored at query time for any header weight. Per document: its path,
filterable fields, row range and a key for look-ups by path (the first 16 hex digits of its sha-256).

Damage: the segment's meta.json records each file's size and CRC-32 as written, and a segment is
checked when a process opens it (snapshot_integrity.py); the reader or writer that meets a damaged one
rebuilds the snapshot from the store (snapshot.py, snapshot_writer.py).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from rag_assets.index.chroma_store import document_fields
from rag_assets.retrieval.bm25 import Postings
from rag_assets.retrieval.snapshot_builds import SEGMENT_PREFIX
from rag_assets.retrieval.snapshot_integrity import DamagedSegment, file_checksum, verify_segment
from rag_assets.retrieval.terms import chunk_headings_text, chunk_index_text, family, section_key, text_key, tokenize
from rag_assets.retrieval.windows import opens_section, stored_tokens

SEGMENT_FORMAT = "seg-v2"  # v2: terms in the chunk's language (terms.tokenize), the languages kept
DOC_KEY_CHARS = 16
_META = "meta.json"


@dataclass(frozen=True)
class SnapshotChunk:
    chunk_id: str
    text: str
    metadata: dict  # as the store holds it (chroma_store.chunk_metadata)
    vector: np.ndarray  # float32, the store's


@dataclass(frozen=True)
class SnapshotDocument:
    doc_path: str
    chunks: Sequence[SnapshotChunk]


def doc_key(doc_path: str) -> bytes:
    return hashlib.sha256(doc_path.encode("utf-8")).hexdigest()[:DOC_KEY_CHARS].encode("ascii")


def _chunk_order(chunk: SnapshotChunk) -> int:
    try:
        return int(chunk.metadata.get("chunk_index") or 0)
    except (TypeError, ValueError):
        return 0


def _blob(values: Sequence[bytes]) -> tuple[bytes, np.ndarray]:
    """Byte strings end to end, with their offsets (n + 1)."""
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return b"".join(values), offsets


@dataclass
class SegmentColumns:
    """Everything a segment holds, in memory, as it is saved (see the module docstring)."""

    ids: np.ndarray  # S (ASCII chunk ids)
    row_doc: np.ndarray  # int32: the row's document
    chunk_index: np.ndarray  # int32
    tokens: np.ndarray  # int32: stored token count
    opens: np.ndarray  # bool: the chunk opens a section
    text_keys: np.ndarray  # S16
    row_section: np.ndarray  # int32 into sections
    body_len: np.ndarray  # int32: terms of the indexed text
    head_len: np.ndarray  # int32: terms of the header alone
    vectors: np.ndarray  # float32 (rows, dimension)
    texts: tuple[bytes, np.ndarray]
    metas: tuple[bytes, np.ndarray]  # JSON per row
    doc_paths: tuple[bytes, np.ndarray]
    fields: list[dict]  # per document
    doc_bounds: np.ndarray  # int64 (documents + 1)
    sections: list[str]
    terms: list[str]  # sorted
    post_ptr: np.ndarray  # int64 (terms + 1)
    post_rows: np.ndarray  # int32, by term then row
    post_tf: np.ndarray  # float32: in the indexed text
    post_htf: np.ndarray  # float32: in the header
    languages: list[str]  # the tokenizer families of its documents (terms.family): how a query is read


def _terms(chunk: SnapshotChunk) -> tuple[Counter, Counter]:
    """(terms of the indexed text, terms of the header alone) of a chunk, counted, in its language."""
    meta = chunk.metadata
    language = meta.get("language")
    return (Counter(tokenize(chunk_index_text(chunk.text, meta), language)),
            Counter(tokenize(chunk_headings_text(meta), language)))


def _languages(fields: Sequence[dict]) -> list[str]:
    """The tokenizer families of these documents (their filterable fields hold their language)."""
    return sorted({family(f.get("language")) for f in fields})


def _postings(terms: list[str], term: np.ndarray, row: np.ndarray, tf: np.ndarray, htf: np.ndarray):
    """(post_ptr, rows, tf, htf) sorted by (term, row); ``term`` numbers index the sorted ``terms``."""
    order = np.lexsort((row, term))
    ptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term, minlength=len(terms)), out=ptr[1:])
    return ptr, row[order].astype(np.int32), tf[order].astype(np.float32), htf[order].astype(np.float32)


def write_segment(root: Path, documents: Sequence[SnapshotDocument], dimension: int) -> str | None:
    """Write these documents' chunks as a new segment under root; its folder name (None when they hold
    no chunk: nothing to write)."""
    columns = segment_columns(documents, dimension)
    return save_segment(root, columns) if columns is not None else None


def segment_columns(documents: Sequence[SnapshotDocument], dimension: int) -> SegmentColumns | None:
    """A segment of these documents' chunks, in memory (None when they hold no chunk): every chunk
    tokenised for the BM25 postings. Saved by save_segment."""
    documents = [d for d in documents if d.chunks]
    if not documents:
        return None
    ids, rows_doc, index, tokens, opens, text_keys, row_sections = [], [], [], [], [], [], []
    texts, metas, fields = [], [], []
    sections: dict[str, int] = {}
    bounds = [0]
    body_len, head_len = [], []
    vocabulary: dict[str, int] = {}
    post_term, post_row, post_tf, post_htf = [], [], [], []
    vectors = []
    row = 0
    for d, doc in enumerate(documents):
        chunks = sorted(doc.chunks, key=_chunk_order)  # stable: equal chunk_index keep their order
        fields.append(document_fields(chunks[0].metadata))
        for chunk in chunks:
            meta = chunk.metadata
            ids.append(chunk.chunk_id.encode("ascii"))
            rows_doc.append(d)
            index.append(_chunk_order(chunk))
            tokens.append(stored_tokens(meta.get("token_count"), chunk.text))
            opens.append(opens_section(chunk.text))
            text_keys.append(text_key(chunk.text).encode("ascii"))
            row_sections.append(sections.setdefault(section_key(meta), len(sections)))
            texts.append(chunk.text.encode("utf-8"))
            metas.append(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
            body, head = _terms(chunk)
            body_len.append(sum(body.values()))
            head_len.append(sum(head.values()))
            for term in body.keys() | head.keys():
                post_term.append(vocabulary.setdefault(term, len(vocabulary)))
                post_row.append(row)
                post_tf.append(body.get(term, 0))
                post_htf.append(head.get(term, 0))
            vectors.append(np.asarray(chunk.vector, dtype=np.float32))
            row += 1
        bounds.append(row)
    terms = sorted(vocabulary)
    rank = np.empty(len(terms), dtype=np.int64)
    rank[[vocabulary[t] for t in terms]] = np.arange(len(terms))
    ptr, prow, ptf, phtf = _postings(terms, rank[np.asarray(post_term, dtype=np.int64)], np.asarray(post_row, dtype=np.int64),
                                     np.asarray(post_tf, dtype=np.float32), np.asarray(post_htf, dtype=np.float32))
    columns = SegmentColumns(
        ids=np.asarray(ids, dtype=f"S{max(len(i) for i in ids)}"), row_doc=np.asarray(rows_doc, dtype=np.int32),
        chunk_index=np.asarray(index, dtype=np.int32), tokens=np.asarray(tokens, dtype=np.int32),
        opens=np.asarray(opens, dtype=bool), text_keys=np.asarray(text_keys, dtype="S16"),
        row_section=np.asarray(row_sections, dtype=np.int32), body_len=np.asarray(body_len, dtype=np.int32),
        head_len=np.asarray(head_len, dtype=np.int32), vectors=np.vstack(vectors).astype(np.float32).reshape(-1, dimension),
        texts=_blob(texts), metas=_blob(metas), doc_paths=_blob([d.doc_path.encode("utf-8") for d in documents]),
        fields=fields, doc_bounds=np.asarray(bounds, dtype=np.int64), sections=list(sections),
        terms=terms, post_ptr=ptr, post_rows=prow, post_tf=ptf, post_htf=phtf, languages=_languages(fields))
    return columns


def merge_segments(root: Path, parts: Sequence[tuple["Segment", Sequence[int]]], dimension: int) -> str | None:
    """One segment of the given documents of several segments (each part: a segment and the numbers of
    its documents to keep, in order), from their arrays: nothing is tokenised again. Its folder name
    (None when no document is kept)."""
    parts = [(s, [int(d) for d in docs]) for s, docs in parts if len(docs)]
    if not parts:
        return None
    cols: dict[str, list] = {k: [] for k in ("ids", "row_doc", "chunk_index", "tokens", "opens", "text_keys",
                                              "row_section", "body_len", "head_len", "vectors")}
    texts, metas, paths, fields, sections = [], [], [], [], []
    section_ids: dict[str, int] = {}
    bounds = [0]
    post_terms: list[str] = []  # the terms each part's kept postings use, all parts
    post_parts = []  # per part: (local term numbers, new rows, tf, htf, its terms' new-numbering offset)
    rows_done = docs_done = 0
    for segment, docs in parts:
        spans = [segment.document_rows(d) for d in docs]
        sel = np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in spans])
        new_row = np.full(segment.rows, -1, dtype=np.int64)
        new_row[sel] = rows_done + np.arange(len(sel))
        doc_map = np.full(segment.documents, -1, dtype=np.int64)
        doc_map[docs] = docs_done + np.arange(len(docs))
        cols["ids"].append(np.asarray(segment.ids[sel]))
        cols["row_doc"].append(doc_map[np.asarray(segment.row_doc[sel], dtype=np.int64)])
        for name in ("chunk_index", "tokens", "opens", "text_keys", "body_len", "head_len", "vectors"):
            cols[name].append(np.asarray(getattr(segment, name)[sel]))
        local_sections = np.asarray(segment.row_section[sel], dtype=np.int64)
        used = np.unique(local_sections)
        remap = np.zeros(int(used.max()) + 1 if len(used) else 0, dtype=np.int64)
        for s in used:
            remap[s] = section_ids.setdefault(segment.section_key(int(s)), len(section_ids))
        cols["row_section"].append(remap[local_sections])
        for (lo, hi), doc in zip(spans, docs):
            texts.append(segment.texts.span(lo, hi))
            metas.append(segment.metas.span(lo, hi))
            paths.append(segment.doc_paths.raw(doc))
            fields.append(segment.fields(doc))
            bounds.append(bounds[-1] + hi - lo)
        term_of = np.repeat(np.arange(len(segment.terms), dtype=np.int64), np.diff(np.asarray(segment.post_ptr)))
        rows = new_row[np.asarray(segment.post_rows, dtype=np.int64)]
        keep = rows >= 0
        local_terms = term_of[keep]
        used_terms = np.unique(local_terms)
        names = [segment.terms[int(t)] for t in used_terms]
        post_parts.append((local_terms, used_terms, len(post_terms), rows[keep], np.asarray(segment.post_tf)[keep],
                           np.asarray(segment.post_htf)[keep]))
        post_terms.extend(names)
        rows_done += len(sel)
        docs_done += len(docs)
    terms = sorted(set(post_terms))
    number = {t: i for i, t in enumerate(terms)}
    global_of = np.asarray([number[t] for t in post_terms], dtype=np.int64)
    term_parts, row_parts, tf_parts, htf_parts = [], [], [], []
    for local_terms, used_terms, offset, rows, tf, htf in post_parts:
        position = np.searchsorted(used_terms, local_terms)  # local term -> its place among the part's used terms
        term_parts.append(global_of[offset + position])
        row_parts.append(rows)
        tf_parts.append(tf)
        htf_parts.append(htf)
    ptr, prow, ptf, phtf = _postings(terms, np.concatenate(term_parts), np.concatenate(row_parts),
                                     np.concatenate(tf_parts), np.concatenate(htf_parts))
    width = max(a.dtype.itemsize for a in cols["ids"])
    columns = SegmentColumns(
        ids=np.concatenate([a.astype(f"S{width}") for a in cols["ids"]]),
        row_doc=np.concatenate(cols["row_doc"]).astype(np.int32),
        chunk_index=np.concatenate(cols["chunk_index"]).astype(np.int32),
        tokens=np.concatenate(cols["tokens"]).astype(np.int32), opens=np.concatenate(cols["opens"]).astype(bool),
        text_keys=np.concatenate(cols["text_keys"]).astype("S16"),
        row_section=np.concatenate(cols["row_section"]).astype(np.int32),
        body_len=np.concatenate(cols["body_len"]).astype(np.int32),
        head_len=np.concatenate(cols["head_len"]).astype(np.int32),
        vectors=np.vstack(cols["vectors"]).astype(np.float32).reshape(-1, dimension),
        texts=_joined(texts), metas=_joined(metas), doc_paths=_blob(paths), fields=fields,
        doc_bounds=np.asarray(bounds, dtype=np.int64), sections=list(section_ids),
        terms=terms, post_ptr=ptr, post_rows=prow, post_tf=ptf, post_htf=phtf, languages=_languages(fields))
    return save_segment(root, columns)


def _joined(spans: list[tuple[bytes, np.ndarray]]) -> tuple[bytes, np.ndarray]:
    """Blob spans (each: its bytes and the lengths of its strings) end to end."""
    lengths = np.concatenate([s[1] for s in spans]) if spans else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return b"".join(s[0] for s in spans), offsets


def save_segment(root: Path, c: SegmentColumns) -> str:
    """Write the columns as a new segment folder under root (a temporary name, renamed when complete)."""
    name = f"{SEGMENT_PREFIX}{uuid.uuid4().hex}"
    tmp = root / f".tmp-{name}"
    tmp.mkdir(parents=True)
    try:
        arrays = {"ids": c.ids, "row_doc": c.row_doc, "chunk_index": c.chunk_index, "tokens": c.tokens,
                  "opens": c.opens, "text_keys": c.text_keys, "row_section": c.row_section, "body_len": c.body_len,
                  "head_len": c.head_len, "vectors": c.vectors, "doc_bounds": c.doc_bounds, "post_ptr": c.post_ptr,
                  "post_rows": c.post_rows, "post_tf": c.post_tf, "post_htf": c.post_htf}
        order = np.argsort(c.ids, kind="stable")
        arrays.update(ids_sorted=c.ids[order], ids_sorted_rows=order.astype(np.int32))
        # sections as runs of rows: a run ends where the document or the heading path changes or a chunk
        # opens a section (windows.SectionRuns' rule; rows are in document and chunk_index order already)
        new = np.ones(len(c.ids), dtype=bool)
        new[1:] = (c.row_doc[1:] != c.row_doc[:-1]) | (c.row_section[1:] != c.row_section[:-1]) | c.opens[1:]
        arrays.update(run_of=(np.cumsum(new) - 1).astype(np.int32),
                      run_bounds=np.append(np.flatnonzero(new), len(c.ids)).astype(np.int64))
        paths = _split(c.doc_paths)
        keys = np.asarray([doc_key(p.decode("utf-8")) for p in paths], dtype=f"S{DOC_KEY_CHARS}")
        key_order = np.argsort(keys, kind="stable")
        arrays.update(doc_keys_sorted=keys[key_order], doc_keys_sorted_docs=key_order.astype(np.int32))
        for key, value in arrays.items():
            np.save(tmp / f"{key}.npy", value)
        for key, (data, offsets) in (("texts", c.texts), ("metas", c.metas), ("doc_paths", c.doc_paths),
                                     ("terms", _blob([t.encode("utf-8") for t in c.terms]))):
            (tmp / f"{key}.bin").write_bytes(data)
            np.save(tmp / f"{key}_offsets.npy", offsets)
        (tmp / "doc_fields.json").write_text(json.dumps(c.fields, ensure_ascii=False), encoding="utf-8")
        (tmp / "sections.json").write_text(json.dumps(c.sections, ensure_ascii=False), encoding="utf-8")
        files = {path.name: [path.stat().st_size, file_checksum(path)] for path in sorted(tmp.iterdir())}
        (tmp / _META).write_text(json.dumps({"format": SEGMENT_FORMAT, "rows": len(c.ids), "documents": len(c.fields),
                                             "dimension": int(c.vectors.shape[1]), "languages": c.languages,
                                             "files": files}),
                                 encoding="utf-8")
        os.replace(tmp, root / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return name


def _split(blob: tuple[bytes, np.ndarray]) -> list[bytes]:
    data, offsets = blob
    return [data[int(offsets[i]):int(offsets[i + 1])] for i in range(len(offsets) - 1)]


class _Strings:
    """A memory-mapped blob of byte strings with their offsets."""

    def __init__(self, folder: Path, name: str):
        self.offsets = np.asarray(np.load(folder / f"{name}_offsets.npy", mmap_mode="r"))  # see Segment
        path = folder / f"{name}.bin"
        size = path.stat().st_size
        if size:
            with open(path, "rb") as fh:
                self.data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            self.data = b""

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def raw(self, i: int) -> bytes:
        return self.data[int(self.offsets[i]):int(self.offsets[i + 1])]

    def span(self, lo: int, hi: int) -> tuple[bytes, np.ndarray]:
        """Strings lo..hi-1: their bytes and their lengths."""
        offsets = np.asarray(self.offsets[lo:hi + 1], dtype=np.int64)
        return self.data[int(offsets[0]):int(offsets[-1])], np.diff(offsets)

    def __getitem__(self, i: int) -> str:
        return self.raw(i).decode("utf-8")


class Segment:
    """A written segment, opened: its arrays memory-mapped (processes share their pages), its JSON
    parts read on first use. Immutable, so one object serves every view that holds the segment."""

    def __init__(self, folder: Path):
        """Opens and checks the segment: FileNotFoundError when its folder is gone (collected),
        DamagedSegment when a file is missing or not as written."""
        self.folder = Path(folder)
        self.name = self.folder.name
        try:
            meta = json.loads((self.folder / _META).read_text(encoding="utf-8"))
        except FileNotFoundError:
            if self.folder.is_dir():
                raise DamagedSegment(f"{self.folder / _META}: missing") from None
            raise
        except (ValueError, UnicodeDecodeError) as exc:
            raise DamagedSegment(f"{self.folder / _META}: not the JSON written ({exc})") from None
        if meta.get("format") != SEGMENT_FORMAT:
            raise ValueError(f"{self.folder}: segment format {meta.get('format')!r}, expected {SEGMENT_FORMAT}")
        verify_segment(self.folder, meta)
        self.rows = int(meta["rows"])
        self.dimension = int(meta["dimension"])
        self.languages = tuple(meta.get("languages") or ("en",))
        # plain ndarrays over the mapped files: np.memmap's Python-level __getitem__ cost a query ~1,000
        # calls (each row a ranking or a context window reads); the pages stay mapped, not read
        load = lambda name: np.asarray(np.load(self.folder / f"{name}.npy", mmap_mode="r"))  # noqa: E731
        self.ids, self.ids_sorted, self.ids_sorted_rows = load("ids"), load("ids_sorted"), load("ids_sorted_rows")
        self.row_doc, self.chunk_index, self.tokens = load("row_doc"), load("chunk_index"), load("tokens")
        self.opens, self.text_keys, self.row_section = load("opens"), load("text_keys"), load("row_section")
        self.body_len, self.head_len, self.vectors = load("body_len"), load("head_len"), load("vectors")
        self.run_of, self.run_bounds = load("run_of"), load("run_bounds")
        self.doc_bounds = load("doc_bounds")
        self.doc_keys_sorted, self.doc_keys_sorted_docs = load("doc_keys_sorted"), load("doc_keys_sorted_docs")
        self.post_ptr, self.post_rows = load("post_ptr"), load("post_rows")
        self.post_tf, self.post_htf = load("post_tf"), load("post_htf")
        self.texts, self.metas = _Strings(self.folder, "texts"), _Strings(self.folder, "metas")
        self.doc_paths, self.terms = _Strings(self.folder, "doc_paths"), _Strings(self.folder, "terms")
        self._sections: list[str] | None = None
        self._fields: list[dict] | None = None
        self._term_ids: dict[str, int] = {}

    # -- documents ------------------------------------------------------------------------------
    @property
    def documents(self) -> int:
        return len(self.doc_bounds) - 1

    def doc_path(self, doc: int) -> str:
        return self.doc_paths[doc]

    def fields(self, doc: int) -> dict:
        if self._fields is None:
            self._fields = json.loads((self.folder / "doc_fields.json").read_text(encoding="utf-8"))
        return self._fields[doc]

    def find_document(self, doc_path: str) -> int | None:
        """The document's number in this segment, None when it holds no such document."""
        key = doc_key(doc_path)
        lo = int(np.searchsorted(self.doc_keys_sorted, key, side="left"))
        hi = int(np.searchsorted(self.doc_keys_sorted, key, side="right"))
        for i in range(lo, hi):  # the same key for two paths is possible in principle: compare the paths
            doc = int(self.doc_keys_sorted_docs[i])
            if self.doc_paths[doc] == doc_path:
                return doc
        return None

    def document_rows(self, doc: int) -> tuple[int, int]:
        return int(self.doc_bounds[doc]), int(self.doc_bounds[doc + 1])

    # -- rows ------------------------------------------------------------------------------------
    def chunk_id(self, row: int) -> str:
        return self.ids[row].decode("ascii")

    def find_chunk(self, chunk_id: str) -> int | None:
        key = chunk_id.encode("ascii", "replace")
        i = int(np.searchsorted(self.ids_sorted, key))
        if i < self.rows and self.ids_sorted[i] == key:
            return int(self.ids_sorted_rows[i])
        return None

    def section(self, row: int) -> str:
        return self.section_key(int(self.row_section[row]))

    def section_key(self, number: int) -> str:
        if self._sections is None:
            self._sections = json.loads((self.folder / "sections.json").read_text(encoding="utf-8"))
        return self._sections[number]

    def text(self, row: int) -> str:
        return self.texts[row]

    def metadata(self, row: int) -> dict:
        return json.loads(self.metas.raw(row))

    def section_span(self, row: int) -> tuple[int, int]:
        """[start, end) of the rows of the row's section."""
        run = int(self.run_of[row])
        return int(self.run_bounds[run]), int(self.run_bounds[run + 1])

    # -- terms -----------------------------------------------------------------------------------
    def term_id(self, term: str) -> int | None:
        """The term's number in the sorted vocabulary (bisection over the mapped strings; remembered)."""
        found = self._term_ids.get(term, -2)
        if found != -2:
            return None if found < 0 else found
        key = term.encode("utf-8")
        lo, hi = 0, len(self.terms)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.terms.raw(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        found = lo if lo < len(self.terms) and self.terms.raw(lo) == key else -1
        if len(self._term_ids) < 100_000:
            self._term_ids[term] = found
        return None if found < 0 else found

    def postings(self, term: str, header_repeats: int | None) -> Postings | None:
        """Rows holding the term with its frequency: in the indexed text plus ``header_repeats`` times
        in the header (the body index), or, for ``None``, in the header alone (the heading index)."""
        tid = self.term_id(term)
        if tid is None:
            return None
        lo, hi = int(self.post_ptr[tid]), int(self.post_ptr[tid + 1])
        rows = np.asarray(self.post_rows[lo:hi], dtype=np.int64)
        if header_repeats is None:
            tf = np.asarray(self.post_htf[lo:hi])
        else:
            tf = np.asarray(self.post_tf[lo:hi]) + np.float32(header_repeats) * np.asarray(self.post_htf[lo:hi])
        keep = tf > 0
        return Postings(rows[keep], tf[keep].astype(np.float32))
