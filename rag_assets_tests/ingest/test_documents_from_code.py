"""Documents from code, the plain part: validation (the pipeline-API contract's ValueErrors) and files."""

import dataclasses
import datetime
import os
import stat
import uuid

import pydantic
import pytest

from rag_assets.ingest.documents_from_code import Document, relative_path, remove, render, validate, write


def test_an_empty_list_or_a_document_without_content_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="documents are required"):
        validate([])
    with pytest.raises(ValueError, match="documents are required"):
        validate(None)
    with pytest.raises(ValueError, match="content is required"):
        validate([Document(metadata={})])
    with pytest.raises(ValueError, match="document 1: content is required"):
        validate([{"id": "a", "content": "# A"}, {"id": "b", "content": "  "}])
    with pytest.raises(ValueError, match="the same content and source as document 0, and no id"):
        validate([{"content": "# No id"}, {"content": "# No id"}])
    with pytest.raises(ValueError, match="given twice"):
        validate([{"id": "a", "content": "x"}, {"id": "a.md", "content": "y"}])


def test_ids_become_safe_file_names_under_the_managed_folder():
    assert relative_path("rules/Core Rules v3.1") == "rules/Core-Rules-v3.1.md"
    assert relative_path("../../etc/passwd") == "etc/passwd.md"  # no way out of the folder
    assert relative_path("faq.mdx") == "faq.mdx"
    with pytest.raises(ValueError):
        relative_path("///")


def test_files_carry_the_metadata_and_the_id_as_frontmatter_and_are_replaced_whole(tmp_path):
    folder = tmp_path / "docs" / "_from_code"
    docs = validate([{"id": "faq", "content": "# FAQ\n\nAnswers.", "metadata": {"doc_type": "faq", "source": "Bot"}}])
    assert write(folder, docs) == ["_from_code/faq.md"]
    text = (folder / "faq.md").read_text()
    assert text.startswith("---\ndoc_type: faq\nsource: Bot\ndocument_id: faq\n---\n\n# FAQ") and text == render(docs[0])
    write(folder, validate([{"id": "faq", "content": "# FAQ\n\nNew answers."}]))
    assert (folder / "faq.md").read_text() == "---\ndocument_id: faq\n---\n\n# FAQ\n\nNew answers.\n"
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left
    assert remove(folder, ["faq", "nope"]) == (["_from_code/faq.md"], ["nope"])


@dataclasses.dataclass
class RuleDocument:  # the rules-bot contract's input, as it writes it
    document_id: uuid.UUID
    filename: str
    content: str
    metadata: dict


class PydanticDocument(pydantic.BaseModel):
    document_id: str
    filename: str
    content: str
    metadata: dict


def test_the_seed_contracts_document_shapes_and_uuid_ids_are_accepted():
    uid = uuid.uuid4()
    shapes = [
        RuleDocument(uid, "rules-1-phases.md", "# Phases", {"source": "Core Rules v3.1"}),
        PydanticDocument(document_id=str(uid).upper(), filename="rules-1-phases.md", content="# Phases", metadata={}),
        {"document_id": uid, "filename": "rules-1-phases.md", "content": "# Phases", "metadata": {}},
        {"document_id": str(uid), "content": "# Phases"},
        Document(content="# Phases", id=uid.hex),  # a UUID's 32-digit form is that UUID
    ]
    for shape in shapes:
        (doc,) = validate([shape])
        assert doc.id == str(uid), shape
        assert relative_path(doc.id) == f"{uid}.md"
    (rule,) = validate([shapes[0]])
    assert rule.filename == "rules-1-phases.md" and rule.metadata == {"source": "Core Rules v3.1"}
    front = render(rule)
    assert f"document_id: {uid}\nfilename: rules-1-phases.md\n" in front
    # a filename alone is the id, as before
    assert validate([{"filename": "rules-1-phases.md", "content": "x"}])[0].id == "rules-1-phases.md"
    with pytest.raises(ValueError, match="given twice"):
        validate([shapes[0], {"document_id": str(uid), "content": "y"}])
    with pytest.raises(ValueError, match="document 0: an id is a string or a UUID, got float"):
        validate([{"document_id": 1.5, "content": "x"}])


def test_metadata_yaml_cannot_hold_is_a_value_error_naming_the_key():
    """Issue 36 item 10: an object() in metadata raised yaml's RepresenterError, naming nothing."""
    with pytest.raises(ValueError, match=r"document 1 \(id 'b'\): metadata 'owner' holds a value of type object"):
        validate([{"id": "a", "content": "x"}, {"id": "b", "content": "y", "metadata": {"owner": object()}}])
    with pytest.raises(ValueError, match="metadata 'blob' holds a value of type bytes"):
        validate([{"id": "a", "content": "x", "metadata": {"blob": b"\x00"}}])
    uid = uuid.uuid4()
    (doc,) = validate([{"id": "a", "content": "x", "metadata": {"ref": uid, "when": datetime.date(2025, 1, 15),
                                                                  "levels": (1, 2)}}])
    assert doc.metadata == {"ref": str(uid), "when": datetime.date(2025, 1, 15), "levels": [1, 2]}


def test_a_batch_with_an_id_too_long_for_a_file_name_writes_nothing(tmp_path):
    """Issue 36 item 7: a 300-character id raised a raw OSError, and with [ok, long] the first file
    was written but not indexed. The whole batch is checked before anything is written."""
    folder = tmp_path / "docs" / "_from_code"
    with pytest.raises(ValueError, match="document 1: id 'xxxx.*too long for a file name"):
        write(folder, validate([{"id": "ok", "content": "# Ok"}, {"id": "x" * 300, "content": "# Long"}]))
    assert not folder.exists()
    (doc,) = validate([{"id": "x" * 250, "content": "# Long enough"}])  # 253 bytes with .md: fits
    assert write(folder, [doc]) == [f"_from_code/{'x' * 250}.md"]


def test_an_id_whose_file_another_id_owns_is_refused_before_writing(tmp_path):
    folder = tmp_path / "docs" / "_from_code"
    write(folder, validate([{"id": "rules 1", "content": "# One"}]))
    with pytest.raises(ValueError, match="id 'rules-1' maps to _from_code/rules-1.md, which holds the document with id 'rules 1'"):
        write(folder, validate([{"id": "new", "content": "# New"}, {"id": "rules-1", "content": "# Other"}]))
    assert not (folder / "new.md").exists()
    assert remove(folder, ["rules-1"]) == ([], ["rules-1"])  # not its file
    assert remove(folder, ["rules 1"]) == (["_from_code/rules-1.md"], [])


def test_written_files_take_the_umask_like_any_saved_file(tmp_path):
    """Issue 36 item 10: files written by ingest() were 0600 whatever the umask."""
    folder = tmp_path / "docs" / "_from_code"
    old = os.umask(0o022)
    try:
        write(folder, validate([{"id": "a", "content": "# A"}]))
        os.umask(0o077)
        write(folder, validate([{"id": "b", "content": "# B"}]))
    finally:
        os.umask(old)
    assert stat.S_IMODE((folder / "a.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((folder / "b.md").stat().st_mode) == 0o600
