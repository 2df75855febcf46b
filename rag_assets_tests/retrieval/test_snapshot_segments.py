"""A segment of the search snapshot: what is written is what a query reads back, and a merge of
segments' live documents holds exactly what writing those documents afresh would (nothing tokenised
again)."""

import numpy as np
import pytest

from rag_assets.retrieval.snapshot_segments import (Segment, SnapshotChunk, SnapshotDocument, merge_segments,
                                                    write_segment)
from rag_assets.retrieval.terms import tokenize
from rag_assets.retrieval.windows import SectionRuns

DIM = 8


def chunk(doc_path: str, index: int, text: str, breadcrumb: str, **fields) -> SnapshotChunk:
    meta = {"doc_path": doc_path, "title": doc_path.rsplit("/", 1)[-1].removesuffix(".md").title(),
            "section": breadcrumb.rsplit(" > ", 1)[-1], "heading_breadcrumb": breadcrumb, "chunk_index": index,
            "token_count": len(text.split()), "content_hash": f"h{doc_path}{index}", "embedding_model": "test",
            "oversized": False, **fields}
    vector = np.random.default_rng(abs(hash((doc_path, index))) % 2**32).standard_normal(DIM).astype(np.float32)
    return SnapshotChunk(f"{doc_path.replace('/', '_')}-{index:04d}", text, meta, vector / np.linalg.norm(vector))


def documents() -> list[SnapshotDocument]:
    return [
        SnapshotDocument("guide/tapirs.md", [
            chunk("guide/tapirs.md", 0, "# Tapirs\n\nTapirs feed at dusk.", "Tapirs", module="guide", tags="zoo,animals"),
            chunk("guide/tapirs.md", 1, "They swim well and feed on fruit.", "Tapirs", module="guide", tags="zoo,animals"),
            chunk("guide/tapirs.md", 2, "## Habitat\n\nForests of South America.", "Tapirs > Habitat", module="guide",
                  tags="zoo,animals"),
        ]),
        SnapshotDocument("rate-limits.md", [
            chunk("rate-limits.md", 1, "Retry after the Retry-After header says.", "Rate limits > Retries"),
            chunk("rate-limits.md", 0, "# Rate limits\n\nHTTP 429 when over the limit.", "Rate limits"),
        ]),
        SnapshotDocument("empty.md", []),
        SnapshotDocument("ops/valves.md", [
            chunk("ops/valves.md", 0, "# Valves\n\nGrease the ZK-4411 valve every quarter.", "Valves", level=2),
        ]),
    ]


def test_what_is_written_is_read_back(tmp_path):
    docs = documents()
    segment = Segment(tmp_path / write_segment(tmp_path, docs, DIM))
    written = [c for d in docs for c in sorted(d.chunks, key=lambda c: c.metadata["chunk_index"])]
    assert segment.rows == len(written) == 6 and segment.documents == 3  # the empty document is not a document
    for row, c in enumerate(written):  # a document's chunks in chunk_index order
        assert segment.chunk_id(row) == c.chunk_id and segment.text(row) == c.text
        assert segment.metadata(row) == c.metadata
        assert np.array_equal(segment.vectors[row], c.vector)
        assert segment.find_chunk(c.chunk_id) == row
        assert segment.section(row) == f"{c.metadata['doc_path']}#{c.metadata['heading_breadcrumb']}"
    assert segment.find_chunk("nope-0000") is None
    doc = segment.find_document("rate-limits.md")
    assert segment.doc_path(doc) == "rate-limits.md" and segment.document_rows(doc) == (3, 5)
    assert segment.find_document("empty.md") is None and segment.find_document("missing.md") is None
    assert segment.fields(segment.find_document("ops/valves.md"))["level"] == 2
    assert "chunk_index" not in segment.fields(0) and segment.fields(0)["tags"] == "zoo,animals"


def test_sections_are_the_runs_the_context_windows_read(tmp_path):
    segment = Segment(tmp_path / write_segment(tmp_path, documents(), DIM))
    runs = SectionRuns.build([segment.doc_path(int(d)) for d in segment.row_doc], [segment.section(r) for r in
                             range(segment.rows)], list(segment.chunk_index), list(segment.opens))
    for row in range(segment.rows):
        rows, at = runs.section_of(row)
        lo, hi = segment.section_span(row)
        assert rows.tolist() == list(range(lo, hi)) and at == row - lo


def test_postings_count_the_indexed_text_and_the_header(tmp_path):
    segment = Segment(tmp_path / write_segment(tmp_path, documents(), DIM))
    term = tokenize("tapirs")[0]
    body, head = segment.postings(term, 0), segment.postings(term, None)
    assert body.rows.tolist() == [0, 1, 2] == head.rows.tolist()  # the title names every chunk
    assert body.tf[0] == 3  # "Tapirs" as title, as H1 line in the text, and in "Tapirs feed"
    assert np.array_equal(segment.postings(term, 3).tf, body.tf + 3 * head.tf)
    assert segment.postings(tokenize("grease")[0], None).rows.tolist() == []  # not in any header
    assert segment.postings("zzz-no-such-term", 3) is None
    assert segment.head_len[0] == len(tokenize("Tapirs"))


def test_a_merge_holds_what_writing_its_documents_afresh_would(tmp_path):
    docs = documents()
    first = Segment(tmp_path / write_segment(tmp_path, docs[:2], DIM))
    second = Segment(tmp_path / write_segment(tmp_path, docs[3:], DIM))
    merged = Segment(tmp_path / merge_segments(tmp_path, [(first, [1]), (second, [0])], DIM))
    fresh = Segment(tmp_path / write_segment(tmp_path, [docs[1], docs[3]], DIM))
    assert merged.rows == fresh.rows == 3 and merged.documents == 2
    for name in ("ids", "ids_sorted", "ids_sorted_rows", "row_doc", "chunk_index", "tokens", "opens", "text_keys",
                 "body_len", "head_len", "vectors", "run_of", "run_bounds", "doc_bounds", "doc_keys_sorted",
                 "post_ptr", "post_rows", "post_tf", "post_htf"):
        assert np.array_equal(getattr(merged, name), getattr(fresh, name)), name
    assert [merged.terms[i] for i in range(len(merged.terms))] == [fresh.terms[i] for i in range(len(fresh.terms))]
    for row in range(fresh.rows):
        assert (merged.text(row), merged.metadata(row), merged.section(row)) == (fresh.text(row), fresh.metadata(row),
                                                                                 fresh.section(row))
    assert [merged.doc_path(d) for d in range(2)] == ["rate-limits.md", "ops/valves.md"]
    assert merged.fields(1) == fresh.fields(1)


def test_nothing_to_write(tmp_path):
    assert write_segment(tmp_path, [SnapshotDocument("empty.md", [])], DIM) is None
    first = Segment(tmp_path / write_segment(tmp_path, documents()[:1], DIM))
    assert merge_segments(tmp_path, [(first, [])], DIM) is None
    with pytest.raises(ValueError, match="format"):
        (tmp_path / first.name / "meta.json").write_text('{"format": "seg-v0", "rows": 3, "dimension": 8}')
        Segment(tmp_path / first.name)
