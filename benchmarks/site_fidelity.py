"""A docs site's own build as the truth: which pages it publishes, the words its readers see and the
URL of each, against what `rag ingest` indexes from the site's repository root (issue 42). Run by hand:

    .venv/bin/python benchmarks/site_fidelity.py --generator docusaurus|starlight|mkdocs \
        --built SITE_OUT_DIR --repo REPO_ROOT --workdir /tmp/x/work --report report.json \
        [--docusaurus-dir BUILD_COPY/.docusaurus] [--lang en] [--python OTHER_VENV/bin/python] \
        [--env KEY=VALUE] [--chunks chunks.json]

The site is built beforehand with its own toolchain into SITE_OUT_DIR; REPO_ROOT is a clean checkout of
the same commit (no node_modules, no build output), which is what gets ingested, through
`rag ingest --json` of the interpreter given (another checkout's venv measures its code) in a scratch
state/Chroma/Dagster home under --workdir. --chunks reuses a dump of an earlier run instead.

Definitions (what the numbers mean):

* Published pages (the truth set): HTML pages of the build rendered from one markdown/MDX source, in
  the default locale and the version the site serves by default, never 404, tag, search, blog-list or
  generated category pages. Per generator: Docusaurus: `html.docs-doc-page` pages without a version
  banner (the default version of each docs plugin: the newest of versions.json unless the config says
  otherwise; `docs/` at /docs/next/ is then "unreleased", not default; with --all-versions every
  version the build holds, to measure `RAG_VERSIONS=all`), `html.blog-post-page` and
  `html.mdx-page` (a markdown page of src/pages); Starlight: pages with `.sl-markdown-content` whose
  <html lang> starts with --lang; MkDocs (material): pages with `article.md-content__inner` and an
  edit link (Material shows one on every page built from a markdown file), so neither the blog plugin's
  views (its index, archive, category and pagination pages: lists of other pages' excerpts, no edit
  link) nor a landing page whose template renders no content (Material's `template: home.html`: an
  empty article, no edit link) nor a `template: redirect.html` page (no article: a refresh) is one.
* A page's source file: Docusaurus from the build's own route metadata (`.docusaurus/**.json`:
  `source` + `permalink`), else the page's "edit this page" link (path after `/edit/<branch>/`,
  matched to a file of REPO_ROOT).
* Its visible text: the generator's article element (Docusaurus `.theme-doc-markdown` or a blog
  post's `[itemprop=articleBody]` plus its <h1>, `.markdown` for an mdx page; Starlight the page's
  `h1#_top` + `.sl-markdown-content`; MkDocs `article.md-content__inner`), less script/style/svg/
  button/template, `hidden` or `aria-hidden` elements (except tab panels: a reader opens every tab),
  screen-reader-only text (`.sr-only`), heading anchors, edit/source buttons, feedback forms and
  "last update" footers. Inline elements join without a space, block elements with one.
* Words: lowercased `\\w+` tokens with leading/trailing `_` stripped (so `_emphasis_` in markdown and
  `emphasis` in HTML are the same word), compared as multisets.
* A page's indexed words: its chunks' stored text, read as a reader would read the markdown: link and
  image destinations, reference definitions, ordered-list numbers (the browser draws them) and a code
  fence's info string are not words (a fence's
  `title="..."` is: the themes show it); image alt text, HTML/JSX tags, `{#id}` anchors, entities and
  escapes are words (a reader sees none of them: they are extra). Discounted, because they are right:
  (1) the page title once, when no chunk already holds it as a `# ` heading (we prepend it to what is
  embedded, not to the stored text); (2) a table's header row and separator repeated at the top of a
  later chunk of the page (a piece must read alone); (3) chunk overlap: the longest run (>= 5 words)
  at the start of a chunk equal to the end of the previous chunk of the same section.
  A code block split in pieces that repeats its fence title counts the repeated title as extra.
* Word recall of a page = sum min(built, indexed) / built words (what a reader sees that we kept);
  word precision = the same / indexed words (what we indexed that a reader sees). Medians and 10th
  percentiles over the pages both publish and index (pages with no visible words are left out).
* Page precision = indexed pages whose source is a published page (or whose `url`/`route`, when our
  metadata carries one, is a published route) / indexed pages; page recall = published pages indexed
  / published pages. `url == route`: share of matched pages whose `url` (or `route`) metadata equals
  the built route after normalisation (no trailing slash, no index.html, no site origin); "n/a" when
  no chunk carries one.
* A built page's route is the path it is published at: the site's base path, then its file's path in
  the build (`setup/index.html` -> `/setup`). A local build writes the site at the output folder's root
  whatever its base path (MkDocs' `site_url` path, Docusaurus' `baseUrl`, Astro's `base` only change the
  links), so the base path is read from the build itself: the path each page's `<link rel="canonical">`
  (written from the site's configured URL) has before its file's path, when most pages that have one
  agree (mkdocs-material: `https://squidfunk.github.io/mkdocs-material/setup/` for `setup/index.html`
  gives `/mkdocs-material`); a build without canonical links takes it from our own `url`s: the prefix
  most of the pages matched by their source have before their built path. `--base-path` says it
  instead. The report's summary names it and where it came from (`base_path`, `base_path_from`). The
  Docusaurus route metadata (`.docusaurus/**.json` permalinks) already includes `baseUrl`.

Limits: text a theme renders from the site's own code (data-driven components, contributor lists) is
in the build and can't be in the markdown; a component's hidden non-tab content is left out; MDX
pages whose text is generated at build time count as lost words. The report names the worst pages,
per page the lost (built, not indexed) and extra (indexed, not built) word runs, the components its
source uses, and lists the unpublished pages we index and the published pages we miss with sources.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repo_scope import work_env  # noqa: E402  (the same scratch state/Chroma/Dagster home)
from site_words import Node, compare, find_all, indexed_words, parse_html, visible_text, words  # noqa: E402

# ---------------------------------------------------------------- the build: published pages

@dataclass
class BuiltPage:
    route: str  # the path it is published at: the base path, then `file_route`
    kind: str
    text: str
    source: str | None = None
    file_route: str = ""  # its path in the build output

    def __post_init__(self):
        self.file_route = self.file_route or self.route


def normalize_route(url: str) -> str:
    path = unquote(urlparse(url).path) if "://" in url else unquote(url.split("#")[0].split("?")[0])
    path = re.sub(r"(index)?\.html$", "", path)
    path = "/" + path.strip("/")
    return path


def _route_of(html_file: Path, built: Path) -> str:
    return normalize_route("/" + str(html_file.relative_to(built)).replace(os.sep, "/"))


def _canonical_prefix(root: Node, route: str) -> str | None:
    """The path a page's canonical URL has before its file's route ("" when none), None without one or when
    the canonical URL does not end in the page's route (a page published somewhere else)."""
    link = next((n for n in find_all(root, "link") if "canonical" in n.attrs.get("rel", "").split()), None)
    if link is None or not link.attrs.get("href"):
        return None
    return prefix_before(normalize_route(link.attrs["href"]), route)


