"""Where each page of a site sits and the address it is published at (paths and configuration only;
the frontmatter's part is applied when the page is parsed).

Every page carries ``site_path``: its path relative to its site's content root, with the locale and
version folders taken off (``src/content/docs/en/plugin/foo.mdx`` -> ``plugin/foo.mdx``,
``versioned_docs/version-2.0/guides/x.md`` -> ``guides/x.md``,
``i18n/fr/docusaurus-plugin-content-docs/current/x.md`` -> ``x.md``); outside a site it is the page's
path in the docs folder. Its ``module`` and ``chapter`` are the first and second folder of ``site_path``,
so a site pointed at from its repository's root reads as if pointed at its docs folder.

A page of a site also carries ``route``, the URL path it is published at, and ``url``, the site's base
URL (Docusaurus ``url``, Astro ``site``, MkDocs ``site_url``, Hugo ``baseURL``, VitePress
``sitemap.hostname``) joined with the route, else the route. The rules, each generator's own:

- **Docusaurus** docs: the plugin's ``routeBasePath``, the version's route part (rag_assets.ingest.versions),
  the doc's slug: its folders and file name without number prefixes (``01-intro.md`` -> ``intro``; not a
  date or version such as ``2021-01`` or ``1.0-x``), the frontmatter ``id`` instead of the file name, a
  folder's ``index``/``README``/same-named page at the folder's route, the frontmatter ``slug`` (absolute,
  or relative to the page's folder). Blog posts: ``YYYY-MM-DD-name.md`` at ``/blog/YYYY/MM/DD/name``;
  ``src/pages``: the path. All under ``baseUrl`` and, for a locale other than ``defaultLocale``,
  ``/<locale>``; ``trailingSlash: true`` adds ``/``.
- **Starlight**: the page's id, each folder and the file name slugged as Astro does (lower case,
  punctuation dropped, spaces as ``-``), ``index`` dropped, or the frontmatter ``slug``; under Astro's
  ``base``; a trailing ``/`` unless ``trailingSlash: 'never'``.
- **VitePress**: the path under ``srcDir`` (``rewrites`` written as a plain mapping applied), ``index.md``
  at its folder's route, ``.html`` unless ``cleanUrls``; under ``base``.
- **MkDocs**: ``page/`` (``use_directory_urls``, the default) or ``page.html``; ``index.md`` and
  ``README.md`` at the folder's route; under ``site_url``'s path. Material's blog plugin: a post under
  ``<blog_dir>/posts/`` at ``<blog_dir>/<post_url_format>`` (``{date}/{slug}``: its frontmatter ``date``
  as ``yyyy/MM/dd``, its ``slug`` or its title slugged).
- **Hugo**: ``section/page/``; ``_index.md`` and a leaf bundle's ``index.md`` at their folder's route; the
  frontmatter ``slug`` for the last part and ``url`` for the whole route (Hugo's own rule: that
  frontmatter value *is* the route); lower case unless ``disablePathToLower``; ``uglyURLs``; a language
  other than the default under ``/<lang>``; under ``baseURL``'s path.
- **Mintlify**: the page's path without its extension, ``index`` at its folder's route.

What a page's frontmatter changes (Docusaurus ``slug``/``id``, Starlight ``slug``, Hugo ``slug``/``url``)
is applied by `address` when the page is parsed; the rest is computed over the folder (`place_all`) and
kept on the page's catalog entry (``DocumentRef.place``, JSON).
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
import re
import unicodedata
from dataclasses import replace
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from rag_assets.ingest.languages import Layout
from rag_assets.ingest.script_config import find_calls, get_path
from rag_assets.ingest.sites import DocsPlugin, Site, below, docusaurus_plugins, rel
from rag_assets.ingest.versions import SiteVersions
from rag_assets.models import DocumentRef
from rag_assets.vocabulary.languages import language_code

PLACE_VERSION = 1
_MARKDOWN_EXT = re.compile(r"\.(md|mdx|markdown)$", re.IGNORECASE)
_NUMBER_PREFIX = re.compile(r"^(?P<number>\d+)\s*[-_.]+\s*(?P<rest>[^-_.\s].*)$")
_NOT_A_NUMBER_PREFIX = re.compile(r"^\d+[-_.]\d+")  # a date or a version: 2021-01-x, 1.0-x
_BLOG_DATE = re.compile(r"^(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})[-/]?(?P<text>.*?)(?:/index)?$")
_SLUG_DROPPED = re.compile(r"[^\w\- ]", re.UNICODE)


# ----------------------------------------------------------------------------------------------
# the place of every page, over the folder


def place_all(refs: list[DocumentRef], sites: list[Site], versions: SiteVersions, layout: Layout) -> list[DocumentRef]:
    """The refs with their `place` (JSON: site_path, version, and what their route is made of) and their
    module/chapter from their site path."""
    out = []
    for ref in refs:
        place = place_of(ref.doc_path, sites, versions, layout)
        parts = PurePosixPath(place["site_path"]).parts
        module = parts[0] if len(parts) > 1 else None
        chapter = parts[1] if len(parts) > 2 else None
        encoded = json.dumps(place, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        if (ref.place, ref.module, ref.chapter) != (encoded, module, chapter):
            ref = replace(ref, place=encoded, module=module, chapter=chapter)
        out.append(ref)
    return out


def place_of(doc_path: str, sites: list[Site], versions: SiteVersions, layout: Layout) -> dict:
    """A page's place: {"v", "site_path", "version"?, "kind"?, "prefix"?, "source"?, "origin"?, "slash"?}."""
    place: dict = {"v": PLACE_VERSION, "site_path": doc_path}
    site = next((s for s in sites if below(doc_path, s.root) is not None and any(
        below(doc_path, c) is not None for c in s.content)), None)
    if site is None:
        return place
    found = versions.of(doc_path)
    if found is not None:
        place["version"] = found[0].name
    builder = _BUILDERS.get(site.generator)
    if builder is not None:
        place.update(builder(doc_path, site, versions, layout) or {})
    return place


