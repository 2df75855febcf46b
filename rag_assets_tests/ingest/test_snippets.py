"""Snippet files (rag_assets.ingest.snippets): shown inside the pages that import them, never pages of
their own, and part of those pages' identity; checked on a Mintlify/Docusaurus-style MDX site."""

from __future__ import annotations

import re
import sqlite3

import pytest

from rag_assets.errors import DocumentError
from rag_assets.index import state_db
from rag_assets.index.stage_store import CHUNKS, StageStore
from rag_assets.ingest import frontmatter, mdx, snippets
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.change_detection import detect_changes
from rag_assets.ingest.discovery import discover, fingerprint_file
from rag_assets.ingest.stages import chunking_fingerprint, run_chunk, run_parse, run_split
from rag_assets.ingest.tokens import TokenCounter
from rag_assets_tests.support.hostile_pages import normal_page, snippet_bomb
from rag_assets_tests.support.mdx_site import write_mdx_site

TAG = re.compile(r"</?[A-Za-z][\w.]*[\s/>]")
IMPORT = re.compile(r"^\s*(import|export)\s", re.MULTILINE)


@pytest.fixture
def site(tmp_path):
    return write_mdx_site(tmp_path / "docs")


def test_snippet_files_are_not_pages_unless_asked(site):
    assert [d.doc_path for d in discover(site).documents] == ["guides/install.mdx", "learn/add_documents.mdx"]
    everything = [d.doc_path for d in discover(site, index_snippets=True).documents]
    assert everything == sorted(everything) and len(everything) == 5


def test_candidates_stay_inside_the_docs_folder():
    # "/": the docs folder first, then the folders on the importer's path (a site kept in a subfolder)
    assert snippets.candidates("/snippets/a.mdx", "x/page.mdx") == ["snippets/a.mdx", "x/snippets/a.mdx"]
    assert snippets.candidates("/../a.mdx", "x/page.mdx") == []
    assert snippets.candidates("./_p.mdx", "guides/page.mdx") == ["guides/_p.mdx"]
    assert snippets.candidates("../_p.mdx", "guides/page.mdx") == ["_p.mdx"]
    assert snippets.candidates("@site/docs/_p.mdx", "page.mdx") == ["docs/_p.mdx", "_p.mdx"]
    assert snippets.candidates("../../etc/passwd.md", "page.mdx") == []
    assert snippets.candidates("/.hidden/a.mdx", "page.mdx") == []
    assert snippets.candidates("@theme/Tabs", "page.mdx") == []


def test_editing_a_snippet_changes_the_hash_of_the_pages_that_show_it(site):
    before = {d.doc_path: d.content_hash for d in discover(site).documents}
    (site / "snippets/samples/code_samples_add_movies_1.mdx").write_text("```bash\ncurl -X PUT changed\n```\n")
    catalog = discover(site)
    after = {d.doc_path: d.content_hash for d in catalog.documents}
    assert after["learn/add_documents.mdx"] != before["learn/add_documents.mdx"]
    assert after["guides/install.mdx"] == before["guides/install.mdx"]
    # one document re-fingerprinted by a run agrees with discovery, also from a stat-matched known ref
    for ref in catalog.documents:
        assert fingerprint_file(site, ref.doc_path).content_hash == ref.content_hash
        assert fingerprint_file(site, ref.doc_path, known=ref).content_hash == ref.content_hash
    # a page that imports nothing keeps the plain sha-256 of its bytes
    plain = site / "plain.md"
    plain.write_text("# Plain\n\nText.\n")
    ref = next(d for d in discover(site).documents if d.doc_path == "plain.md")
    assert ref.content_hash == ref.file_hash and ref.imports == ""


def test_the_stat_shortcut_still_sees_an_edited_snippet(site):
    first = discover(site)
    (site / "guides/_requirements.mdx").write_text("The server needs 64 GB of RAM.\n")
    again = discover(site, known=first)
    page = next(d for d in again.documents if d.doc_path == "guides/install.mdx")
    assert page.content_hash != next(d for d in first.documents if d.doc_path == "guides/install.mdx").content_hash


def test_a_snippet_changed_after_discovery_fails_the_page_not_the_run(site):
    ref = next(d for d in discover(site).documents if d.doc_path == "guides/install.mdx")
    (site / "guides/_requirements.mdx").write_text("Changed meanwhile.\n")
    with pytest.raises(DocumentError, match="guides/install.mdx: a file it imports changed"):
        snippets.render_page(frontmatter.read_document(ref), ref)


