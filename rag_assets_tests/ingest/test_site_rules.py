"""Path rules of a docs folder: ignore files as git applies them, the site generators' rules, the
corpus's globs. Small trees written here; discovery runs over them (no file it leaves out is read)."""

import json
import subprocess
from pathlib import Path

from rag_assets.ingest.discovery import discover, iter_markdown_files
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.ingest.site_rules import find_sites


def write(root: Path, rel: str, text: str = "# Page\n\nSome text.\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def found(root: Path, scope: ScopeSettings | None = None) -> tuple[list[str], dict[str, str]]:
    catalog = discover(root, scope=scope)
    return [d.doc_path for d in catalog.documents], catalog.left_out


def test_nested_gitignore_files_apply_relative_to_where_they_sit(tmp_path):
    write(tmp_path, "guide/a.md")
    write(tmp_path, "guide/generated/b.md")
    write(tmp_path, "notes.md")
    write(tmp_path, "guide/keep.md")
    (tmp_path / ".gitignore").write_text("notes.md\n")
    (tmp_path / "guide" / ".gitignore").write_text("generated/\n*.md\n!keep.md\n!a.md\n")
    pages, left_out = found(tmp_path)
    assert pages == ["guide/a.md", "guide/keep.md"]
    assert left_out == {"notes.md": "gitignore", "guide/generated/b.md": "gitignore"}


def test_a_deeper_ignore_file_does_not_leak_into_a_sibling_folder(tmp_path):
    write(tmp_path, "a/x.md")
    write(tmp_path, "b/x.md")
    (tmp_path / "a" / ".gitignore").write_text("x.md\n")
    assert found(tmp_path)[0] == ["b/x.md"]


def test_ignore_files_between_the_repository_root_and_a_docs_subfolder_apply(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("website/docs/drafts/\n*.tmp.md\n")
    (tmp_path / "website" / "docs").mkdir(parents=True)
    (tmp_path / "website" / ".gitignore").write_text("docs/private.md\n")
    docs = tmp_path / "website" / "docs"
    write(docs, "intro.md")
    write(docs, "drafts/next.md")
    write(docs, "private.md")
    write(docs, "scratch.tmp.md")
    pages, left_out = found(docs)
    assert pages == ["intro.md"]
    assert left_out == {"drafts/next.md": "gitignore", "private.md": "gitignore", "scratch.tmp.md": "gitignore"}


def test_a_docs_folder_the_repository_ignores_is_indexed_whole(tmp_path):
    """The user pointed at an ignored folder (generated pages) on purpose: the rules above it do not empty it."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n")
    write(tmp_path, "build/site/page.md")
    assert found(tmp_path / "build" / "site")[0] == ["page.md"]


def test_ragignore_has_the_last_word_and_globs_narrow_the_rest(tmp_path):
    write(tmp_path, "api/generated.md")
    write(tmp_path, "guide/a.md")
    write(tmp_path, "guide/b.draft.md")
    write(tmp_path, "blog/post.md")
    (tmp_path / ".gitignore").write_text("api/\n")
    (tmp_path / ".ragignore").write_text("!api/\nblog/\n")
    pages, left_out = found(tmp_path, ScopeSettings(exclude=("*.draft.md",)))
    assert pages == ["api/generated.md", "guide/a.md"]
    assert left_out == {"blog/post.md": "ragignore", "guide/b.draft.md": "exclude"}
    pages, left_out = found(tmp_path, ScopeSettings(include=("guide/**",)))
    assert pages == ["guide/a.md", "guide/b.draft.md"]
    assert left_out["api/generated.md"] == "not_included"


def test_ignore_files_off_reads_none_of_them(tmp_path):
    write(tmp_path, "a.md")
    write(tmp_path, "b.md")
    (tmp_path / ".gitignore").write_text("b.md\n")
    (tmp_path / "docusaurus.config.js").write_text("module.exports = {}\n")
    write(tmp_path, "docs/_partial.md")
    pages, left_out = found(tmp_path, ScopeSettings(ignore_files=False))
    assert pages == ["a.md", "b.md", "docs/_partial.md"] and left_out == {}


def test_mintlify_mintignore_defaults_and_hidden_navigation(tmp_path):
    (tmp_path / "docs.json").write_text(json.dumps({"navigation": {"groups": [
        {"group": "Guides", "pages": ["quickstart", "guides/setup"]},
        {"group": "Internal", "hidden": True, "pages": ["internal/runbook"]},
        {"group": "Searchable", "hidden": True, "searchable": True, "pages": ["guides/faq"]}]}}))
    for page in ("quickstart.mdx", "guides/setup.mdx", "internal/runbook.mdx", "guides/faq.mdx", "README.md",
                 "CHANGELOG.md", "build/out.md", "private-notes.md"):
        write(tmp_path, page)
    (tmp_path / ".mintignore").write_text("private-notes.md\n")
    pages, left_out = found(tmp_path)
    assert pages == ["guides/faq.mdx", "guides/setup.mdx", "quickstart.mdx"]
    assert left_out == {"README.md": "generator", "CHANGELOG.md": "generator", "build/out.md": "generator",
                        "private-notes.md": "mintignore", "internal/runbook.mdx": "hidden"}
    (tmp_path / "docs.json").write_text(json.dumps({"seo": {"indexing": "all"}, "navigation": {"groups": [
        {"group": "Internal", "hidden": True, "pages": ["internal/runbook"]}]}}))
    assert "internal/runbook.mdx" in found(tmp_path)[0]


def test_docusaurus_partials_tests_and_the_repository_files_around_the_site(tmp_path):
    (tmp_path / "docusaurus.config.ts").write_text("export default {}\n")
    for page in ("docs/intro.md", "docs/_shared.mdx", "docs/_parts/x.md", "docs/__tests__/t.md", "blog/2024/post.md",
                 "README.md", "community/team.mdx", "node_modules/pkg/README.md"):
        write(tmp_path, page)
    pages, left_out = found(tmp_path)
    assert pages == ["blog/2024/post.md", "community/team.mdx", "docs/intro.md"]
    assert left_out == {"docs/_shared.mdx": "partial", "docs/_parts/x.md": "partial",
                        "docs/__tests__/t.md": "generator", "README.md": "outside_content"}  # node_modules: never walked


def test_a_site_in_a_subfolder_leaves_out_the_repository_around_it(tmp_path):
    """VitePress in docs/ (its .vitepress folder); the repository's README, changelog and test sites are no pages."""
    (tmp_path / "docs" / ".vitepress").mkdir(parents=True)
    (tmp_path / "docs" / ".vitepress" / "config.ts").write_text("export default {}\n")
    (tmp_path / "__tests__" / "e2e" / ".vitepress").mkdir(parents=True)
    for page in ("docs/index.md", "docs/guide/start.md", "docs/dist/old.md", "README.md", "CHANGELOG.md",
                 "__tests__/e2e/index.md"):
        write(tmp_path, page)
    assert [s.root for s in find_sites(tmp_path)] == ["docs"]
    pages, left_out = found(tmp_path)
    assert pages == ["docs/guide/start.md", "docs/index.md"]
    assert left_out == {"docs/dist/old.md": "generator", "README.md": "outside_content",
                        "CHANGELOG.md": "outside_content", "__tests__/e2e/index.md": "generator"}


def test_mkdocs_docs_dir_exclude_docs_and_draft_docs_from_mkdocs_yml(tmp_path):
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\ndocs_dir: src\nexclude_docs: |\n  *.tmp.md\n  /private/\ndraft_docs: |\n  drafts/\n"
        "markdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n")
    for page in ("src/index.md", "src/x.tmp.md", "src/private/a.md", "src/drafts/b.md", "README.md"):
        write(tmp_path, page)
    pages, left_out = found(tmp_path)
    assert pages == ["src/index.md"]
    assert left_out == {"src/x.tmp.md": "site_exclude", "src/private/a.md": "site_exclude", "src/drafts/b.md": "draft",
                        "README.md": "outside_content"}


def test_the_code_documents_folder_is_never_left_out(tmp_path):
    (tmp_path / "docusaurus.config.js").write_text("module.exports = {}\n")
    (tmp_path / ".gitignore").write_text("_from_code/\n")
    write(tmp_path, "docs/a.md")
    write(tmp_path, "_from_code/doc.md")
    pages, _ = found(tmp_path, ScopeSettings(keep=("_from_code",)))
    assert pages == ["_from_code/doc.md", "docs/a.md"]


def test_the_stat_level_walk_leaves_out_what_discovery_does(tmp_path):
    write(tmp_path, "a.md")
    write(tmp_path, "b.md")
    (tmp_path / ".ragignore").write_text("b.md\n")
    left_out: dict[str, str] = {}
    paths, errors = iter_markdown_files(tmp_path, left_out=left_out)
    assert [Path(p).name for p in paths] == ["a.md"] and errors == [] and left_out == {"b.md": "ragignore"}


def test_starlight_partials_and_its_404_page_are_no_pages(tmp_path):
    """Issue 42, item 1. Starlight's docs loader reads `**/[^_]*.md`: a `_name.md` file is a partial, a
    `_folder/` is read (Astro's legacy collections, with no src/content.config.*, leave both out); its
    `404.md` is the 404 route (unless `disable404Route`)."""
    (tmp_path / "astro.config.mjs").write_text("export default { integrations: [starlight({ title: 'X' })] };\n")
    (tmp_path / "src" / "content.config.ts").parent.mkdir(parents=True)
    (tmp_path / "src" / "content.config.ts").write_text("export const collections = {};\n")
    for page in ("src/content/docs/index.mdx", "src/content/docs/_fragment.mdx", "src/content/docs/guides/_cta.md",
                 "src/content/docs/_it/guida.md", "src/content/docs/404.md", "src/content/docs/guides/404.md"):
        write(tmp_path, page)
    pages, left_out = found(tmp_path)
    assert pages == ["src/content/docs/_it/guida.md", "src/content/docs/guides/404.md", "src/content/docs/index.mdx"]
    assert left_out == {"src/content/docs/_fragment.mdx": "partial", "src/content/docs/guides/_cta.md": "partial",
                        "src/content/docs/404.md": "error_page"}
    (tmp_path / "src" / "content.config.ts").unlink()  # legacy collections: `_` folders are left out too
    assert found(tmp_path)[1]["src/content/docs/_it/guida.md"] == "partial"
    (tmp_path / "astro.config.mjs").write_text(
        "export default { integrations: [starlight({ title: 'X', disable404Route: true })] };\n")
    assert "src/content/docs/404.md" in found(tmp_path)[0]


def test_docusaurus_content_plugins_their_excludes_and_the_folders_no_plugin_reads(tmp_path):
    (tmp_path / "docusaurus.config.js").write_text(
        "module.exports = { presets: [['classic', { docs: { exclude: ['**/*.wip.md', 'internal/**'] }, blog: false }]],\n"
        "  plugins: [[require.resolve('@docusaurus/plugin-content-docs'), { id: 'api', path: 'api-docs' }]] };\n")
    for page in ("docs/intro.md", "docs/a.wip.md", "docs/internal/x.md", "api-docs/ref.md", "blog/post.md",
                 "meetup/2024.md", "src/pages/about.md", "src/pages/404.md", "src/pages/_part.md"):
        write(tmp_path, page)
    pages, left_out = found(tmp_path)
    assert pages == ["api-docs/ref.md", "docs/intro.md", "src/pages/about.md"]
    assert left_out == {"docs/a.wip.md": "site_exclude", "docs/internal/x.md": "site_exclude",
                        "blog/post.md": "outside_content", "meetup/2024.md": "outside_content",
                        "src/pages/404.md": "error_page", "src/pages/_part.md": "partial"}


def test_a_material_blog_index_is_a_listing_of_its_posts_not_a_page(tmp_path):
    """Material's blog plugin builds `<blog_dir>/index.md` as "a paginated view listing all posts": each post
    is a page; the index is left out by name (each instance of the plugin, its own blog_dir)."""
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\ntheme:\n  name: material\nplugins:\n  - search\n  - blog\n"
        "  - material/blog:\n      blog_dir: ./news/\n  - blog:\n      blog_dir: off\n      enabled: false\n")
    for page in ("docs/index.md", "docs/blog/index.md", "docs/blog/posts/hello.md", "docs/news/index.md",
                 "docs/news/posts/a.md", "docs/off/index.md", "docs/guide/index.md"):
        write(tmp_path, page)
    pages, left_out = found(tmp_path)
    assert left_out == {"docs/blog/index.md": "listing_page", "docs/news/index.md": "listing_page"}
    assert "docs/blog/posts/hello.md" in pages and "docs/off/index.md" in pages and "docs/guide/index.md" in pages
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nplugins:\n  - search\n")  # no blog: an index is a page
    assert found(tmp_path)[1] == {}
