"""Where each page of a site sits (site_path, module, chapter) and the address it is published at (route,
url), by each generator's own rules, on small repositories shaped like real ones."""

import json

from rag_assets.ingest.scope import ScopeSettings
from rag_assets.ingest.site_urls import docusaurus_slug, starlight_id
from rag_assets_tests.support.site_tree import pages, routes, write_all

DOCUSAURUS_CONFIG = """
module.exports = {
  url: 'https://example.org',
  baseUrl: '/project/',
  i18n: { defaultLocale: 'en', locales: ['en', 'fr'] },
  presets: [['classic', { docs: { routeBasePath: 'guide' }, blog: { showReadingTime: true } }]],
  plugins: [['@docusaurus/plugin-content-docs', { id: 'community', path: 'community', routeBasePath: 'community' }]],
};
"""


def test_docusaurus_slugs_number_prefixes_ids_and_category_indexes(tmp_path):
    write_all(tmp_path, {
        "docusaurus.config.js": DOCUSAURUS_CONFIG,
        "docs/01-intro.md": "# Intro\n",
        "docs/02-guides/index.md": "# Guides\n",
        "docs/02-guides/03-install.md": "# Install\n",
        "docs/02-guides/renamed.md": "---\nid: configured\n---\n# Configure\n",
        "docs/02-guides/relative.md": "---\nslug: elsewhere\n---\n# Relative\n",
        "docs/02-guides/absolute.md": "---\nslug: /top/level\n---\n# Absolute\n",
        "docs/api/api.md": "# API\n",
        "docs/2021-01-notes.md": "# A date, not a number prefix\n",
        "blog/2024-03-05-launch.md": "# Launch\n",
        "community/team.md": "# Team\n",
        "src/pages/about.md": "# About\n",
        "i18n/fr/docusaurus-plugin-content-docs/current/01-intro.md": "# Introduction\n\n" + "Bonjour le monde. " * 30,
    })
    found, _ = pages(tmp_path, ScopeSettings(default_language="en"))
    assert {path: meta["route"] for path, meta in found.items()} == {
        "docs/01-intro.md": "/project/guide/intro",
        "docs/02-guides/index.md": "/project/guide/guides/",
        "docs/02-guides/03-install.md": "/project/guide/guides/install",
        "docs/02-guides/renamed.md": "/project/guide/guides/configured",
        "docs/02-guides/relative.md": "/project/guide/guides/elsewhere",
        "docs/02-guides/absolute.md": "/project/guide/top/level",
        "docs/api/api.md": "/project/guide/api/",
        "docs/2021-01-notes.md": "/project/guide/2021-01-notes",
        "blog/2024-03-05-launch.md": "/project/blog/2024/03/05/launch",
        "community/team.md": "/project/community/team",
        "src/pages/about.md": "/project/about",
    }
    assert found["docs/02-guides/03-install.md"]["url"] == "https://example.org/project/guide/guides/install"
    # the docs plugin's folder is the content root: module and chapter as if pointed at docs/
    install = found["docs/02-guides/03-install.md"]
    assert (install["site_path"], install["module"], install["doc_type"]) == ("02-guides/03-install.md", "02-guides",
                                                                              "02-guides")
    assert found["community/team.md"]["site_path"] == "community/team.md"
    french, _ = pages(tmp_path, ScopeSettings(languages=("all",)))
    intro = french["i18n/fr/docusaurus-plugin-content-docs/current/01-intro.md"]
    assert (intro["route"], intro["site_path"]) == ("/project/fr/guide/intro", "01-intro.md")


def test_docusaurus_slug_rules_alone():
    assert docusaurus_slug("guides/guides.md", {}) == "/guides/"
    assert docusaurus_slug("Guides/README.md", {}) == "/Guides/"
    assert docusaurus_slug("a/b.md", {"slug": "../c"}) == "/c"
    assert docusaurus_slug("1.0-release.md", {}) == "/1.0-release"  # a version, not a number prefix
    assert docusaurus_slug("01-a/02-b.md", {"parse_number_prefixes": False}) == "/01-a/02-b"


