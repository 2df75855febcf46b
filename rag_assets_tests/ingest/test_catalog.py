"""The deletion guard: an empty or wrong folder must not look like "delete everything"."""

import pytest

from rag_assets.ingest.catalog import Vanished, deletion_refusal, vanished_documents
from rag_assets.models import Catalog, DiscoveryError
from rag_assets.index.stage_store import INDEXED, StageStore
from rag_assets_tests.index.test_stage_store import ref


def catalog(n: int) -> Catalog:
    return Catalog("/docs", [ref(f"d{i}.md") for i in range(n)], [])


@pytest.mark.parametrize(
    "gone, indexed, found, refused",
    [
        (3, 3, 0, True),  # everything: always refused
        (1, 1, 0, True),
        (11, 21, 10, True),  # more than half of more than 20
        (10, 21, 11, False),  # half: allowed
        (15, 20, 5, False),  # 20 or fewer indexed: only "all of them" is refused
        (0, 50, 50, False),
    ],
)
def test_refusal_rule(gone, indexed, found, refused):
    vanished = Vanished([f"x{i}.md" for i in range(gone)], indexed)
    reason = deletion_refusal(catalog(found), vanished, max_share=0.5, min_documents=20, allow=False)
    assert (reason is not None) == refused
    if refused:
        assert f"refusing to remove {gone} of {indexed} indexed documents" in reason and "/docs" in reason
        assert "--allow-mass-delete" in reason and "RAG_ALLOW_MASS_DELETE=1" in reason
    assert deletion_refusal(catalog(found), vanished, max_share=0.5, min_documents=20, allow=True) is None


def test_vanished_means_known_and_gone_but_not_merely_unreadable(tmp_path):
    stages = StageStore(tmp_path)
    for name in ("a.md", "b.md", "big.md"):
        stages.write(INDEXED, name, "h", {"chunk_ids": []}, "fp")
    now = Catalog("/docs", [ref("a.md")], [DiscoveryError("big.md", "over the size limit")])
    assert vanished_documents(now, stages) == Vanished(["b.md"], 3, 1)


def test_the_counts_add_up_when_a_vanished_document_was_never_indexed(tmp_path):
    stages = StageStore(tmp_path)
    for name in ("a.md", "b.md"):
        stages.write(INDEXED, name, "h", {"chunk_ids": []}, "fp")
    stages.write_catalog(Catalog("/docs", [ref("a.md"), ref("b.md"), ref("failed.md")], []))  # failed.md: no index record
    vanished = vanished_documents(Catalog("/docs", [], []), stages)
    assert sorted(vanished.doc_paths) == ["a.md", "b.md", "failed.md"]  # all removed when allowed
    reason = deletion_refusal(Catalog("/docs", [], []), vanished, max_share=0.5, min_documents=20, allow=False)
    assert "refusing to remove 2 of 2 indexed documents" in reason  # never "3 of 2"


def test_snippet_files_that_stop_being_pages_are_removed_without_tripping_the_guard(tmp_path):
    # an index made before snippets were recognised holds them as pages; they are still on disk
    stages = StageStore(tmp_path)
    for name in ("page.mdx", "snippets/a.mdx", "snippets/b.mdx"):
        stages.write(INDEXED, name, "h", {"chunk_ids": []}, "fp")
    now = Catalog("/docs", [ref("page.mdx")], [], excluded=["snippets/a.mdx", "snippets/b.mdx"])
    vanished = vanished_documents(now, stages)
    assert vanished.doc_paths == ["snippets/a.mdx", "snippets/b.mdx"] and vanished.gone == 0
    assert deletion_refusal(now, vanished, max_share=0.5, min_documents=0, allow=False) is None


def test_a_folder_whose_pages_an_ignore_file_left_out_is_not_called_empty():
    left_out = {"guide/a.md": "gitignore", "guide/b.md": "gitignore", "es/a.md": "translation"}
    now = Catalog("/docs", [], [], left_out=left_out)
    reason = deletion_refusal(now, Vanished(["guide/a.md", "guide/b.md"], 2), max_share=0.5, min_documents=20, allow=False)
    assert "now holds 3 markdown files, all 3 of them left out of the corpus's scope (2 gitignore, 1 translation" in reason
    assert "is it mounted" not in reason
    reason = deletion_refusal(Catalog("/docs", [], []), Vanished(["a.md"], 1), max_share=0.5, min_documents=20, allow=False)
    assert "now holds 0 markdown files (is it the right folder, and is it mounted?)" in reason