def test_indexed_text_of_an_mdx_site_has_no_imports_or_tags_and_shows_its_snippets(site, tmp_path):
    refs = discover(site).documents
    stages = StageStore(tmp_path / "state")
    counter = TokenCounter.for_name("cl100k_base", tmp_path / "tiktoken")
    config = ChunkingConfig()
    fingerprint = chunking_fingerprint(config, "cl100k_base", "m", 256)
    report = run_parse(refs, stages)
    assert report.stats["snippets_expanded"] == 2 and report.stats["mdx_warnings"] == 0
    run_split(refs, stages)
    run_chunk(refs, stages, counter, config, None, fingerprint)
    chunks = {ref.doc_path: stages.read(CHUNKS, ref.doc_path)["payload"] for ref in refs}
    for doc_path, items in chunks.items():
        for chunk in items:
            for text in (chunk["text"], chunk["index_text"]):
                assert not TAG.search(text), (doc_path, text)
                assert not IMPORT.search(text), (doc_path, text)
    page = "\n".join(c["text"] for c in chunks["learn/add_documents.mdx"])
    assert "client.index('movies').add_documents(movies)" in page  # from the imported snippet
    assert "```python Python" in page  # the code group's label per example
    assert "Search the index" in page and "Filter results" in page  # card titles are prose
    install = "\n".join(c["text"] for c in chunks["guides/install.mdx"])
    assert "4 GB of RAM" in install and "macOS" in install and "brew install movieserver" in install
    assert "TODO" not in install


def test_a_catalog_table_of_an_earlier_version_gains_the_new_columns_and_index(site, tmp_path):
    state = tmp_path / "state"
    stages = StageStore(state)
    stages.write_catalog(discover(site))
    db = next(state.glob("*.sqlite"))
    with sqlite3.connect(db) as conn:  # the table as an earlier version created it
        conn.execute("ALTER TABLE catalog_documents DROP COLUMN imports")
        conn.execute("ALTER TABLE catalog_documents DROP COLUMN file_hash")
        conn.execute("DROP INDEX catalog_documents_partition_key")
    with state_db._OPEN_LOCK:  # a new process: the database is opened afresh
        state_db._OPEN.pop(next(url for url in state_db._OPEN if str(db) in url)).dispose()
    reopened = StageStore(state)
    catalog = discover(site, known=reopened.read_catalog())
    reopened.write_catalog(catalog)
    assert {d.doc_path: d.imports for d in StageStore(state).read_catalog().documents}["guides/install.mdx"] == "./_requirements.mdx"
    with sqlite3.connect(db) as conn:  # a run's documents are looked up by key, not by scanning the table
        plan = conn.execute("EXPLAIN QUERY PLAN SELECT * FROM catalog_documents WHERE partition_key IN ('a', 'b')").fetchall()
    assert "catalog_documents_partition_key" in str(plan), plan


def test_the_sensor_sees_a_snippet_edit_as_a_change_of_the_pages_that_show_it(site):
    first = detect_changes(site, None, settle_seconds=0)
    assert sorted(r.doc_path for r in first.added) == ["guides/install.mdx", "learn/add_documents.mdx"]
    pages = {d.doc_path: d.content_hash for d in discover(site).documents}
    assert {r.doc_path: r.content_hash for r in first.added} == pages  # the same identity as discovery
    (site / "guides/_requirements.mdx").write_text("The server needs 64 GB of RAM.\n")
    (site / "snippets/unused.mdx").write_text("Still unused.\n")
    second = detect_changes(site, first.cursor, settle_seconds=0)
    assert [r.doc_path for r in second.changed] == ["guides/install.mdx"] and not second.added
    assert second.changed[0].content_hash == next(
        d.content_hash for d in discover(site).documents if d.doc_path == "guides/install.mdx")
    assert not detect_changes(site, second.cursor, settle_seconds=0).any


def test_an_import_never_turns_a_page_into_a_snippet(tmp_path):
    """Issue 36, item 2: an unused `import B from './b.md'` deleted b.md from the index, and two pages
    importing each other both vanished. What makes a snippet is its place and name, not an import."""
    docs = tmp_path / "docs"
    files = {
        "a.md": "import B from './b.md';\n\n# A\n\nPage A.\n",
        "b.md": "# B\n\nPage B.\n",
        "c.mdx": "import D from './d.mdx';\n\n# C\n\n<D />\n",
        "d.mdx": "import C from './c.mdx';\n\n# D\n\n<C />\n",
        # Docusaurus partials: "_" file or folder names, imported
        "guide.mdx": "import P from './_partials/step.mdx';\nimport R from './_req.md';\n\n# Guide\n\n<P />\n\n<R />\n",
        "_partials/step.mdx": "Run the step.\n",
        "_req.md": "Needs 4 GB.\n",
        # "_" names that nothing imports stay pages: Hugo's section page, a Jekyll collection
        "section/_index.md": "# Section\n\nThe section page.\n",
        "_docs/intro.md": "# Intro\n\nA collection page.\n",
        # snippets/ at the top
        "snippets/top.mdx": "Top snippet.\n",
        # a folder called snippets that is not a site's snippets folder holds pages
        "features/snippets/overview.md": "# Code snippets\n\nThe snippets feature.\n",
    }
    for rel, text in files.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text)
    pages = ["_docs/intro.md", "a.md", "b.md", "c.mdx", "d.mdx", "features/snippets/overview.md", "guide.mdx",
             "section/_index.md"]
    catalog = discover(docs)
    assert [d.doc_path for d in catalog.documents] == pages
    assert catalog.excluded == ["_partials/step.mdx", "_req.md", "snippets/top.mdx"]
    # the sensor's look agrees (it is how `rag watch` and the UI see the folder)
    assert sorted(r.doc_path for r in detect_changes(docs, None, settle_seconds=0).added) == pages
    # pages importing each other are both pages, each shown once inside the other (the cycle is cut)
    by_path = {d.doc_path: d for d in catalog.documents}
    c, stats = snippets.render_page(frontmatter.read_document(by_path["c.mdx"]), by_path["c.mdx"])
    assert c.body.count("# D") == 1 and c.body.count("# C") == 1 and stats["mdx_warnings"] == 1


