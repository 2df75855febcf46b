"""A JavaScript/TypeScript site configuration read as data, never run (rag_assets.ingest.script_config)."""

from __future__ import annotations

from pathlib import Path

from rag_assets.ingest.script_config import UNKNOWN, Call, find_calls, get_path, read_script_config, unwrap
from rag_assets.ingest.site_rules import find_sites


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_docusaurus_commonjs_config_with_a_required_json_and_an_environment_default(tmp_path):
    write(tmp_path, "locales.json", '["fr", "es"]')
    path = write(tmp_path, "docusaurus.config.js", """// @ts-check
const {themes} = require('prism-react-renderer');
const locales = require('./locales.json');
/** @type {import('@docusaurus/types').Config} */
const config = {
  url: 'https://example.com',
  baseUrl: process.env.BASE_URL ?? '/docs/',
  i18n: { defaultLocale: "en", locales: ['en', ...locales] },
  presets: [['classic', /** @type {any} */ ({ docs: { routeBasePath: '/', lastVersion: 'current',
      sidebarPath: require.resolve('./sidebars.js'), versions: { current: { label: `Next` } } } })]],
  themeConfig: { prism: { theme: themes.github } },
};
module.exports = config;
""")
    config = read_script_config(path)
    assert config["i18n"] == {"defaultLocale": "en", "locales": ["en", "fr", "es"]}
    assert config["baseUrl"] == "/docs/"  # the environment is unknown: the written default
    docs = config["presets"][0][1]["docs"]
    assert docs["routeBasePath"] == "/" and docs["versions"] == {"current": {"label": "Next"}}
    assert docs["sidebarPath"] == Call("require.resolve", ("./sidebars.js",))
    assert config["themeConfig"]["prism"]["theme"] is UNKNOWN  # a package's value is not read


def test_an_exported_async_function_returning_the_config(tmp_path):
    path = write(tmp_path, "docusaurus.config.ts", """import type {Config} from '@docusaurus/types';
const defaultLocale = 'ko';
export default async function createConfigAsync(): Promise<Config> {
  const isDev = process.env.NODE_ENV === 'development';
  const base = '/site/';
  return { baseUrl: base, i18n: { defaultLocale, locales: [defaultLocale, 'en'] }, onBrokenLinks: isDev ? 'warn' : 'throw' };
}
""")
    config = read_script_config(path)
    assert config["baseUrl"] == "/site/"
    assert config["i18n"] == {"defaultLocale": "ko", "locales": ["ko", "en"]}
    assert config["onBrokenLinks"] is UNKNOWN


def test_an_astro_config_with_starlight_and_locales_imported_from_a_typescript_module(tmp_path):
    write(tmp_path, "src/i18n/locales.ts", """export const locales = {
  root: { label: 'English', lang: 'en' },
  'zh-cn': { label: '简体中文', lang: 'zh-CN' },
} as const;
""")
    path = write(tmp_path, "astro.config.mjs", """import { defineConfig } from 'astro/config';
import starlight from '@astrojs/starlight';
import { locales } from './src/i18n/locales';
const site = 'https://docs.example.dev';
export default defineConfig({
  site,
  base: "/docs",
  integrations: [starlight({ title: 'X', defaultLocale: 'root', locales, pagefind: true })],
});
""")
    value = read_script_config(path)
    assert isinstance(value, Call) and value.name == "defineConfig"
    config = unwrap(value)
    assert config["site"] == "https://docs.example.dev" and config["base"] == "/docs"
    (starlight,) = find_calls(config, "starlight")
    options = starlight.first_object()
    assert options["defaultLocale"] == "root"
    assert options["locales"]["zh-cn"] == {"label": "简体中文", "lang": "zh-CN"}
    assert get_path(value, "integrations") == [starlight]


def test_a_vitepress_config_wrapped_twice_and_returned_by_an_arrow(tmp_path):
    path = write(tmp_path, ".vitepress/config.mts", """import { defineConfig } from 'vitepress'
import { withMermaid } from 'vitepress-plugin-mermaid'
export default async () => withMermaid(defineConfig({ base: '/vp/', cleanUrls: true,
  locales: { root: { label: 'English', lang: 'en-US' }, fr: { label: 'Français', lang: 'fr', link: '/fr/' } } }))
""")
    config = unwrap(read_script_config(path))
    assert config["base"] == "/vp/" and config["cleanUrls"] is True
    assert sorted(config["locales"]) == ["fr", "root"]


def test_what_is_code_stays_unknown_and_nothing_is_raised(tmp_path):
    computed = write(tmp_path, "a.config.js", """const lang = 'en';
const self = self;
module.exports = { title: `Docs in ${lang}`, [lang]: 1, locales: getLocales(), loop: self, n: 0x10, e: 'a\\u00e9\\n' };
""")
    config = read_script_config(computed)
    assert config["title"] is UNKNOWN and "en" not in config and config["loop"] is UNKNOWN
    assert config["locales"] == Call("getLocales", ()) and config["n"] == 16 and config["e"] == "a\u00e9\n"
    broken = write(tmp_path, "b.config.ts", "export default { i18n: { defaultLocale: 'fr', ")
    assert isinstance(read_script_config(broken), (dict, type(UNKNOWN)))  # parsed as far as it goes, no error
    assert read_script_config(tmp_path / "missing.config.js") is UNKNOWN
    assert read_script_config(write(tmp_path, "c.json", "{}")) is UNKNOWN  # not a script


def test_find_sites_reads_a_script_configuration_into_the_site(tmp_path):
    write(tmp_path, "website/docusaurus.config.js", "module.exports = { i18n: { defaultLocale: 'de', locales: ['de'] } };")
    write(tmp_path, "website/docs/intro.md", "# Intro\n")
    write(tmp_path, "site2/astro.config.mjs", "export default { site: 'https://x.dev' }")
    write(tmp_path, "site2/src/content/docs/index.md", "# Home\n")
    write(tmp_path, "site3/.vitepress/config/index.ts", "export default { base: '/three/' }")
    sites = {site.generator: site for site in find_sites(tmp_path)}
    assert sites["docusaurus"].config["i18n"]["defaultLocale"] == "de"
    assert sites["starlight"].config == {"site": "https://x.dev"}
    assert sites["vitepress"].config == {"base": "/three/"}
