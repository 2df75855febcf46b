"""Each page's language from the generator's layout, the frontmatter or the text; the default language;
translations left out unless asked for. Small trees written here."""

import json
from pathlib import Path

import pytest

from rag_assets.ingest.discovery import discover
from rag_assets.ingest.languages import choose_default, detect
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.vocabulary.languages import parse_languages

EN = ("Run the installer from your terminal and follow the prompts. The installer checks your system, downloads "
      "the packages the tool needs and writes a configuration file in your home folder. When it finishes, open a "
      "new terminal and run the version command to check that everything works.")
ES = ("Ejecute el instalador desde su terminal y siga las instrucciones. El instalador comprueba su sistema, "
      "descarga los paquetes que necesita la herramienta y escribe un archivo de configuración en su carpeta "
      "personal. Cuando termine, abra una nueva terminal y ejecute el comando de versión.")
FR = ("Lancez le programme d'installation depuis votre terminal et suivez les instructions. Il vérifie votre "
      "système, télécharge les paquets dont l'outil a besoin et écrit un fichier de configuration dans votre "
      "dossier personnel. Ouvrez ensuite un nouveau terminal et lancez la commande de version.")


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
    (tmp_path / "e.md").write_text("---\nhidden: false\nunlisted: true\n---\n# E\n", encoding="utf-8")
    (tmp_path / "f.md").write_text("---\ntitle: [unclosed\n---\n# F\n", encoding="utf-8")  # the parse stage reports it
    langs, catalog = languages_of(tmp_path)
    assert sorted(langs) == ["a.md", "e.md", "f.md"]
    assert catalog.left_out == {"b.md": "draft", "c.md": "noindex", "d.md": "noindex"}
    langs, catalog = languages_of(tmp_path, ScopeSettings(skip_keys=("unlisted",)))
    assert sorted(langs) == ["a.md", "b.md", "c.md", "d.md", "f.md"] and catalog.left_out == {"e.md": "unlisted"}


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
