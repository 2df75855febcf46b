"""What a generator's configuration declares of its languages, read from real configuration files
written here (JavaScript and TypeScript read as data, never run)."""

from pathlib import Path

from rag_assets.ingest.locale_config import declared
from rag_assets.ingest.site_rules import find_sites


def site_in(root: Path, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return find_sites(root)[0]


def test_docusaurus_locale_configs_name_the_code_and_the_folder(tmp_path):
    site = site_in(tmp_path / "web", {"docusaurus.config.ts": (
        "import type {Config} from '@docusaurus/types';\n"
        "const config: Config = {i18n: {defaultLocale: 'zh-Hans', locales: ['zh-Hans', 'en', 'pt'],\n"
        "  localeConfigs: {en: {htmlLang: 'en-GB'}, pt: {path: 'portugues', htmlLang: 'pt-BR'}}}};\n"
        "export default config;\n")})
    found = declared(site)
    assert (found.default, found.codes) == ("zh-Hans", ("zh-Hans", "en-GB", "pt-BR"))
    assert found.docusaurus_i18n == {"zh-Hans": "zh-Hans", "en": "en-GB", "portugues": "pt-BR"}
    assert found.describe() == "docusaurus.config.ts i18n (default zh-Hans; en-GB, pt-BR)"


def test_a_configuration_that_says_nothing_of_languages_declares_nothing(tmp_path):
    """Docusaurus falls back to English: that would label a Chinese site English."""
    assert declared(site_in(tmp_path / "a", {"docusaurus.config.js": "module.exports = {title: 'Docs'};\n"})) is None
    computed = "const locale = process.env.LOCALE;\nmodule.exports = {i18n: {defaultLocale: locale, locales: [locale]}};\n"
    assert declared(site_in(tmp_path / "b", {"docusaurus.config.js": computed})) is None
    assert declared(site_in(tmp_path / "c", {"mkdocs.yml": "site_name: x\ntheme: material\n"})) is None


def test_astro_i18n_with_paths_and_codes_when_starlight_has_no_locales(tmp_path):
    site = site_in(tmp_path, {
        "astro.config.mjs": ("import starlight from '@astrojs/starlight';\nexport default {\n"
                             "  i18n: {defaultLocale: 'en', locales: ['en', 'es', {path: 'portugues', codes: ['pt-BR', 'pt']}]},\n"
                             "  integrations: [starlight({title: 'Docs'})],\n};\n"),
        "src/content/docs/index.md": "# Home\n"})
    found = declared(site)
    assert found.default == "en" and found.folders == {"src/content/docs/es": "es", "src/content/docs/portugues": "pt-BR"}
