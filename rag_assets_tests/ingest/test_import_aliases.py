"""rag_assets.ingest.import_aliases: bare import specifiers resolved the way a site's bundler resolves
them (Docusaurus' @site, TypeScript path aliases that Astro and Vite read), and a page that imports
a partial through one shows the partial's text and changes when it changes."""

from __future__ import annotations

import json

from rag_assets.ingest import snippets
from rag_assets.ingest.discovery import discover, fingerprint_file
from rag_assets.ingest.document import parse_document
from rag_assets.ingest.import_aliases import ImportAliases, strip_jsonc


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def starlight_repo(root):
    """An Astro Starlight repository whose pages import a fragment through a tsconfig path alias, the
    tsconfig written as Astro's templates write it (JSONC, extends, trailing commas)."""
    write(root / "astro.config.mjs", "export default {}\n")
    write(root / "tsconfig.base.json", '{ "compilerOptions": { "baseUrl": "." } }\n')
    write(root / "tsconfig.json", """{
  // the project's aliases
  "extends": ["astro/tsconfigs/strict", "./tsconfig.base.json"],
  "compilerOptions": {
    "paths": {
      "@fragments/*": ["src/fragments/*",],
      "@components/*": ["src/components/*"], /* code */
    },
  },
}
""")
    write(root / "src/fragments/cta.mdx", "Create a project:\n\n```sh\nnpm create tauri-app@latest\n```\n")
    write(root / "src/content/docs/start/create.mdx", "---\ntitle: Create a project\n---\n"
          "import Cta from '@fragments/cta.mdx';\nimport Card from '@components/Card.astro';\n\n"
          "## First steps\n\n<Cta />\n\nThen run it.\n")
    write(root / "src/content/docs/plain.md", "# Plain\n\nNo imports.\n")
    return root


def test_jsonc_reads_as_json():
    text = '{\n  // a comment "with quotes"\n  "a": "http://x//y", /* b, */ "b": [1, 2,],\n}\n'
    assert json.loads(strip_jsonc(text)) == {"a": "http://x//y", "b": [1, 2]}


def test_tsconfig_paths_resolve_from_the_nearest_config_with_its_extends(tmp_path):
    aliases = ImportAliases(starlight_repo(tmp_path))
    page = "src/content/docs/start/create.mdx"
    assert aliases.candidates("@fragments/cta.mdx", page) == ["src/fragments/cta.mdx"]
    assert aliases.candidates("@fragments/nested/x.mdx", page) == ["src/fragments/nested/x.mdx"]
    # the inherited baseUrl resolves a bare specifier too (Astro and TypeScript both do)
    assert aliases.candidates("src/fragments/cta.mdx", page) == ["src/fragments/cta.mdx"]
    # a nearer tsconfig wins, and a target leaving the docs folder is no candidate
    write(tmp_path / "src/content/tsconfig.json", '{"compilerOptions": {"paths": {"@fragments/*": ["../../../x/*", "frag/*"]}}}')
    again = ImportAliases(tmp_path)
    assert again.candidates("@fragments/cta.mdx", page) == ["src/content/frag/cta.mdx"]


def test_the_longest_prefix_and_an_exact_pattern_win(tmp_path):
    write(tmp_path / "jsconfig.json", json.dumps({"compilerOptions": {"paths": {
        "@/*": ["src/*"], "@/docs/*": ["content/*"], "@intro": ["content/_intro.mdx"]}}}))
    aliases = ImportAliases(tmp_path)
    assert aliases.candidates("@/docs/a.mdx", "p.mdx") == ["content/a.mdx"]
    assert aliases.candidates("@/b.mdx", "p.mdx") == ["src/b.mdx"]
    assert aliases.candidates("@intro", "p.mdx") == ["content/_intro.mdx"]
    assert aliases.candidates("b.mdx", "p.mdx") == []  # no baseUrl: a bare name is a package


def test_site_means_the_folder_that_holds_the_docusaurus_config(tmp_path):
    write(tmp_path / "website/docusaurus.config.ts", "export default {}\n")
    aliases = ImportAliases(tmp_path)
    assert snippets.candidates("@site/src/partials/_x.mdx", "website/docs/a/page.mdx", aliases) == [
        "website/src/partials/_x.mdx"]
    # pointed at the site's docs/ folder (no config inside): the folder or its parent, as before
    assert snippets.candidates("@site/docs/_p.mdx", "page.mdx", ImportAliases(tmp_path / "website" / "docs")) == [
        "docs/_p.mdx", "_p.mdx"]


def test_a_page_shows_a_partial_imported_through_an_alias_and_changes_with_it(tmp_path):
    """Issue 42, item 2: `@fragments/cta.mdx` was not resolved, and the create-project commands were
    missing from every page that shows it."""
    root = starlight_repo(tmp_path)
    page = "src/content/docs/start/create.mdx"
    refs = {d.doc_path: d for d in discover(root).documents}
    doc, stats = parse_document(refs[page])
    assert "npm create tauri-app@latest" in doc.body and "Create a project:" in doc.body
    assert stats["snippets_expanded"] == 1 and stats["mdx_warnings"] == 0
    assert refs["src/content/docs/plain.md"].content_hash == refs["src/content/docs/plain.md"].file_hash
    # editing the aliased fragment (outside the content folder: not a page) changes the page's hash
    write(root / "src/fragments/cta.mdx", "```sh\nnpm create tauri-app@2\n```\n")
    after = {d.doc_path: d for d in discover(root).documents}
    assert after[page].content_hash != refs[page].content_hash
    assert fingerprint_file(root, page).content_hash == after[page].content_hash
    assert "npm create tauri-app@2" in parse_document(after[page])[0].body


def test_a_relative_import_of_a_partial_outside_the_content_folder_is_shown(tmp_path):
    """A partial the site's rules keep out of the pages (outside src/content/docs) is still read for
    the pages that import it, and is part of their hash: the parse stage no longer refuses the page
    as if the partial had changed during the run."""
    root = starlight_repo(tmp_path)
    write(root / "src/content/docs/start/rel.mdx", "import Cta from '../../../fragments/cta.mdx';\n\n<Cta />\n")
    ref = next(d for d in discover(root).documents if d.doc_path.endswith("rel.mdx"))
    assert ref.content_hash != ref.file_hash
    assert "npm create tauri-app@latest" in parse_document(ref)[0].body