def prefix_before(published: str, route: str) -> str | None:
    """The path `published` has before `route` ("" when they are equal), None when it does not end in it."""
    if route == "/":
        return "" if published == "/" else published
    if published == route:
        return ""
    return published[: -len(route)] if published.endswith(route) else None


def base_path_of(prefixes: Counter) -> str:
    """The base path most pages agree on ("" when they do not: more than half must)."""
    if not prefixes:
        return ""
    prefix, count = prefixes.most_common(1)[0]
    return prefix if count * 2 > sum(prefixes.values()) else ""


def with_base(base: str, route: str) -> str:
    return normalize_route(base.rstrip("/") + route) if base else route


def _edit_source(root: Node) -> str | None:
    for a in find_all(root, "a"):
        m = re.search(r"/edit/[^/]+/(.+)$", a.attrs.get("href", ""))
        if m:
            return unquote(m.group(1))
    return None


def _docusaurus_page(root: Node, all_versions: bool = False) -> tuple[str, Node | None, str]:
    html = next(iter(find_all(root, "html")), None)
    classes = html.classes if html else set()
    if "docs-doc-page" in classes:
        if find_all(root, cls="theme-doc-version-banner"):
            return "other-version", next(iter(find_all(root, cls="theme-doc-markdown")), None) if all_versions else None, ""
        body = next(iter(find_all(root, cls="theme-doc-markdown")), None)
        return "docs", body, ""
    if "blog-post-page" in classes:
        body = next(iter(find_all(root, itemprop="articleBody")), None)
        h1 = next(iter(find_all(root, "h1")), None)
        return "blog", body, visible_text(h1) if h1 else ""
    if "mdx-page" in classes:
        return "page", next(iter(find_all(root, "main")), None), ""
    return "", None, ""


