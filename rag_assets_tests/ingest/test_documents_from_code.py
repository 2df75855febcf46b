"""Documents from code, the plain part: validation (the pipeline-API contract's ValueErrors) and files."""

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
    with pytest.raises(ValueError, match="an id is required"):
        validate([{"content": "# No id"}])
    with pytest.raises(ValueError, match="given twice"):
        validate([{"id": "a", "content": "x"}, {"id": "a.md", "content": "y"}])


def test_ids_become_safe_file_names_under_the_managed_folder():
    assert relative_path("rules/Core Rules v3.1") == "rules/Core-Rules-v3.1.md"
    assert relative_path("../../etc/passwd") == "etc/passwd.md"  # no way out of the folder
    assert relative_path("faq.mdx") == "faq.mdx"
    with pytest.raises(ValueError):
        relative_path("///")


def test_files_carry_the_metadata_as_frontmatter_and_are_replaced_whole(tmp_path):
    folder = tmp_path / "docs" / "_from_code"
    docs = validate([{"id": "faq", "content": "# FAQ\n\nAnswers.", "metadata": {"doc_type": "faq", "source": "Bot"}}])
    assert write(folder, docs) == ["_from_code/faq.md"]
    text = (folder / "faq.md").read_text()
    assert text.startswith("---\ndoc_type: faq\nsource: Bot\n---\n\n# FAQ") and text == render(docs[0])
    write(folder, validate([{"id": "faq", "content": "# FAQ\n\nNew answers."}]))
    assert (folder / "faq.md").read_text() == "# FAQ\n\nNew answers.\n"
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left
    assert remove(folder, ["faq", "nope"]) == (["_from_code/faq.md"], ["nope"])