def _origin(url) -> tuple[str, str]:
    """(scheme://host, path) of a base URL; ("", "") when it is not one."""
    if not isinstance(url, str) or "://" not in url:
        return "", ""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return "", ""
    return f"{parts.scheme}://{parts.netloc}", parts.path


def _join(*parts: str) -> str:
    """URL path parts joined with single slashes, starting with "/"."""
    joined = "/".join(p.strip("/") for p in parts if p and p.strip("/"))
    return "/" + joined


def _strip_locale(inside: str, doc_path: str, locales: set[str], layout: Layout) -> tuple[str, str]:
    """(the path without its locale folder, the locale) for a path inside a content folder whose top
    folder is a locale the site declares (or the layout found)."""
    top, _, rest = inside.partition("/")
    if rest and (top in locales or (not locales and layout.language_of(doc_path) and language_code(top))):
        return rest, top
    return inside, ""


# -- Docusaurus --------------------------------------------------------------------------------


def _docusaurus(doc_path: str, site: Site, versions: SiteVersions, layout: Layout) -> dict | None:
    inside = below(doc_path, site.root)
    config = site.config
    origin, _ = _origin(config.get("url"))
    base_url = config.get("baseUrl") if isinstance(config.get("baseUrl"), str) else "/"
    default_locale = get_path(config, "i18n", "defaultLocale")
    trailing = config.get("trailingSlash")
    plugins = docusaurus_plugins(config)
    locale, source = "", inside
    if inside.startswith("i18n/"):
        parts = inside.split("/")
        if len(parts) < 4:
            return None
        locale, folder, source = parts[1], parts[2], "/".join(parts[3:])
        if folder.startswith("docusaurus-plugin-content-docs"):
            plugin_id = folder.removeprefix("docusaurus-plugin-content-docs-") if folder.startswith(
                "docusaurus-plugin-content-docs-") else "default"
            plugin = next((p for p in plugins.docs if p.id == plugin_id), DocsPlugin(plugin_id, plugin_id, plugin_id))
            source = source.partition("/")[2]  # current/ or version-x/
            return _docusaurus_doc(site, plugin, source, doc_path, versions, base_url, locale, default_locale, origin, trailing)
        if folder.startswith("docusaurus-plugin-content-blog"):
            blog = plugins.blogs[0] if plugins.blogs else ("blog", "blog")
            return _docusaurus_blog(blog, source, base_url, locale, default_locale, origin, trailing)
        if folder.startswith("docusaurus-plugin-content-pages"):
            return _docusaurus_page("src/pages", source, base_url, locale, default_locale, origin, trailing)
        return None
    for plugin in plugins.docs:
        for folder in (plugin.path, plugin.prefixed("versioned_docs")):
            within = below(inside, folder)
            if within is None:
                continue
            if folder != plugin.path:
                within = within.partition("/")[2]  # version-x/
            return _docusaurus_doc(site, plugin, within, doc_path, versions, base_url, "", default_locale, origin, trailing)
    for blog in plugins.blogs:
        within = below(inside, blog[0])
        if within is not None:
            return _docusaurus_blog(blog, within, base_url, "", default_locale, origin, trailing)
    for pages in plugins.pages:
        within = below(inside, pages)
        if within is not None:
            return _docusaurus_page(pages, within, base_url, "", default_locale, origin, trailing)
    return None