def _starlight_page(root: Node, lang: str) -> tuple[str, Node | None, str]:
    html = next(iter(find_all(root, "html")), None)
    if html is not None and lang and not html.attrs.get("lang", "").lower().startswith(lang.lower()):
        return "other-locale", None, ""
    body = next(iter(find_all(root, "div", cls="sl-markdown-content")), None)
    h1 = next(iter(find_all(root, "h1", id="_top")), None)
    return ("docs" if body is not None else ""), body, visible_text(h1) if h1 else ""


def _mkdocs_page(root: Node) -> tuple[str, Node | None, str]:
    body = next(iter(find_all(root, "article", cls="md-content__inner")), None)
    if body is None or _edit_source(root) is None:  # generated blog index/archive/category pages
        return "", None, ""
    return "docs", body, ""


def built_pages(built: Path, generator: str, lang: str = "en", drop: frozenset[str] = frozenset(),
                base_path: str | None = None, all_versions: bool = False) -> tuple[list[BuiltPage], Counter, str | None]:
    """The published pages (routes under the base path: `base_path`, else the one the canonical links
    agree on), the pages skipped by kind, and the base path used (None: no canonical link says one).
    `all_versions`: a Docusaurus page of another version than the default is published too."""
    pages, skipped, prefixes = [], Counter(), Counter()
    for html_file in sorted(built.rglob("*.html")):
        route = _route_of(html_file, built)
        if route == "/404" or route.endswith("/404"):
            continue
        root = parse_html(html_file.read_text(encoding="utf-8", errors="replace"))
        prefix = _canonical_prefix(root, route)
        if prefix is not None:
            prefixes[prefix] += 1
        if generator == "docusaurus":
            kind, body, head = _docusaurus_page(root, all_versions)
        elif generator == "starlight":
            kind, body, head = _starlight_page(root, lang)
        else:
            kind, body, head = _mkdocs_page(root)
        if body is None:
            skipped[kind or "not a markdown page"] += 1
            continue
        pages.append(BuiltPage(route, kind, (head + "\n" + visible_text(body, drop)).strip(), _edit_source(root)))
    base = base_path if base_path is not None else (base_path_of(prefixes) if prefixes else None)
    set_base(pages, base or "")
    return pages, skipped, base


def set_base(pages: list[BuiltPage], base: str) -> None:
    for page in pages:
        page.route = with_base(base, page.file_route)


def docusaurus_sources(docusaurus_dir: Path) -> dict[str, str]:
    """route -> source path relative to the site folder, from the build's own route metadata."""
    out = {}
    for name in glob.glob(str(docusaurus_dir / "**" / "*.json"), recursive=True):
        try:
            data = json.loads(Path(name).read_text())
        except (ValueError, OSError):
            continue
        if isinstance(data, dict) and isinstance(data.get("source"), str) and isinstance(data.get("permalink"), str):
            out[normalize_route(data["permalink"])] = data["source"].removeprefix("@site/")
    return out


CONTENT_ROOTS = {"starlight": "src/content/docs", "mkdocs": "docs", "docusaurus": "docs"}


