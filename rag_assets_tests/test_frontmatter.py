import pytest

from rag_assets.errors import DocumentError
from rag_assets.frontmatter import decode, parse_document, read_document
from rag_assets.models import DocumentRef


def ref(doc_path="guide/page.md", path="/nonexistent", module="guide"):
    return DocumentRef(doc_path, doc_path, path, module, None, 0, 0.0, "h" * 64)


def test_frontmatter_fields_and_other_keys_kept():
    text = "---\ntitle: Hello\ndescription: A page\ntags: [a, b]\nsource: Core Rules\nlast_update_date: 2024-05-01\n---\n# Heading\nBody\n"
    doc = parse_document(text, ref())
    assert (doc.title, doc.description, doc.tags) == ("Hello", "A page", ["a", "b"])
    assert doc.metadata["source"] == "Core Rules"
    assert doc.metadata["last_update_date"] == "2024-05-01"
    assert doc.metadata["module"] == "guide"
    assert doc.body == "# Heading\nBody\n" and doc.body_start_line == 8


def test_title_falls_back_to_first_h1_then_file_name():
    assert parse_document("intro\n```\n# not a title\n```\n# Real Title\n", ref()).title == "Real Title"
    assert parse_document("no headings here\n", ref("x/my-page.md")).title == "my-page"
    assert parse_document("---\ntags: x, y\n---\n## Only H2\n", ref("p.md")).title == "p"


def test_comma_separated_tags():
    assert parse_document("---\ntags: a, b ,c\n---\n", ref()).tags == ["a", "b", "c"]


def test_invalid_yaml_names_file_line_and_reason():
    with pytest.raises(DocumentError) as info:
        parse_document("---\ntitle: ok\nbad: [unclosed\nmore: x\n---\nbody\n", ref("bad.md"))
    err = info.value
    assert err.doc_path == "bad.md" and err.line is not None and err.line >= 3
    assert str(err).startswith("bad.md:") and "invalid YAML" in str(err)


def test_unclosed_frontmatter_and_non_mapping_are_errors():
    with pytest.raises(DocumentError, match="never closed"):
        parse_document("---\ntitle: x\n", ref())
    with pytest.raises(DocumentError, match="mapping"):
        parse_document("---\n- a\n- b\n---\n", ref())


def test_yaml_is_loaded_safely():
    with pytest.raises(DocumentError):
        parse_document("---\nx: !!python/object/apply:os.system ['echo pwned']\n---\n", ref())


def test_frontmatter_only_document():
    doc = parse_document("---\ntitle: Only\n---\n", ref())
    assert doc.title == "Only" and doc.body == ""


def test_decoding_policy():
    assert decode("\ufeff# Hi\r\nthere".encode("utf-8"), "a.md") == "# Hi\nthere"
    with pytest.raises(DocumentError, match="UTF-8"):
        decode("caf\xe9".encode("latin-1"), "latin.md")
    with pytest.raises(DocumentError, match="binary"):
        decode(b"\x89PNG\r\n\x1a\n\x00\x00", "image.md")


def test_vanished_file(tmp_path):
    with pytest.raises(DocumentError, match="vanished"):
        read_document(ref(path=str(tmp_path / "gone.md")))
