"""Each page's language from the generator's layout, the frontmatter or the text; the default language;
translations left out unless asked for. Small trees written here."""

import json
from pathlib import Path

import pytest

from rag_assets.ingest.discovery import discover
from rag_assets.ingest.languages import choose_default, detect
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.vocabulary.languages import parse_languages
from rag_assets_tests.support.language_samples import DISHES, EN, ES, FR, IT, MENU


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {Path(rel).stem}\n\n{text}\n", encoding="utf-8")


def languages_of(root: Path, scope: ScopeSettings | None = None):
    catalog = discover(root, scope=scope)
    return {d.doc_path: d.language for d in catalog.documents}, catalog


def test_the_text_decides_only_when_it_is_sure():
    assert (detect(EN), detect(ES), detect(FR)) == ("en", "es", "fr")
    assert detect("pip install fastapi") == ""  # too little prose
    assert detect("```python\n" + "x = 1\n" * 200 + "```\n" + "Short note.") == ""  # code is not prose


def test_choose_default_breaks_a_tie_towards_english_and_merges_regions():
    assert choose_default({"fr": 3, "en": 3}) == "en"
    assert choose_default({"pt-BR": 2, "pt": 1, "es": 2}) == "pt-BR"


def test_locale_folders_that_mirror_the_tree_beside_them(tmp_path):
    """Starlight-like: the default language at the root, translations in two-letter folders."""
    for page in ("index.md", "guides/install.md", "guides/config.md"):
        write(tmp_path, page, EN)
        write(tmp_path, f"es/{page}", ES)
    write(tmp_path, "fr/guides/install.md", FR)
    write(tmp_path, "fr/guides/config.md", FR)
    write(tmp_path, "id/overview.md", EN)  # named like Indonesian but mirrors nothing: a folder of pages
    langs, catalog = languages_of(tmp_path)
    assert catalog.default_language == "en"
    assert langs == {"index.md": "en", "guides/install.md": "en", "guides/config.md": "en", "id/overview.md": "en"}
    assert catalog.left_out == {f"es/{p}": "translation" for p in ("index.md", "guides/install.md", "guides/config.md")} | {
        "fr/guides/install.md": "translation", "fr/guides/config.md": "translation"}
    langs, catalog = languages_of(tmp_path, ScopeSettings(languages=("all",)))
    assert langs["es/guides/config.md"] == "es" and langs["fr/guides/config.md"] == "fr" and catalog.left_out == {}
    langs, _ = languages_of(tmp_path, ScopeSettings(languages=parse_languages("en,es")))
    assert "es/index.md" in langs and "fr/guides/config.md" not in langs


def test_every_language_in_a_folder_of_its_own_defaults_to_the_largest(tmp_path):
    """VitePress-like en/, es/, ... with no root pages: the language with most pages (a tie: English)."""
    for page in ("index.md", "guide/a.md", "guide/b.md"):
        write(tmp_path, f"en/{page}", EN)
        write(tmp_path, f"es/{page}", ES)
    langs, catalog = languages_of(tmp_path)
    assert catalog.default_language == "en" and sorted(langs) == ["en/guide/a.md", "en/guide/b.md", "en/index.md"]
    _, catalog = languages_of(tmp_path, ScopeSettings(default_language="es"))
    assert sorted(catalog.left_out) == ["en/guide/a.md", "en/guide/b.md", "en/index.md"]


def test_docusaurus_i18n_folders(tmp_path):
    (tmp_path / "docusaurus.config.js").write_text("module.exports = {i18n: {defaultLocale: 'en'}}\n")
    write(tmp_path, "docs/intro.md", EN)
    write(tmp_path, "i18n/zh-CN/docusaurus-plugin-content-docs/current/intro.md", "这是一个介绍页面。" * 40)
    write(tmp_path, "i18n/zh-CN/docusaurus-plugin-content-blog/post.md", "这是一篇博客文章。" * 40)
    langs, catalog = languages_of(tmp_path)
    assert langs == {"docs/intro.md": "en"}
    assert catalog.left_out == {"i18n/zh-CN/docusaurus-plugin-content-docs/current/intro.md": "translation",
                                "i18n/zh-CN/docusaurus-plugin-content-blog/post.md": "translation"}
    assert catalog.languages == {"en": 1, "zh-CN": 2}