def source_from_route(route: str, content_root: str, repo_files_lower: dict[str, str]) -> str | None:
    """The documented route -> file rule of the generators (a page without edit link or route metadata):
    <root>/<route>.md(x), else <root>/<route>/index.md(x), compared case-insensitively (Starlight
    lower-cases slugs)."""
    base = (content_root.strip("/") + route).strip("/") if route != "/" else content_root.strip("/")
    for candidate in (base + ".md", base + ".mdx", base + "/index.md", base + "/index.mdx"):
        hit = repo_files_lower.get(candidate.strip("/").lower())
        if hit:
            return hit
    return None


def resolve_source(path: str | None, repo_files: set[str]) -> str | None:
    """A source named by the build (edit link path or @site path) as a file of the repository."""
    if not path:
        return None
    parts = path.strip("/").split("/")
    for i in range(len(parts)):
        candidate = "/".join(parts[i:])
        if candidate in repo_files:
            return candidate
    return None


# ---------------------------------------------------------------- the index: what we ingest

DUMP = r"""
import json, sys
import chromadb
from chromadb.config import Settings
client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
out = []
for col in client.list_collections():
    name = getattr(col, "name", col)
    c = client.get_collection(name)
    total, offset = c.count(), 0
    while offset < total:
        got = c.get(limit=2000, offset=offset, include=["documents", "metadatas"])
        for text, meta in zip(got["documents"], got["metadatas"]):
            out.append({"collection": name, "text": text or "", "meta": meta or {}})
        offset += 2000
json.dump(out, open(sys.argv[2], "w"))
"""


def ingest_and_dump(python: str, repo: Path, work: Path, extra: dict[str, str]) -> tuple[dict, list[dict], float]:
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    project = Path(python).absolute().parents[2] if Path(python).parent.name == "bin" else Path.cwd()
    env = work_env(work, repo, project, extra)
    env.setdefault("ORT_DISABLE_TELEMETRY", "1")
    env.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    started = time.perf_counter()
    proc = subprocess.run([python, "-m", "rag_assets", "ingest", "--json"], env=env, capture_output=True, text=True, cwd=project)
    wall = time.perf_counter() - started
    (work / "ingest.stderr").write_text(proc.stderr)
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"rag ingest exit {proc.returncode}: {proc.stderr[-2000:]}")
    (work / "ingest.json").write_text(json.dumps({**summary, "wall_seconds": round(wall, 1)}))
    dump = work / "chunks.json"
    subprocess.run([python, "-c", DUMP, env["RAG_CHROMA_PATH"], str(dump)], env=env, check=True, cwd=project)
    return summary, json.loads(dump.read_text()), wall


# ---------------------------------------------------------------- measuring

def quantiles(values: list[float]) -> dict:
    if not values:
        return {"median": None, "p10": None, "n": 0}
    ordered = sorted(values)
    p10 = statistics.quantiles(ordered, n=10, method="inclusive")[0] if len(ordered) > 1 else ordered[0]
    return {"median": round(statistics.median(ordered), 4), "p10": round(p10, 4), "n": len(ordered)}


COMPONENT = re.compile(r"<([A-Z][\w.]*)")


