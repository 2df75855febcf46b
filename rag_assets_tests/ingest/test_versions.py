"""Versioned docs: which version is current, which are left out and why, RAG_VERSIONS, and the version
every page of a versioned site carries (issue 42, item 4)."""

import json

import pytest

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.ingest.versions import parse_versions
from rag_assets_tests.support.site_tree import VERSIONED_SITE, pages, write_all

DOCUSAURUS = {
    "docusaurus.config.js": "module.exports = { url: 'https://example.org', baseUrl: '/',\n"
                            "  presets: [['@docusaurus/preset-classic', { docs: {} }]] };\n",
    "versions.json": json.dumps(["2.0", "1.0"]),
    "docs/intro.md": "# Intro (next)\n",
    "docs/new-feature.md": "# New feature\n",
    "versioned_docs/version-2.0/intro.md": "# Intro (2.0)\n",
    "versioned_docs/version-2.0/guides/install.md": "# Install (2.0)\n",
    "versioned_docs/version-1.0/intro.md": "# Intro (1.0)\n",
    # an archive no versions.json entry names: the build never reads it
    "versioned_docs/version-0.9/intro.md": "# Intro (0.9)\n",
    "versioned_docs/version-0.9/old.md": "# Old\n",
    "versioned_sidebars/version-2.0-sidebars.json": "{}",
}


def test_a_docusaurus_site_indexes_its_current_version_only_and_says_why_the_rest_is_left_out(tmp_path):
    write_all(tmp_path, DOCUSAURUS)
    found, left_out = pages(tmp_path)
    assert found == {
        "versioned_docs/version-2.0/intro.md": {"site_path": "intro.md", "version": "2.0", "route": "/docs/intro",
                                                "url": "https://example.org/docs/intro", "doc_type": "document"},
        "versioned_docs/version-2.0/guides/install.md": {
            "site_path": "guides/install.md", "version": "2.0", "route": "/docs/guides/install", "module": "guides",
            "url": "https://example.org/docs/guides/install", "doc_type": "guides"}}
    assert left_out == {"docs/intro.md": "unreleased_version", "docs/new-feature.md": "unreleased_version",
                        "versioned_docs/version-1.0/intro.md": "older_version",
                        "versioned_docs/version-0.9/intro.md": "unpublished_version",
                        "versioned_docs/version-0.9/old.md": "unpublished_version"}


def test_versions_all_and_a_list_bring_the_others_in_with_their_routes(tmp_path):
    write_all(tmp_path, DOCUSAURUS)
    found, left_out = pages(tmp_path, ScopeSettings(versions=parse_versions("all")))
    assert {p: (m["version"], m["route"]) for p, m in found.items()} == {
        "docs/intro.md": ("next", "/docs/next/intro"), "docs/new-feature.md": ("next", "/docs/next/new-feature"),
        "versioned_docs/version-2.0/intro.md": ("2.0", "/docs/intro"),
        "versioned_docs/version-2.0/guides/install.md": ("2.0", "/docs/guides/install"),
        "versioned_docs/version-1.0/intro.md": ("1.0", "/docs/1.0/intro")}
    assert set(left_out.values()) == {"unpublished_version"}  # `all` is what the site publishes
    found, left_out = pages(tmp_path, ScopeSettings(versions=parse_versions("1.0, next")))
    assert sorted(found) == ["docs/intro.md", "docs/new-feature.md", "versioned_docs/version-1.0/intro.md"]
    assert left_out["versioned_docs/version-2.0/intro.md"] == "older_version"
    found, _ = pages(tmp_path, ScopeSettings(versions=parse_versions("0.9")))  # an archive, named on purpose
    assert sorted(found) == ["versioned_docs/version-0.9/intro.md", "versioned_docs/version-0.9/old.md"]


def test_the_docs_plugin_options_decide_the_current_version_and_what_is_built(tmp_path):
    write_all(tmp_path, {**DOCUSAURUS, "docusaurus.config.js": (
        "module.exports = { presets: [['classic', { docs: { lastVersion: 'current', onlyIncludeVersions: "
        "['current', '2.0'], versions: { current: { label: 'Canary', path: 'canary' } } } }]] };\n")})
    found, left_out = pages(tmp_path, ScopeSettings(versions=parse_versions("all")))
    assert {p: (m["version"], m["route"]) for p, m in found.items()} == {
        "docs/intro.md": ("Canary", "/docs/canary/intro"), "docs/new-feature.md": ("Canary", "/docs/canary/new-feature"),
        "versioned_docs/version-2.0/intro.md": ("2.0", "/docs/2.0/intro"),
        "versioned_docs/version-2.0/guides/install.md": ("2.0", "/docs/2.0/guides/install")}
    assert left_out["versioned_docs/version-1.0/intro.md"] == "unpublished_version"  # onlyIncludeVersions
    found, left_out = pages(tmp_path)
    assert sorted(found) == ["docs/intro.md", "docs/new-feature.md"]  # lastVersion: docs/ is current
    assert left_out["versioned_docs/version-2.0/intro.md"] == "older_version"


def test_translations_of_a_version_are_in_its_version(tmp_path):
    write_all(tmp_path, {**DOCUSAURUS,
                         "i18n/fr/docusaurus-plugin-content-docs/version-1.0/intro.md": "# Intro\n",
                         "i18n/fr/docusaurus-plugin-content-docs/version-2.0/intro.md": "# Intro\n"})
    _, left_out = pages(tmp_path, ScopeSettings(default_language="en"))
    assert left_out["i18n/fr/docusaurus-plugin-content-docs/version-1.0/intro.md"] == "older_version"
    assert left_out["i18n/fr/docusaurus-plugin-content-docs/version-2.0/intro.md"] == "translation"


