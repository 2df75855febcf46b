from rag_assets.ingest.ids import assign_ids, chunk_id, content_hash, doc_key, doc_key_of
from rag_assets.models import Chunk


def make(doc, index, text):
    return Chunk(doc_path=doc, chunk_index=index, text=text, section="", heading_breadcrumb=[], token_count=1,
                 block_types=["prose"], index_text=f"T\n\n{text}")


def test_ids_are_deterministic_and_content_addressed():
    a = assign_ids([make("d.md", 0, "one"), make("d.md", 1, "two")])
    b = assign_ids([make("d.md", 0, "one"), make("d.md", 1, "two")])
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    assert a[0].content_hash == content_hash("T\n\none")
    # inserting a chunk before keeps the ids of the unchanged ones
    c = assign_ids([make("d.md", 0, "new"), make("d.md", 1, "one"), make("d.md", 2, "two")])
    assert {x.chunk_id for x in a} <= {x.chunk_id for x in c}


def test_same_text_twice_in_a_document_gets_distinct_ids():
    chunks = assign_ids([make("d.md", 0, "same"), make("d.md", 1, "same")])
    assert chunks[0].content_hash == chunks[1].content_hash
    assert chunks[0].chunk_id != chunks[1].chunk_id


def test_same_text_in_two_documents_gets_distinct_ids_but_one_hash():
    x, y = assign_ids([make("a.md", 0, "t")])[0], assign_ids([make("b.md", 0, "t")])[0]
    assert x.content_hash == y.content_hash and x.chunk_id != y.chunk_id
    assert len(chunk_id("a.md", x.content_hash)) == 37


def test_a_chunk_id_names_its_document():
    x = assign_ids([make("guide/a.md", 0, "t")])[0]
    assert doc_key_of(x.chunk_id) == doc_key("guide/a.md") != doc_key("guide/b.md")
    assert doc_key_of("0123456789abcdef0123456789abcdef") is None  # the older scheme


def test_distinct_chunks_keeps_the_first_copy_of_each_text_and_renumbers():
    from rag_assets.ingest.ids import distinct_chunks
    chunks = distinct_chunks(assign_ids([make("d.md", 0, "a"), make("d.md", 1, "same"), make("d.md", 2, "same"),
                                         make("d.md", 3, "b"), make("d.md", 4, "same")]))
    assert [c.text for c in chunks] == ["a", "same", "b"]
    assert [c.chunk_index for c in chunks] == [0, 1, 2]
    assert len({c.chunk_id for c in chunks}) == 3