def test_a_starlight_site_at_the_repository_root(tmp_path):
    """Pointed at the repository: module, chapter and site_path as if pointed at src/content/docs (issue 42,
    item 5: every page had module=src, chapter=content); the locale folder is not part of site_path."""
    write_all(tmp_path, {
        "astro.config.mjs": "import starlight from '@astrojs/starlight';\nexport default {\n"
                            "  site: 'https://docs.example.org', base: '/docs', trailingSlash: 'always',\n"
                            "  integrations: [starlight({ title: 'X', defaultLocale: 'en', locales: {"
                            " en: { label: 'English' }, fr: { label: 'Français', lang: 'fr' } } })],\n};\n",
        "src/content.config.ts": "export const collections = {};\n",
        "README.md": "# Repository readme\n",
        "src/content/docs/en/index.mdx": "---\ntitle: Home\n---\nWelcome.\n",
        "src/content/docs/en/plugin/foo.mdx": "---\ntitle: Foo\n---\nThe foo plugin.\n",
        "src/content/docs/en/plugin/Sub Folder/Bar Page.md": "# Bar\n",
        "src/content/docs/en/guides/custom.md": "---\ntitle: Custom\nslug: en/elsewhere/custom\n---\nText.\n",
        "src/content/docs/fr/plugin/foo.mdx": "---\ntitle: Foo\n---\n" + "Le greffon foo fait ceci. " * 20,
    })
    found, left_out = pages(tmp_path)
    assert left_out["README.md"] == "outside_content"
    assert found["src/content/docs/en/plugin/foo.mdx"] == {
        "site_path": "plugin/foo.mdx", "module": "plugin", "doc_type": "plugin",
        "route": "/docs/en/plugin/foo/", "url": "https://docs.example.org/docs/en/plugin/foo/"}
    assert found["src/content/docs/en/plugin/Sub Folder/Bar Page.md"]["route"] == "/docs/en/plugin/sub-folder/bar-page/"
    assert found["src/content/docs/en/plugin/Sub Folder/Bar Page.md"]["chapter"] == "Sub Folder"
    assert found["src/content/docs/en/index.mdx"]["route"] == "/docs/en/"
    assert found["src/content/docs/en/guides/custom.md"]["route"] == "/docs/en/elsewhere/custom/"
    assert starlight_id("index.mdx") == "" and starlight_id("A/What's New?.md") == "a/whats-new"


def test_mkdocs_directory_urls_site_url_and_material_blog_posts(tmp_path):
    write_all(tmp_path, {
        "mkdocs.yml": "site_name: x\nsite_url: https://example.org/manual/\nplugins:\n  - blog\n  - search\n",
        "docs/index.md": "# Home\n",
        "docs/setup/index.md": "# Setup\n",
        "docs/setup/colors.md": "# Colors\n",
        "docs/reference/README.md": "# Reference\n",
        "docs/blog/posts/launch.md": "---\ndate: 2024-03-05\n---\n# We're launching `v2` today!\n",
        "docs/blog/posts/sluggy.md": "---\ndate:\n  created: 2023-01-02\nslug: chosen\n---\n# Whatever\n",
    })
    assert routes(tmp_path) == {
        "docs/index.md": "/manual/", "docs/setup/index.md": "/manual/setup/", "docs/setup/colors.md": "/manual/setup/colors/",
        "docs/reference/README.md": "/manual/reference/",
        "docs/blog/posts/launch.md": "/manual/blog/2024/03/05/were-launching-v2-today/",
        "docs/blog/posts/sluggy.md": "/manual/blog/2023/01/02/chosen/"}
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nuse_directory_urls: false\n")
    assert routes(tmp_path)["docs/setup/colors.md"] == "/setup/colors.html"
    assert routes(tmp_path)["docs/setup/index.md"] == "/setup/index.html"