def _locale_part(locale: str, default_locale) -> str:
    return locale if locale and locale != default_locale else ""


def _slash(trailing) -> str:
    return "always" if trailing is True else "never" if trailing is False else ""


def _docusaurus_doc(site: Site, plugin: DocsPlugin, source: str, doc_path: str, versions: SiteVersions, base_url: str,
                    locale: str, default_locale, origin: str, trailing) -> dict:
    found = versions.of(doc_path)
    version_route = found[0].route if found is not None else ""
    prefix = _join(base_url, _locale_part(locale, default_locale), plugin.route_base, version_route)
    site_path = source if plugin.id == "default" else f"{plugin.path}/{source}"
    return {"site_path": site_path, "kind": "docusaurus-doc", "prefix": prefix, "source": source, "origin": origin,
            "slash": _slash(trailing)}


def _docusaurus_blog(blog: tuple[str, str], source: str, base_url: str, locale: str, default_locale, origin: str,
                     trailing) -> dict:
    prefix = _join(base_url, _locale_part(locale, default_locale), blog[1])
    return {"site_path": f"{blog[0]}/{source}", "kind": "docusaurus-blog", "prefix": prefix, "source": source,
            "origin": origin, "slash": _slash(trailing)}


def _docusaurus_page(folder: str, source: str, base_url: str, locale: str, default_locale, origin: str,
                     trailing) -> dict:
    prefix = _join(base_url, _locale_part(locale, default_locale))
    return {"site_path": source, "kind": "path", "prefix": prefix, "source": source, "origin": origin,
            "slash": _slash(trailing), "ext": ""}


def _strip_number(segment: str) -> str:
    if _NOT_A_NUMBER_PREFIX.match(segment):
        return segment
    match = _NUMBER_PREFIX.match(segment)
    return match.group("rest") if match else segment