def test_mintlify_docs_json_languages_and_its_declared_default(tmp_path):
    (tmp_path / "docs.json").write_text(json.dumps({"navigation": {"languages": [
        {"language": "es", "groups": [{"group": "Inicio", "pages": ["es/index"]}]},
        {"language": "en", "default": True, "groups": [{"group": "Start", "pages": ["index"]}]}]}}))
    write(tmp_path, "index.mdx", EN)
    write(tmp_path, "es/index.mdx", ES)
    write(tmp_path, "es/oculto.mdx", ES)  # in the language's folder, not in its navigation
    langs, catalog = languages_of(tmp_path)
    assert catalog.default_language == "en" and langs == {"index.mdx": "en"}
    assert catalog.left_out == {"es/index.mdx": "translation", "es/oculto.mdx": "translation"}


def test_mkdocs_style_suffixes_and_frontmatter_languages(tmp_path):
    write(tmp_path, "setup.md", EN)
    write(tmp_path, "setup.fr.md", FR)
    write(tmp_path, "notes.fr.md", EN)  # no setup of its own: a page whose name has a dot
    (tmp_path / "guia.md").write_text(f"---\nlang: es\n---\n# Guía\n\n{EN}\n", encoding="utf-8")
    langs, catalog = languages_of(tmp_path)
    assert langs == {"setup.md": "en", "notes.fr.md": "en"}
    assert catalog.left_out == {"setup.fr.md": "translation", "guia.md": "translation"}


def test_text_detection_leaves_out_a_page_only_in_a_corpus_without_a_layout(tmp_path):
    for i in range(3):
        write(tmp_path, f"en{i}.md", EN)
    write(tmp_path, "guia.md", ES)
    write(tmp_path, "short.md", "Hola.")  # unsure: the default language, kept
    langs, catalog = languages_of(tmp_path)
    assert catalog.left_out == {"guia.md": "translation"} and langs["short.md"] == "en"


def test_frontmatter_flags_leave_pages_out_and_the_keys_are_configurable(tmp_path):
    write(tmp_path, "a.md", EN)
    (tmp_path / "b.md").write_text("---\ndraft: true\n---\n# B\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("---\nnoindex: yes\n---\n# C\n", encoding="utf-8")
    (tmp_path / "d.md").write_text("---\nrobots: noindex, nofollow\n---\n# D\n", encoding="utf-8")
    (tmp_path / "e.md").write_text("---\nhidden: false\ninternal: true\n---\n# E\n", encoding="utf-8")
    (tmp_path / "f.md").write_text("---\ntitle: [unclosed\n---\n# F\n", encoding="utf-8")  # the parse stage reports it
    langs, catalog = languages_of(tmp_path)
    assert sorted(langs) == ["a.md", "e.md", "f.md"]
    assert catalog.left_out == {"b.md": "draft", "c.md": "noindex", "d.md": "noindex"}
    langs, catalog = languages_of(tmp_path, ScopeSettings(skip_keys=("internal",)))
    assert sorted(langs) == ["a.md", "b.md", "c.md", "d.md", "f.md"] and catalog.left_out == {"e.md": "internal"}


def test_scope_settings_are_validated_by_name():
    from rag_assets.config import Settings
    from rag_assets.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="RAG_LANGUAGES"):
        Settings.from_env({"RAG_LANGUAGES": "english"})
    with pytest.raises(ConfigurationError, match="RAG_DEFAULT_LANGUAGE"):
        Settings.from_env({"RAG_DEFAULT_LANGUAGE": "spanish"})
    with pytest.raises(ConfigurationError, match="RAG_IGNORE_FILES"):
        Settings.from_env({"RAG_IGNORE_FILES": "maybe"})
    with pytest.raises(ConfigurationError, match=r"RAG_EXCLUDE: '\\\\' is not a glob"):
        Settings.from_env({"RAG_EXCLUDE": "drafts/;\\"})
    settings = Settings.from_env({"RAG_LANGUAGES": "EN, es", "RAG_EXCLUDE": "blog/**;*.draft.md"})
    scope = ScopeSettings.from_settings(settings.ingest)
    assert scope.languages == ("en", "es") and scope.exclude == ("blog/**", "*.draft.md")
    assert scope.keep == ("_from_code",)


def short(root: Path, rel: str, text: str = "Run the installer, then open a new terminal.") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {Path(rel).stem}\n\n{text}\n", encoding="utf-8")