def test_mintlify_navigation_versions(tmp_path):
    navigation = {"versions": [
        {"version": "v2", "default": True, "groups": [{"group": "G", "pages": ["v2/start", "shared"]}]},
        {"version": "v1", "groups": [{"group": "G", "pages": ["v1/start", "shared"]}]}]}
    write_all(tmp_path, {"docs.json": json.dumps({"navigation": navigation}), "v2/start.mdx": "# Start\n",
                         "v1/start.mdx": "# Start\n", "shared.mdx": "# Shared\n", "unlisted.mdx": "# Unlisted\n"})
    found, left_out = pages(tmp_path)
    assert {p: m.get("version") for p, m in found.items()} == {"v2/start.mdx": "v2", "shared.mdx": "v2",
                                                              "unlisted.mdx": None}
    assert left_out == {"v1/start.mdx": "older_version"}
    found, _ = pages(tmp_path, ScopeSettings(versions=("v1",)))
    assert sorted(found) == ["unlisted.mdx", "v1/start.mdx"]


def test_rag_versions_is_validated_and_parsed(monkeypatch):
    assert parse_versions("") == ("current",) and parse_versions("ALL".lower()) == ("all",)
    assert parse_versions("2.0, 1.9") == ("2.0", "1.9") and parse_versions("2.0,all") == ("all",)
    monkeypatch.setenv("RAG_VERSIONS", " , ")
    with pytest.raises(ConfigurationError, match="RAG_VERSIONS"):
        Settings.from_env().validated()
    monkeypatch.setenv("RAG_VERSIONS", "2.0,1.9")
    assert ScopeSettings.from_settings(Settings.from_env().ingest).versions == ("2.0", "1.9")


def chunk_sites(settings) -> dict[str, tuple]:
    from rag_assets.embedding import load_embedder
    from rag_assets.index.chroma_store import ChromaStore

    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    return {meta["doc_path"]: (meta.get("version"), meta.get("route"), meta.get("url"), meta.get("site_path"),
                               meta.get("module")) for _, _, meta in store.iter_all()}


def test_an_index_made_before_places_were_kept_still_answers_and_gains_them(rag_env, dagster_home, monkeypatch):
    """Issue 42: every chunk of a versioned site carries its version, route and url; RAG_VERSIONS brings the
    other versions in; an index made by the code before (no place column, parse records of meta-v2, chunks
    without these keys) answers queries as it did and gains them at the next ingest."""
    import sqlite3

    from rag_assets import RAGPipeline, RetrieveRequest
    from rag_assets.index import state_db
    from rag_assets.indexing.service import ingest

    docs = rag_env / "docs"
    for path in list(docs.rglob("*.md")):
        path.unlink()
    write_all(docs, VERSIONED_SITE)
    summary = ingest()
    assert summary.documents_processed == 1 and summary.left_out == {"older_version": 1, "unreleased_version": 1}
    settings = Settings.from_env()
    assert chunk_sites(settings) == {"versioned_docs/version-2.0/guides/01-rate-limits.md": (
        "2.0", "/docs/guides/rate-limits", "https://example.org/docs/guides/rate-limits", "guides/01-rate-limits.md",
        "guides")}

    # the state as the code before left it: no place column, the parse stage's records of its fingerprint
    db = next((rag_env / "state").rglob("*.sqlite"))
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE catalog_documents DROP COLUMN place")
        conn.execute("UPDATE stage_records SET fingerprint = replace(fingerprint, 'meta-v3', 'meta-v2')")
    with state_db._OPEN_LOCK:  # a new process: the database is opened afresh
        for url in [u for u in state_db._OPEN if str(db) in u]:
            state_db._OPEN.pop(url).dispose()
    # the page's place is what this test is about, not the relevance gate: the copies are one text to the
    # ranking's features now (relevance.distinct_ranks), but in a three-chunk index every known term's idf
    # is near 0, so the one term no page holds ("many") reads as most of the question: no gate here
    question = RetrieveRequest("How many requests per minute may an organisation send?", max_chunks=1, min_relevance=0.0)
    before = RAGPipeline.from_settings(Settings.from_env()).retrieve(question)
    assert before.document_chunks and "600 requests" in before.document_chunks[0].text

    monkeypatch.setenv("RAG_VERSIONS", "all")
    summary = ingest()
    # the two versions brought in, and the page indexed before re-parsed (the parse stage's fingerprint moved)
    assert not summary.errors and summary.left_out == {} and summary.documents_processed == 3
    placed = chunk_sites(Settings.from_env())
    assert {path: value[:2] for path, value in placed.items()} == {
        "versioned_docs/version-2.0/guides/01-rate-limits.md": ("2.0", "/docs/guides/rate-limits"),
        "versioned_docs/version-1.0/guides/01-rate-limits.md": ("1.0", "/docs/1.0/guides/rate-limits"),
        "docs/guides/01-rate-limits.md": ("next", "/docs/next/guides/rate-limits")}
    after = RAGPipeline.from_settings(Settings.from_env()).retrieve(question)
    assert after.document_chunks and after.document_chunks[0].metadata["url"].startswith("https://example.org/docs/")