def docusaurus_slug(source: str, front: dict) -> str:
    """A doc's slug (Docusaurus' getSlug): from its path inside its version folder and its frontmatter."""
    parse_numbers = front.get("parse_number_prefixes") is not False
    stem = _MARKDOWN_EXT.sub("", PurePosixPath(source).name)
    directory = posixpath.dirname(source)
    base_id = str(front["id"]) if isinstance(front.get("id"), (str, int)) and str(front.get("id")) else (
        _strip_number(stem) if parse_numbers else stem)
    dir_slug = "/" if not directory else "/" + "/".join(
        _strip_number(s) if parse_numbers else s for s in directory.split("/")) + "/"
    slug = front.get("slug")
    slug = str(slug) if isinstance(slug, (str, int)) and str(slug) else None
    if slug is not None and slug.startswith("/"):
        return slug
    parent = directory.rsplit("/", 1)[-1].lower() if directory else None
    if slug is None and stem.lower() in ("index", "readme", parent):
        return dir_slug
    return posixpath.normpath(posixpath.join(dir_slug, slug if slug is not None else base_id))


def _blog_slug(source: str, front: dict) -> str:
    slug = front.get("slug")
    if isinstance(slug, str) and slug:
        return slug
    path = _MARKDOWN_EXT.sub("", source)
    match = _BLOG_DATE.match(path)
    if match:
        text = match.group("text")
        return f"/{match.group('y')}/{int(match.group('m')):02d}/{int(match.group('d')):02d}/{text}"
    return "/" + re.sub(r"(^|/)index$", "", path)


# -- Starlight ---------------------------------------------------------------------------------


def _starlight(doc_path: str, site: Site, versions: SiteVersions, layout: Layout) -> dict:
    content = site.content[0]
    inside = below(doc_path, content)
    options = next((c.first_object() for c in find_calls(site.config, "starlight")), {})
    locales = options.get("locales") if isinstance(options.get("locales"), dict) else {}
    declared = {k for k in locales if k != "root"}
    site_path, _ = _strip_locale(inside, doc_path, declared, layout)
    origin, _ = _origin(site.config.get("site"))
    base = site.config.get("base") if isinstance(site.config.get("base"), str) else ""
    trailing = site.config.get("trailingSlash")
    return {"site_path": site_path, "kind": "starlight", "prefix": _join(base), "source": inside, "origin": origin,
            "slash": "never" if trailing == "never" else "always"}


def starlight_id(source: str) -> str:
    """A page's id as Astro's glob loader makes it (github-slugger on each part, `/index` dropped)."""
    path = _MARKDOWN_EXT.sub("", source)
    slug = "/".join(_SLUG_DROPPED.sub("", part.lower()).replace(" ", "-") for part in path.split("/"))
    slug = re.sub(r"/index$", "", slug)
    return "" if slug == "index" else slug


# -- VitePress ---------------------------------------------------------------------------------


def _vitepress(doc_path: str, site: Site, versions: SiteVersions, layout: Layout) -> dict:
    content = site.content[0]
    inside = below(doc_path, content)
    config = site.config
    rewrites = config.get("rewrites") if isinstance(config.get("rewrites"), dict) else {}
    source = rewrites.get(inside) if isinstance(rewrites.get(inside), str) else inside
    locales = config.get("locales") if isinstance(config.get("locales"), dict) else {}
    declared = {k.strip("/") for k in locales if k != "root"}
    site_path, _ = _strip_locale(inside, doc_path, declared, layout)
    origin, _ = _origin(get_path(config, "sitemap", "hostname"))
    base = config.get("base") if isinstance(config.get("base"), str) else ""
    return {"site_path": site_path, "kind": "path", "prefix": _join(base), "source": source, "origin": origin,
            "ext": "" if config.get("cleanUrls") is True else ".html", "slash": "index"}


# -- MkDocs ------------------------------------------------------------------------------------


def _mkdocs(doc_path: str, site: Site, versions: SiteVersions, layout: Layout) -> dict:
    inside = below(doc_path, site.content[0])
    origin, path = _origin(site.config.get("site_url"))
    directory_urls = site.config.get("use_directory_urls") is not False
    place = {"site_path": inside, "kind": "mkdocs", "prefix": _join(path), "source": inside, "origin": origin,
             "ext": "" if directory_urls else ".html", "slash": "always" if directory_urls else "index"}
    blog = _material_blog(site.config)
    if blog is not None and below(inside, f"{blog['blog_dir']}/posts") is not None:
        place.update(kind="mkdocs-post", **blog)
    return place


