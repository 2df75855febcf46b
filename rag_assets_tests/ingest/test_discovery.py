import dataclasses
import json
import os
from pathlib import Path

import pytest

from rag_assets.ingest.discovery import discover, partition_key_for


def write(root: Path, rel: str, text: str = "# T\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_finds_markdown_with_relative_paths_module_and_chapter(tmp_path):
    write(tmp_path, "intro.md")
    write(tmp_path, "module-1/chapter-a/page.mdx")
    write(tmp_path, "module-1/UPPER.MD")
    write(tmp_path, "notes.txt")
    catalog = discover(tmp_path)
    by_path = {d.doc_path: d for d in catalog.documents}
    assert sorted(by_path) == ["intro.md", "module-1/UPPER.MD", "module-1/chapter-a/page.mdx"]
    page = by_path["module-1/chapter-a/page.mdx"]
    assert (page.module, page.chapter) == ("module-1", "chapter-a")
    assert by_path["intro.md"].module is None
    assert page.size_bytes == 4 and len(page.content_hash) == 64
    assert catalog.errors == []


def test_hidden_files_and_folders_are_skipped(tmp_path):
    write(tmp_path, ".hidden/a.md")
    write(tmp_path, ".draft.md")
    write(tmp_path, ".notes.MDX")
    write(tmp_path, "ok.md")
    catalog = discover(tmp_path)
    assert [d.doc_path for d in catalog.documents] == ["ok.md"]
    assert catalog.errors == []  # hidden on purpose: nothing to report


def test_names_that_are_only_dots_are_reported_not_dropped(tmp_path):
    for name in ("..md", ".md", "...md", "..MDX", "only-dots/.../page.md", "ok.md"):
        write(tmp_path, name)
    write(tmp_path, "..txt")  # not markdown: not ours to report
    catalog = discover(tmp_path)
    assert [d.doc_path for d in catalog.documents] == ["ok.md"]
    reported = {e.path: e.reason for e in catalog.errors}
    assert sorted(reported) == ["...md", "..MDX", "..md", ".md", "only-dots/..."]
    assert "nothing before its extension" in reported["..md"] and "rename it" in reported["..md"]
    assert "folder name is only dots" in reported["only-dots/..."]


def test_a_name_that_is_not_utf8_is_reported_with_a_printable_path(tmp_path):
    root = os.fsencode(tmp_path)
    (tmp_path / "sub").mkdir()
    for raw in (b"caf\xe9.md", b"sub/na\xefve.md"):
        with open(os.path.join(root, raw), "w") as fh:
            fh.write("# Latin-1 name\n")
    os.mkdir(os.path.join(root, b"dir-\xff"))
    with open(os.path.join(root, b"dir-\xff", b"inside.md"), "w") as fh:
        fh.write("# inside\n")
    write(tmp_path, "ok.md")
    catalog = discover(tmp_path)
    assert [d.doc_path for d in catalog.documents] == ["ok.md"]
    reported = {e.path: e.reason for e in catalog.errors}
    assert sorted(reported) == ["caf\\xe9.md", "dir-\\xff", "sub/na\\xefve.md"]
    assert all("not valid UTF-8" in reason for reason in reported.values())
    json.dumps(dataclasses.asdict(catalog), ensure_ascii=False).encode("utf-8")  # the catalog record can be written


def test_content_hash_follows_content_not_mtime(tmp_path):
    path = write(tmp_path, "a.md", "same")
    first = discover(tmp_path).documents[0]
    os.utime(path, (1, 1))
    assert discover(tmp_path).documents[0].content_hash == first.content_hash
    path.write_text("changed")
    assert discover(tmp_path).documents[0].content_hash != first.content_hash


def test_symlink_outside_docs_is_refused_and_inside_is_followed(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    write(outside, "secret.md", "# secret\n")
    write(docs, "real.md")
    (docs / "leak.md").symlink_to(outside / "secret.md")
    (docs / "alias.md").symlink_to(docs / "real.md")
    (docs / "linkdir").symlink_to(outside, target_is_directory=True)
    catalog = discover(docs)
    assert [d.doc_path for d in catalog.documents] == ["alias.md", "real.md"]
    refused = {e.path: e.reason for e in catalog.errors}
    assert "outside the docs folder" in refused["leak.md"]
    assert "outside the docs folder" in refused["linkdir"]


def test_symlink_loop_does_not_hang(tmp_path):
    write(tmp_path, "sub/a.md")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path / "sub", target_is_directory=True)
    (tmp_path / "self.md").symlink_to(tmp_path / "self.md")
    catalog = discover(tmp_path)
    assert [d.doc_path for d in catalog.documents] == ["sub/a.md"]
    assert any(e.path == "self.md" for e in catalog.errors)


def test_size_limit_reports_instead_of_reading(tmp_path):
    write(tmp_path, "big.md", "x" * 2000)
    write(tmp_path, "small.md", "x")
    catalog = discover(tmp_path, max_file_bytes=1000)
    assert [d.doc_path for d in catalog.documents] == ["small.md"]
    assert "RAG_MAX_FILE_BYTES" in catalog.errors[0].reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file regardless of permissions")
def test_unreadable_file_is_reported(tmp_path):
    path = write(tmp_path, "locked.md")
    path.chmod(0)
    catalog = discover(tmp_path)
    assert catalog.documents == [] and "cannot read" in catalog.errors[0].reason


def test_missing_docs_dir_names_the_setting(tmp_path):
    with pytest.raises(FileNotFoundError, match="RAG_DOCS_DIR"):
        discover(tmp_path / "nope")


def test_partition_keys_are_paths_or_deterministic_safe_forms():
    assert partition_key_for("guides/intro.md") == "guides/intro.md"
    mapped = partition_key_for("notes/wait...what.md")
    assert "..." not in mapped and mapped == partition_key_for("notes/wait...what.md")
    assert mapped != partition_key_for("notes/wait_what.md")
    assert "," not in partition_key_for("a,b.md")