def test_a_docusaurus_default_locale_wins_over_the_text_of_short_pages(tmp_path):
    """Every page English and short (no text is sure of it): the translations used to make the default French."""
    (tmp_path / "docusaurus.config.js").write_text(
        "// @ts-check\nconst config = {\n  title: 'Docs',\n  i18n: {defaultLocale: 'en', locales: ['en', 'fr', 'es']},\n};\n"
        "module.exports = config;\n")
    for page in ("intro.md", "install.md", "usage.md"):
        short(tmp_path, f"docs/{page}")
    for page in ("intro.md", "install.md"):
        write(tmp_path, f"i18n/fr/docusaurus-plugin-content-docs/current/{page}", FR)
        write(tmp_path, f"docs/es/{page}", ES)  # not a Docusaurus locale folder: Spanish pages by their text
    langs, catalog = languages_of(tmp_path)
    assert catalog.default_language == "en"
    assert langs == {"docs/intro.md": "en", "docs/install.md": "en", "docs/usage.md": "en"}
    assert catalog.left_out == {
        "i18n/fr/docusaurus-plugin-content-docs/current/intro.md": "translation",
        "i18n/fr/docusaurus-plugin-content-docs/current/install.md": "translation",
        "docs/es/intro.md": "translation", "docs/es/install.md": "translation"}
    assert catalog.languages_from == "docusaurus.config.js i18n (default en; fr, es); docs/es/ by its pages' text"


def test_starlight_locales_imported_from_a_module_and_an_unlisted_folder_found_by_its_text(tmp_path):
    (tmp_path / "astro.config.mjs").write_text(
        "import { defineConfig } from 'astro/config';\nimport starlight from '@astrojs/starlight';\n"
        "import { locales } from './config/locales';\n"
        "export default defineConfig({ integrations: [starlight({ title: 'Docs', locales })] });\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "locales.ts").write_text(
        "export const locales = {\n  root: { label: 'English', lang: 'en' },\n  fr: { label: 'Français' },\n};\n")
    docs = "src/content/docs"
    for page in ("index.md", "guides/setup.md"):
        short(tmp_path, f"{docs}/{page}")
    short(tmp_path, f"{docs}/fr/index.md", "Lancez le programme.")  # too short to tell: the folder is French by the config
    write(tmp_path, f"{docs}/it/guida.md", IT)  # a locale the configuration does not list
    langs, catalog = languages_of(tmp_path)
    assert langs == {f"{docs}/index.md": "en", f"{docs}/guides/setup.md": "en"}
    assert catalog.left_out == {f"{docs}/fr/index.md": "translation", f"{docs}/it/guida.md": "translation"}
    assert catalog.languages == {"en": 2, "fr": 1, "it": 1}
    assert catalog.languages_from == "astro.config.mjs Starlight locales (default en; fr); src/content/docs/it/ by its pages' text"


def test_folders_named_like_locales_beside_the_sites_pages_are_folders_of_pages(tmp_path):
    """An IT department's `it/`, ECMAScript notes in `es/`, a Delaware office's `de/`: English, mirroring the root."""
    for page in ("index.md", "setup.md", "contact.md"):
        write(tmp_path, page, EN)
    write(tmp_path, "it/index.md", "The IT department looks after laptops, accounts and the network. " + EN)
    write(tmp_path, "it/setup.md", "Ask the IT desk for a laptop before your first day; they set up your accounts.")
    write(tmp_path, "es/index.md", "Notes on ECMAScript: what each edition of the standard added to the language. " + EN)
    write(tmp_path, "es/setup.md", "Set the target to ES2022 in your tsconfig so that top-level await compiles.")
    write(tmp_path, "de/contact.md", "Our Delaware office is in Wilmington; call the front desk to book a room. " + EN)
    write(tmp_path, "de/index.md", "The Delaware team handles the East Coast customers and the quarterly audits.")
    langs, catalog = languages_of(tmp_path)
    assert catalog.left_out == {} and set(langs.values()) == {"en"} and len(langs) == 9


def test_a_programming_language_in_the_frontmatter_is_not_a_locale(tmp_path):
    for page in ("a.md", "b.md"):
        write(tmp_path, page, EN)
    (tmp_path / "types.md").write_text(f"---\nlanguage: ts\ntitle: Types\n---\n# Types\n\n{EN}\n", encoding="utf-8")
    (tmp_path / "guia.md").write_text(f"---\nlanguage: pt-BR\n---\n# Guia\n\n{EN}\n", encoding="utf-8")
    langs, catalog = languages_of(tmp_path)
    assert langs == {"a.md": "en", "b.md": "en", "types.md": "en"} and catalog.left_out == {"guia.md": "translation"}