def _material_blog(config: dict) -> dict | None:
    """Material for MkDocs' blog plugin (`plugins: [blog]`): its folder and how a post's URL is made."""
    for plugin in config.get("plugins") or []:
        name, options = (plugin, {}) if isinstance(plugin, str) else next(iter(plugin.items()), ("", {})) \
            if isinstance(plugin, dict) else ("", {})
        if name in ("blog", "material/blog"):
            options = options if isinstance(options, dict) else {}
            if options.get("enabled") is False:
                return None
            return {"blog_dir": str(options.get("blog_dir") or "blog").strip("/") or ".",
                    "url_format": str(options.get("post_url_format") or "{date}/{slug}"),
                    "date_format": str(options.get("post_url_date_format") or "yyyy/MM/dd")}
    return None


def mkdocs_slugify(text: str) -> str:
    """Python-Markdown's toc.slugify (the blog plugin's default for a post's slug)."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def _post_date(front: dict) -> dt.date | None:
    value = front.get("date")
    if isinstance(value, dict):
        value = value.get("created")
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def _material_post(place: dict, front: dict, title: str) -> str | None:
    date = _post_date(front)
    slug = front.get("slug") if isinstance(front.get("slug"), str) and front.get("slug") else mkdocs_slugify(
        re.sub(r"`([^`]*)`", r"\1", title or ""))
    if date is None or not slug:
        return None
    shown = (place["date_format"].replace("yyyy", f"{date.year:04d}").replace("MM", f"{date.month:02d}")
             .replace("dd", f"{date.day:02d}"))
    categories = front.get("categories") if isinstance(front.get("categories"), list) else []
    path = (place["url_format"].replace("{date}", shown).replace("{slug}", slug)
            .replace("{categories}", "/".join(mkdocs_slugify(str(c)) for c in categories)))
    blog_dir = "" if place["blog_dir"] == "." else place["blog_dir"]
    return _finish(place.get("prefix", "/"), _join(blog_dir, path), place.get("slash", ""), True)


# -- Hugo --------------------------------------------------------------------------------------


def _hugo(doc_path: str, site: Site, versions: SiteVersions, layout: Layout) -> dict:
    config = site.config
    content = max((c for c in site.content if below(doc_path, c) is not None), key=len)  # a language's own, first
    inside = below(doc_path, content)
    origin, path = _origin(config.get("baseURL") or config.get("baseurl"))
    default = str(config.get("defaultContentLanguage") or config.get("defaultcontentlanguage") or "en")
    language = layout.language_of(doc_path)
    lang_prefix = ""
    for code, lang in (config.get("languages") or {}).items():
        if isinstance(lang, dict) and lang.get("contentDir") and rel(site.root, str(lang["contentDir"])) == content:
            if code != default or config.get("defaultContentLanguageInSubdir") is True:
                lang_prefix = code
    if not lang_prefix and language and language_code(language) and language.lower() != default.lower() and \
            any(str(k).lower() == language.lower() for k in (config.get("languages") or {})):
        lang_prefix = language.lower()
    return {"site_path": inside, "kind": "hugo", "prefix": _join(path, lang_prefix), "source": inside, "origin": origin,
            "lower": config.get("disablePathToLower") is not True, "ext": ".html" if config.get("uglyURLs") is True else "",
            "slash": "index" if config.get("uglyURLs") is True else "always", "root": _join(path)}


# -- Mintlify ----------------------------------------------------------------------------------


def _mintlify(doc_path: str, site: Site, versions: SiteVersions, layout: Layout) -> dict:
    inside = below(doc_path, site.root)
    codes = set()
    navigation = site.config.get("navigation")
    for entry in (navigation.get("languages") or []) if isinstance(navigation, dict) else []:
        if isinstance(entry, dict) and isinstance(entry.get("language"), str):
            codes.add(entry["language"])
    site_path, _ = _strip_locale(inside, doc_path, codes, layout)
    return {"site_path": site_path, "kind": "path", "prefix": "/", "source": inside, "origin": "", "ext": "",
            "slash": "never"}


_BUILDERS = {"docusaurus": _docusaurus, "starlight": _starlight, "vitepress": _vitepress, "mkdocs": _mkdocs,
             "hugo": _hugo, "mintlify": _mintlify}


# ----------------------------------------------------------------------------------------------
# the address, when the page is parsed


def _path_route(source: str, ext: str, index_names=("index",)) -> tuple[str, bool]:
    """(route below the prefix, whether it is a folder's index page) of a path-based page."""
    path = _MARKDOWN_EXT.sub("", source)
    head, _, name = path.rpartition("/")
    if name.lower() in index_names:
        return head, True
    return path + ext, False


def _finish(prefix: str, route: str, slash: str, is_index: bool) -> str:
    route = _join(prefix, route)
    if slash == "always" or (slash == "index" and is_index):
        return route if route.endswith("/") else route + "/"
    if slash == "never" and route != "/":
        return route.rstrip("/")
    return route


def _route(place: dict, front: dict, title: str = "") -> str | None:
    kind, prefix, source, slash = place.get("kind"), place.get("prefix", "/"), place.get("source", ""), place.get("slash", "")
    if kind == "docusaurus-doc":
        slug = docusaurus_slug(source, front)
        if slash:
            return _finish(prefix, slug, slash, False)
        route = _join(prefix, slug)  # trailingSlash unset: a folder's page keeps the slash its slug has
        return route + "/" if slug.endswith("/") and not route.endswith("/") else route
    if kind == "docusaurus-blog":
        return _finish(prefix, _blog_slug(source, front), slash, False)
    if kind == "starlight":
        slug = front.get("slug")
        page_id = slug.strip("/") if isinstance(slug, str) and slug.strip() else starlight_id(source)
        return _finish(prefix, page_id, slash, True)
    if kind == "path":
        route, is_index = _path_route(source, place.get("ext", ""))
        return _finish(prefix, route, slash, is_index)
    if kind == "mkdocs":
        route, is_index = _path_route(source, place.get("ext", ""), ("index", "readme"))
        if is_index and place.get("ext"):
            route, is_index = f"{route}/index.html".lstrip("/"), False
        return _finish(prefix, route, slash, is_index)
    if kind == "mkdocs-post":
        return _material_post(place, front, title) or _route({**place, "kind": "mkdocs"}, front, title)
    if kind == "hugo":
        url = front.get("url")
        if isinstance(url, str) and url.strip():
            return _join(place.get("root", "/"), url) + ("/" if url.endswith("/") else "")
        route, is_index = _path_route(source, "", ("index", "_index"))
        slug = front.get("slug")
        if isinstance(slug, str) and slug.strip() and not is_index:
            route = posixpath.join(posixpath.dirname(route), slug.strip("/"))
        if place.get("lower"):
            route = route.lower()
        if place.get("ext") and not is_index:
            route += place["ext"]
        return _finish(prefix, route, slash, is_index)
    return None


def address(raw_place: str, doc_path: str, front: dict, title: str = "") -> dict:
    """The metadata a page's place gives it, its frontmatter applied: site_path, and for a page of a site
    route and url, and version on a versioned site. `raw_place`: DocumentRef.place ("" for a page placed
    before places were kept: only its site_path, its doc path)."""
    try:
        place = json.loads(raw_place) if raw_place else {}
    except ValueError:
        place = {}
    if not isinstance(place, dict):
        place = {}
    out = {"site_path": place.get("site_path") or doc_path}
    if place.get("version"):
        out["version"] = place["version"]
    route = _route(place, front, title) if place.get("kind") else None
    if route:
        out["route"] = route
        out["url"] = place.get("origin", "") + route
    return out