def test_the_snippets_folder_beside_a_mintlify_docs_json_one_folder_down_holds_snippets(tmp_path):
    """A whole repository with its Mintlify site in a subfolder: the site's snippets/ (beside its
    docs.json) holds snippets; a folder called snippets elsewhere in the site holds pages. (The files
    outside the site are the scope rules' to leave out: ingest/site_rules.py.)"""
    docs = tmp_path / "docs"
    files = {
        "site/docs.json": "{}",
        "site/snippets/s.mdx": "Site snippet.\n",
        "site/page.mdx": "import S from '/snippets/s.mdx';\n\n# Page\n\n<S />\n",
        "site/features/snippets/overview.md": "# Code snippets\n\nThe snippets feature.\n",
    }
    for rel, text in files.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text)
    catalog = discover(docs)
    assert [d.doc_path for d in catalog.documents] == ["site/features/snippets/overview.md", "site/page.mdx"]
    assert catalog.excluded == ["site/snippets/s.mdx"]
    page = next(d for d in catalog.documents if d.doc_path == "site/page.mdx")
    rendered, _ = snippets.render_page(frontmatter.read_document(page), page)
    assert "Site snippet." in rendered.body


def test_a_snippet_bomb_fails_its_page_by_name_at_once_and_the_other_pages_are_parsed(tmp_path):
    """Issue 36, item 1: six snippet files of 818 bytes, each using the next 8 times, 5 levels deep,
    rendered 299,592 snippet uses and logged 262,144 warnings (in `rag ingest`, past 600 s)."""
    docs = tmp_path / "docs"
    bomb = snippet_bomb(docs)
    normal = normal_page(docs)
    assert sum(p.stat().st_size for p in (docs / "snippets").iterdir()) == 818
    refs = discover(docs).documents
    report = run_parse(refs, StageStore(tmp_path / "state"))
    assert report.processed == [normal]
    assert report.failed[bomb] == (f"{bomb}: its snippets expand to more than {mdx.MAX_SNIPPET_EXPANSIONS:,} snippet "
                                   "uses (passed at snippets/s2.mdx); not indexed")
    # each snippet is rendered once per depth and reused: the loader is asked about each use at most once
    ref = next(r for r in refs if r.doc_path == bomb)
    asked: list[str] = []
    files = snippets.read_closure(snippets.docs_root(ref), bomb, ref.imports, 5_000_000)

    def load(source, importer):
        asked.append(source)
        path = snippets.resolve(source, importer, files.__contains__)
        return path, files[path].decode()

    with pytest.raises(mdx.SnippetLimitError):
        mdx.render_mdx(frontmatter.read_document(ref).body, bomb, load)
    assert len(asked) <= mdx.MAX_SNIPPET_EXPANSIONS
    # without the expansion limit, the size limit stops it: never more than RAG_MAX_FILE_BYTES of text
    with pytest.raises(mdx.SnippetLimitError, match=r"past 100,000 bytes, the file-size limit RAG_MAX_FILE_BYTES"):
        mdx.render_mdx(frontmatter.read_document(ref).body, bomb, load, max_bytes=100_000, max_expansions=10**9)


def test_a_deep_but_small_snippet_tree_is_expanded_and_warns_once_per_snippet(tmp_path):
    docs = tmp_path / "docs"
    bomb = snippet_bomb(docs, uses=3, levels=6)  # 3 + 9 + ... expansions, one level past MAX_SNIPPET_DEPTH
    ref = discover(docs).documents[0]
    doc, stats = snippets.render_page(frontmatter.read_document(ref), ref)
    assert doc.body.count("Level 5.") == 3 ** 5 and "Level 6." not in doc.body
    assert stats["mdx_warnings"] == 1  # the refused sixth level: one warning, not one per use


def test_snippet_file_must_be_markdown(tmp_path):
    """Issue 36, item 10: <Snippet file="../notes.txt"/> inlined any file of the docs folder."""
    docs = tmp_path / "docs"
    (docs / "snippets").mkdir(parents=True)
    (docs / "notes.txt").write_text("SECRET-NOTES\n")
    (docs / "snippets" / "ok.mdx").write_text("Shown snippet.\n")
    (docs / "page.mdx").write_text('# Page\n\n<Snippet file="../notes.txt"/>\n\n<Snippet file="ok.mdx"/>\n')
    ref = discover(docs).documents[0]
    assert ref.imports == "/snippets/ok.mdx"  # the .txt is never part of the page's identity or read
    doc, stats = snippets.render_page(frontmatter.read_document(ref), ref)
    assert "SECRET-NOTES" not in doc.body and "Shown snippet." in doc.body
    assert stats["mdx_warnings"] == 1