def test_english_pages_full_of_italian_dish_names_stay_english(tmp_path):
    for page in ("index.md", "hours.md", "booking.md"):
        write(tmp_path, page, EN)
    (tmp_path / "menu.md").write_text(MENU, encoding="utf-8")
    (tmp_path / "dishes.md").write_text(DISHES, encoding="utf-8")
    langs, catalog = languages_of(tmp_path)
    assert catalog.left_out == {} and langs["menu.md"] == langs["dishes.md"] == "en"


def test_vitepress_locales_with_a_root_language(tmp_path):
    (tmp_path / ".vitepress").mkdir()
    (tmp_path / ".vitepress" / "config.mts").write_text(
        "import { defineConfig } from 'vitepress'\nexport default defineConfig({\n  locales: {\n"
        "    root: { label: 'Deutsch', lang: 'de-DE' },\n    en: { label: 'English', lang: 'en-US', link: '/en/' },\n"
        "  },\n})\n")
    short(tmp_path, "index.md", "Installieren Sie das Werkzeug.")
    short(tmp_path, "guide/start.md", "Los geht's.")
    short(tmp_path, "en/index.md")
    langs, catalog = languages_of(tmp_path)
    assert catalog.default_language == "de-DE" and langs == {"index.md": "de-DE", "guide/start.md": "de-DE"}
    assert catalog.left_out == {"en/index.md": "translation"}
    assert catalog.languages_from == ".vitepress/config.mts locales (default de-DE; en-US)"


@pytest.mark.parametrize("structure, pages, translations", [
    ("suffix", ["index.md", "guide.md", "guide.en.md"], ["index.fr.md", "guide.fr.md", "only.fr.md"]),
    ("folder", ["en/index.md", "en/guide.md"], ["fr/index.md", "fr/only.md"]),
])
def test_mkdocs_static_i18n_suffixes_and_folders(tmp_path, structure, pages, translations):
    (tmp_path / "mkdocs.yml").write_text(
        f"site_name: Docs\nplugins:\n  - search\n  - i18n:\n      docs_structure: {structure}\n      languages:\n"
        "        - locale: en\n          default: true\n          name: English\n        - locale: fr\n          name: Français\n")
    for page in pages:
        short(tmp_path, f"docs/{page}")
    for page in translations:
        short(tmp_path, f"docs/{page}", "Lancez le programme.")
    langs, catalog = languages_of(tmp_path)
    assert langs == {f"docs/{p}": "en" for p in pages}
    assert catalog.left_out == {f"docs/{p}": "translation" for p in translations}
    assert catalog.languages_from == "mkdocs.yml i18n plugin (default en; fr)"


def test_material_theme_language_and_hugo_languages(tmp_path):
    site = tmp_path / "handbuch"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text("site_name: Handbuch\ntheme:\n  name: material\n  language: de\n")
    short(site, "docs/index.md", "Willkommen.")
    langs, catalog = languages_of(site)
    assert catalog.default_language == "de" and langs == {"docs/index.md": "de"}
    blog = tmp_path / "blog"
    blog.mkdir()
    (blog / "hugo.toml").write_text(
        "defaultContentLanguage = 'fr'\n[languages.fr]\n  weight = 1\n[languages.en]\n  languageCode = 'en-GB'\n"
        "[languages.de]\n  contentDir = 'content.de'\n")
    short(blog, "content/posts/hello.md", "Bonjour.")
    short(blog, "content/posts/hello.en.md")
    short(blog, "content.de/posts/hallo.md", "Hallo.")
    langs, catalog = languages_of(blog)
    assert catalog.default_language == "fr" and langs == {"content/posts/hello.md": "fr"}
    assert catalog.left_out == {"content/posts/hello.en.md": "translation", "content.de/posts/hallo.md": "translation"}
    assert catalog.languages == {"fr": 1, "en-GB": 1, "de": 1}
    assert catalog.languages_from == "hugo.toml languages (default fr; en-GB, de)"


def test_without_a_declaration_the_summary_says_the_text_decided(tmp_path):
    for page in ("a.md", "b.md"):
        write(tmp_path, page, EN)
    assert languages_of(tmp_path)[1].languages_from == "the pages' text (default en)"