def test_vitepress_src_dir_base_clean_urls_and_its_own_exclusions(tmp_path):
    write_all(tmp_path, {
        "docs/.vitepress/config.ts": "import { defineConfig } from 'vitepress'\nexport default defineConfig({\n"
                                     "  base: '/handbook/', srcDir: 'src', cleanUrls: true,\n"
                                     "  srcExclude: ['**/README.md', 'drafts/**'],\n"
                                     "  sitemap: { hostname: 'https://example.org' },\n})\n",
        "docs/src/index.md": "# Home\n",
        "docs/src/guide/start.md": "# Start\n",
        "docs/src/guide/README.md": "# Notes for contributors\n",
        "docs/src/drafts/next.md": "# Next\n",
        "docs/src/404.md": "# Not found\n",
        "docs/notes.md": "# Outside srcDir\n",
    })
    found, left_out = pages(tmp_path)
    assert {p: m["route"] for p, m in found.items()} == {"docs/src/index.md": "/handbook/",
                                                        "docs/src/guide/start.md": "/handbook/guide/start"}
    assert found["docs/src/guide/start.md"]["url"] == "https://example.org/handbook/guide/start"
    assert left_out == {"docs/src/guide/README.md": "site_exclude", "docs/src/drafts/next.md": "site_exclude",
                        "docs/src/404.md": "error_page", "docs/notes.md": "outside_content"}
    (tmp_path / "docs/.vitepress/config.ts").write_text("export default {}\n")  # srcDir unset: src/ is a folder
    assert routes(tmp_path)["docs/src/guide/start.md"] == "/src/guide/start.html"


def test_hugo_sections_bundles_slugs_urls_and_languages(tmp_path):
    write_all(tmp_path, {
        "hugo.toml": 'baseURL = "https://example.org/site/"\ndefaultContentLanguage = "en"\n'
                     '[languages.en]\ncontentDir = "content/en"\n[languages.de]\ncontentDir = "content/de"\n',
        "content/en/_index.md": "+++\ntitle = 'Home'\n+++\n",
        "content/en/Docs/_index.md": "# Docs\n",
        "content/en/Docs/Getting-Started.md": "# Start\n",
        "content/en/docs/renamed.md": "---\nslug: new-name\n---\n# Renamed\n",
        "content/en/docs/moved.md": "---\nurl: /elsewhere/moved/\n---\n# Moved\n",
        "content/en/posts/trip/index.md": "# Trip\n",
        "content/en/posts/trip/notes.md": "# A resource of the trip bundle\n",
        "content/de/docs/start.md": "# Anfang\n\n" + "Das ist ein Satz auf Deutsch. " * 20,
    })
    found, left_out = pages(tmp_path, ScopeSettings(languages=("all",)))
    assert {p: m.get("route") for p, m in found.items()} == {
        "content/en/_index.md": "/site/", "content/en/Docs/_index.md": "/site/docs/",
        "content/en/Docs/Getting-Started.md": "/site/docs/getting-started/",
        "content/en/docs/renamed.md": "/site/docs/new-name/", "content/en/docs/moved.md": "/site/elsewhere/moved/",
        "content/en/posts/trip/index.md": "/site/posts/trip/", "content/de/docs/start.md": "/site/de/docs/start/"}
    assert left_out == {"content/en/posts/trip/notes.md": "page_resource"}
    assert found["content/en/Docs/Getting-Started.md"]["site_path"] == "Docs/Getting-Started.md"


def test_mintlify_routes_and_a_frontmatter_url_that_does_not_win(tmp_path):
    write_all(tmp_path, {
        "docs.json": json.dumps({"navigation": {"groups": [{"group": "G", "pages": ["index", "api/keys"]}]}}),
        "index.mdx": "---\ntitle: Home\n---\nHi.\n",
        "api/keys.mdx": "---\ntitle: Keys\nurl: https://elsewhere.example\nroute: /nope\n---\nKeys.\n",
    })
    found, _ = pages(tmp_path)
    assert found["api/keys.mdx"] == {"site_path": "api/keys.mdx", "module": "api", "doc_type": "api",
                                     "route": "/api/keys", "url": "/api/keys"}
    assert found["index.mdx"]["route"] == "/"


def test_a_folder_that_is_no_site_keeps_its_metadata_and_gains_site_path_only(tmp_path):
    write_all(tmp_path, {"module-1/chapter-2/page.md": "# Page\n", "top.md": "---\nurl: https://a.example/x\n---\n# Top\n"})
    found, _ = pages(tmp_path)
    assert found["module-1/chapter-2/page.md"] == {"site_path": "module-1/chapter-2/page.md", "module": "module-1",
                                                  "chapter": "chapter-2", "doc_type": "module-1"}
    assert found["top.md"] == {"site_path": "top.md", "doc_type": "document", "url": "https://a.example/x"}