def measure(pages: list[BuiltPage], route_sources: dict[str, str], chunks: list[dict], repo: Path,
            content_root: str = "", base_path: str | None = "") -> dict:
    """`base_path`: the site's base path (None: unknown, then the prefix our own `url`s have before the
    built path of the pages matched by their source, when most agree)."""
    repo_files = {str(p.relative_to(repo)).replace(os.sep, "/") for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    lower = {f.lower(): f for f in repo_files}
    for page in pages:
        page.source = (resolve_source(route_sources.get(page.route) or route_sources.get(page.file_route) or page.source,
                                      repo_files)
                       or source_from_route(page.file_route, content_root, lower))
    docs: dict[str, list[dict]] = {}
    for chunk in chunks:
        docs.setdefault(chunk["meta"].get("doc_path", "?"), []).append(chunk)
    base_from = "given or the build's canonical links"
    if base_path is None:
        base_path, base_from = base_path_from_urls(pages, docs), "our urls"
        set_base(pages, base_path)
    truth = {page.route: page for page in pages}
    by_source = {p.source: p for p in truth.values() if p.source}
    all_sources = {resolve_source(s, repo_files): r for r, s in route_sources.items()}  # incl. other versions
    has_url = any("url" in c["meta"] or "route" in c["meta"] for c in chunks)
    matched: dict[str, str] = {}  # doc_path -> route
    unpublished = []
    url_equal = url_total = 0
    for doc_path, doc_chunks in docs.items():
        meta = doc_chunks[0]["meta"]
        url = meta.get("url") or meta.get("route")
        page = by_source.get(doc_path)
        if page is None and url and normalize_route(url) in truth:
            page = truth[normalize_route(url)]
        if page is None:
            why = "other version or locale (built, not default)" if doc_path in all_sources else "no page in the build"
            unpublished.append({"doc_path": doc_path, "reason": why, "built_route": all_sources.get(doc_path),
                                "url": url, "version": meta.get("version"), "language": meta.get("language"),
                                "chunks": len(doc_chunks)})
            continue
        matched[doc_path] = page.route
        if has_url:
            url_total += 1
            url_equal += bool(url) and normalize_route(url) == page.route
    matched_routes = set(matched.values())
    missed = [{"route": r, "source": p.source, "kind": p.kind} for r, p in sorted(truth.items()) if r not in matched_routes]
    per_page = []
    for doc_path, route in matched.items():
        page = truth[route]
        built_words = words(page.text)
        if not built_words:
            continue
        doc_chunks = docs[doc_path]
        result = compare(built_words, indexed_words(doc_chunks, str(doc_chunks[0]["meta"].get("title", ""))))
        source_text = (repo / doc_path).read_text(errors="replace") if (repo / doc_path).is_file() else ""
        result.update(route=route, doc_path=doc_path, kind=page.kind, chunks=len(doc_chunks),
                      url=doc_chunks[0]["meta"].get("url"),
                      components=sorted(Counter(COMPONENT.findall(source_text)).keys()))
        per_page.append(result)
    recalls = [p["recall"] for p in per_page if p["recall"] is not None]
    precisions = [p["precision"] if p["precision"] is not None else 0.0 for p in per_page]
    indexed_pages = len(docs)
    summary = {
        "base_path": base_path, "base_path_from": base_from,
        "published_pages": len(truth), "published_by_kind": dict(Counter(p.kind for p in truth.values())),
        "published_without_source": sum(1 for p in truth.values() if not p.source),
        "indexed_pages": indexed_pages, "indexed_chunks": len(chunks), "matched_pages": len(matched),
        "page_precision": round(len(matched) / indexed_pages, 4) if indexed_pages else None,
        "page_recall": round(len(matched_routes) / len(truth), 4) if truth else None,
        "word_recall": quantiles(recalls), "word_precision": quantiles(precisions),
        "url_equals_route": round(url_equal / url_total, 4) if has_url and url_total else "n/a",
        "unpublished_indexed_by_reason": dict(Counter(u["reason"] for u in unpublished)),
        "metadata_seen": sorted({k for c in chunks for k in c["meta"]}),
        "languages": dict(Counter(str(d[0]["meta"].get("language")) for d in docs.values())),
        "versions": dict(Counter(str(d[0]["meta"].get("version")) for d in docs.values())),
    }
    worst = sorted(per_page, key=lambda p: (p["recall"] or 0) + (p["precision"] or 0))
    return {"summary": summary, "worst_pages": worst[:40], "pages": sorted(per_page, key=lambda p: p["route"]),
            "unpublished_indexed": sorted(unpublished, key=lambda u: u["doc_path"]), "published_missed": missed}


def base_path_from_urls(pages: list[BuiltPage], docs: dict[str, list[dict]]) -> str:
    """The prefix most of our pages' `url`s (or `route`s) have before the built path of the page with the
    same source ("" when they do not agree)."""
    by_source = {p.source: p for p in pages if p.source}
    prefixes: Counter = Counter()
    for doc_path, doc_chunks in docs.items():
        url = doc_chunks[0]["meta"].get("url") or doc_chunks[0]["meta"].get("route")
        page = by_source.get(doc_path)
        if url and page is not None:
            prefix = prefix_before(normalize_route(url), page.file_route)
            if prefix is not None:
                prefixes[prefix] += 1
    return base_path_of(prefixes)


def table_row(name: str, s: dict) -> str:
    def f(v):
        return "n/a" if v is None else (v if isinstance(v, str) else f"{v:.2f}")
    return (f"| {name} | {s['published_pages']} | {s['indexed_pages']} | {f(s['page_precision'])} | {f(s['page_recall'])} | "
            f"{f(s['word_recall']['median'])} / {f(s['word_recall']['p10'])} | "
            f"{f(s['word_precision']['median'])} / {f(s['word_precision']['p10'])} | {f(s['url_equals_route'])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generator", choices=["docusaurus", "starlight", "mkdocs"], required=True)
    parser.add_argument("--built", type=Path, required=True, help="the site's build output folder")
    parser.add_argument("--repo", type=Path, required=True, help="a clean checkout of the site's repository")
    parser.add_argument("--docusaurus-dir", type=Path, help="the build copy's .docusaurus folder (route metadata)")
    parser.add_argument("--site-prefix", default="", help="the site folder inside the repository, when not its root")
    parser.add_argument("--content-root", help="the folder routes are relative to, for pages without a named "
                        "source (default: src/content/docs, docs)")
    parser.add_argument("--base-path", help="the site's base path (default: from the build's canonical links, "
                        "else from our urls)")
    parser.add_argument("--all-versions", action="store_true",
                        help="every version the build holds is published (Docusaurus; measure RAG_VERSIONS=all)")
    parser.add_argument("--lang", default="en", help="the default locale (Starlight: <html lang> prefix)")
    parser.add_argument("--drop-class", action="append", default=[],
                        help="leave out elements of this class: what the site's layout adds to every page of a kind, "
                        "not the page's markdown (e.g. Astro docs' guide lists, cards-nav)")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--name", default="")
    parser.add_argument("--python", default=str(Path(".venv/bin/python").absolute()))
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the ingest")
    parser.add_argument("--chunks", type=Path, help="a chunks.json dump of an earlier run (no ingest)")
    args = parser.parse_args()
    repo = args.repo.resolve()
    pages, skipped, base = built_pages(args.built.resolve(), args.generator, args.lang, frozenset(args.drop_class),
                                       args.base_path, args.all_versions)
    route_sources = {}
    if args.docusaurus_dir:
        prefix = args.site_prefix.strip("/") + "/" if args.site_prefix else ""
        route_sources = {r: prefix + s for r, s in docusaurus_sources(args.docusaurus_dir).items()}
    ingest, wall = {}, None
    if args.chunks:
        chunks = json.loads(args.chunks.read_text())
        saved = args.chunks.with_name("ingest.json")  # the run that made the dump, when it is beside it
        if saved.is_file():
            ingest = json.loads(saved.read_text())
            wall = ingest.get("wall_seconds")
    else:
        ingest, chunks, wall = ingest_and_dump(args.python, repo, args.workdir.resolve(), dict(e.split("=", 1) for e in args.env))
    content_root = args.content_root if args.content_root is not None else CONTENT_ROOTS[args.generator]
    report = measure(pages, route_sources, chunks, repo, content_root, base)
    report["summary"].update(name=args.name or repo.name, generator=args.generator, built_pages_skipped=dict(skipped),
                             ingest_wall_seconds=round(wall, 1) if wall else None,
                             ingest_left_out=ingest.get("left_out"), python=args.python, dropped_classes=args.drop_class)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(json.dumps(report["summary"], indent=1, ensure_ascii=False))
    print(table_row(report["summary"]["name"], report["summary"]))


if __name__ == "__main__":
    main()
