"""The Dagster web UI, used as a person would: a real `dagster dev` on this repo's workspace.yaml, driven
by headless Chromium (Debian's `chromium`, through the `playwright` package; no browser download).

It opens the global asset lineage, checks that every stage and every lineage edge is drawn, clicks
"Materialize" on document_catalog, launches the per-document assets over all partitions (one run over
the partition range, via the webserver's GraphQL `launchRun`: what a single-run backfill amounts to),
clicks "Materialize" on synthetic_eval_set and retrieval_evaluation, and saves two screenshots: the asset graph and the
evaluation's metadata plots, into the test's tmp dir (its path is printed); with
RAG_UPDATE_SCREENSHOTS=1 they also replace docs/images/ (commit them when the UI changed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from rag_assets_tests.support.corpus import SAMPLE_EVAL_SET, write_corpus
from rag_assets_tests.support.dagster_dev import dagster_dev, dagster_dev_env

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
CHAIN = ["document_catalog", "parsed_documents", "markdown_blocks", "document_chunks", "chunk_embeddings", "vector_index"]
STAGES = CHAIN + ["index_audit", "synthetic_eval_set", "retrieval_evaluation"]  # the whole index / the documents
PER_DOCUMENT = CHAIN[1:]
EDGES = set(zip(CHAIN, CHAIN[1:])) | {("vector_index", "index_audit"), ("vector_index", "retrieval_evaluation"),
                                      # the synthetic set reads the records of the assets that wrote them
                                      ("document_catalog", "synthetic_eval_set"),
                                      ("parsed_documents", "synthetic_eval_set"),
                                      ("markdown_blocks", "synthetic_eval_set"),
                                      ("vector_index", "synthetic_eval_set"),
                                      ("synthetic_eval_set", "retrieval_evaluation")}

pytestmark = [pytest.mark.system, pytest.mark.browser, pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does it)"
)]


@pytest.fixture
def webserver(tmp_path):
    """`dagster dev` on the repo's workspace.yaml, every piece of state under tmp_path."""
    write_corpus(tmp_path / "docs")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "small.jsonl").write_text("\n".join(json.dumps(q) for q in SAMPLE_EVAL_SET) + "\n")
    env = dagster_dev_env(tmp_path,
                          RAG_EVAL_MIN_HYBRID_RECALL_AT_5="0.5",
                          # this test launches and counts its own evaluation runs: evaluation_sensor ticks once at start only
                          RAG_EVALUATION_INTERVAL_SECONDS="3600")
    with dagster_dev(tmp_path, env, set(STAGES)) as server:
        yield server


# The lineage graph is an SVG: asset nodes are <foreignObject>s, edges are <path>s with an arrow marker,
# both in the same coordinates. An edge joins the nodes nearest to its two ends.
_GRAPH_JS = """svg => {
  const nodes = Array.from(svg.querySelectorAll(':scope > foreignObject:not(.group)'))
    .filter(f => f.textContent.trim())
    .map(f => ({text: f.textContent, x: +f.getAttribute('x'), y: +f.getAttribute('y'),
                w: +f.getAttribute('width'), h: +f.getAttribute('height')}));
  const edges = Array.from(svg.querySelectorAll(':scope > path[marker-end]')).map(p => {
    const nums = (p.getAttribute('d').match(/-?[0-9.]+/g) || []).map(Number);
    return [nums.slice(0, 2), nums.slice(-2)];
  });
  return {nodes, edges};
}"""


def _node_name(text: str) -> str | None:
    text = text.strip()
    for name in sorted(STAGES, key=len, reverse=True):
        if text.startswith(name):
            return name
    # a long name in a narrow node is drawn shortened in the middle: "retrie…_evaluation"
    head, sep, tail = text.split()[0].partition("…") if text else ("", "", "")
    matches = [name for name in STAGES if sep and name.startswith(head) and name.endswith(tail)]
    return matches[0] if len(matches) == 1 else None


def _distance(point, node) -> float:
    x, y = point
    dx = max(node["x"] - x, 0, x - node["x"] - node["w"])
    dy = max(node["y"] - y, 0, y - node["y"] - node["h"])
    return (dx * dx + dy * dy) ** 0.5


def _drawn_lineage(page) -> tuple[set[str], set[tuple[str, str]]]:
    graph = page.locator("svg:has(> foreignObject)").first.evaluate(_GRAPH_JS)
    nodes = [dict(n, name=_node_name(n["text"])) for n in graph["nodes"]]
    names = {n["name"] for n in nodes if n["name"]}
    edges = set()
    for start, end in graph["edges"]:
        if len(start) == 2 and len(end) == 2 and nodes:
            src = min(nodes, key=lambda n: _distance(start, n))
            dst = min(nodes, key=lambda n: _distance(end, n))
            edges.add((src["name"], dst["name"]))
    return names, edges


def _open_lineage(page, url: str) -> None:
    """Global asset lineage, all groups expanded, top-to-bottom, fitted to the window."""
    page.goto(f"{url}/asset-groups")
    page.wait_for_selector("svg foreignObject", timeout=30_000)
    _skip_community_dialog(page)
    for item in ("Expand all groups", "Change graph to vertical orientation"):
        _choose_graph_setting(page, item)
    hide = page.get_by_role("button", name="Hide navigation")
    if hide.count():
        hide.click()
    page.reload()  # the layout choices are remembered; a fresh load fits the graph to the window
    page.wait_for_selector("svg foreignObject:not(.group)", timeout=30_000)
    page.wait_for_timeout(1000)


def _choose_graph_setting(page, item: str, attempts: int = 3) -> None:
    """Pick `item` from the graph's settings menu, unless the menu offers its opposite (remembered
    from an earlier visit). The graph re-renders after a choice and can replace the menu while it
    opens ("element was detached from the DOM"): a click that hit a replaced element did nothing,
    so it is retried on the menu as it is now."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in range(attempts):
        try:
            page.locator("button:has([aria-label=settings])").last.click()
            page.get_by_role("menuitem").first.wait_for(timeout=10_000)
            choice = page.get_by_role("menuitem", name=item)
            if choice.count():
                choice.click(timeout=10_000)
            else:
                page.keyboard.press("Escape")
            break
        except PlaywrightError:
            if attempt == attempts - 1:
                raise
            page.keyboard.press("Escape")
            page.wait_for_timeout(500)


def _skip_community_dialog(page) -> None:
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(timeout=1500)
        skip.click()
    except Exception:  # playwright TimeoutError: the dialog was not shown
        pass


def _materialize_button(page):
    return page.locator("button").filter(has_text=re.compile(r"^Materialize$"))


def _save_png(page, path: Path) -> None:
    """A screenshot, palette-quantized (the UI has few colours) to keep committed PNGs small."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def test_asset_graph_materialize_and_evaluation_plot_in_the_browser(webserver, tmp_path):
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    shots = tmp_path / "screenshots"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 900, "height": 1900})
            page.set_default_timeout(30_000)

            # 1. the asset graph: every stage and every lineage edge is drawn
            _open_lineage(page, webserver.url)
            names, edges = _drawn_lineage(page)
            assert names == set(STAGES), names
            assert edges == EDGES, sorted(edges)

            # 2. click "Materialize" on document_catalog: it registers the documents as partitions
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(f"{webserver.url}/assets/document_catalog")
            _materialize_button(page).click()
            page.get_by_text(re.compile("Launched run")).wait_for()
            runs = webserver.wait_for_runs(1)
            assert [r["status"] for r in runs] == ["SUCCESS"], runs

            # 3. the per-document assets over all partitions, in ONE run (single-run backfill policy)
            keys = webserver.gql('{ assetNodeOrError(assetKey: {path: ["parsed_documents"]}) '
                                 "{ ... on AssetNode { partitionKeys } } }")["assetNodeOrError"]["partitionKeys"]
            assert sorted(keys) == ["guide/evaluation.md", "guide/streaming.md", "rate-limits.md"]
            launched = webserver.gql(
                """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
                     ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
                     ... on RunConfigValidationInvalid { errors { message } } } }""",
                {"p": {
                    "selector": {"repositoryLocationName": "rag_assets", "repositoryName": "__repository__",
                                 "jobName": "__ASSET_JOB", "assetSelection": [{"path": [k]} for k in PER_DOCUMENT]},
                    "executionMetadata": {"tags": [
                        {"key": "dagster/asset_partition_range_start", "value": keys[0]},
                        {"key": "dagster/asset_partition_range_end", "value": keys[-1]},
                    ]},
                }},
            )["launchRun"]
            assert launched["__typename"] == "LaunchRunSuccess", launched
            runs = webserver.wait_for_runs(2)
            assert all(r["status"] == "SUCCESS" for r in runs), runs
            materialized = webserver.gql('{ assetNodeOrError(assetKey: {path: ["vector_index"]}) { ... on AssetNode '
                                         "{ partitionStats { numMaterialized numPartitions } } } }")
            assert materialized["assetNodeOrError"]["partitionStats"] == {"numMaterialized": 3, "numPartitions": 3}

            # 4. click "Materialize" on synthetic_eval_set (a labelled set exists: it records that it is not
            # needed), then on retrieval_evaluation, twice: the metadata plots draw a line
            page.goto(f"{webserver.url}/assets/synthetic_eval_set")
            before = len(webserver.runs())
            _materialize_button(page).click()
            page.get_by_text(re.compile("Launched run")).last.wait_for()
            runs = webserver.wait_for_runs(before + 1)
            assert all(r["status"] == "SUCCESS" for r in runs), runs
            page.goto(f"{webserver.url}/assets/retrieval_evaluation")
            for _ in range(2):
                before = len(webserver.runs())
                _materialize_button(page).click()
                page.get_by_text(re.compile("Launched run")).last.wait_for()
                runs = webserver.wait_for_runs(before + 1)
                assert all(r["status"] == "SUCCESS" for r in runs), runs
            events = webserver.gql(
                '{ assetOrError(assetKey: {path: ["retrieval_evaluation"]}) { ... on Asset { assetMaterializations '
                "{ runId metadataEntries { label ... on FloatMetadataEntry { floatValue } } } } } }"
            )["assetOrError"]["assetMaterializations"]
            assert len(events) >= 2
            recall = {e["label"]: e.get("floatValue") for e in events[0]["metadataEntries"]}
            assert recall["hybrid/section.recall@5"] >= 2 / 3

            # 5. screenshots: the evaluation's plots, then the graph with everything materialized
            page.reload()
            page.get_by_role("button", name="Plots").click()
            page.get_by_text("hybrid/section.recall@5", exact=True).wait_for()
            page.wait_for_timeout(1000)
            page.get_by_text("Metadata", exact=True).first.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(500)
            _save_png(page, shots / "evaluation-plot.png")

            page.set_viewport_size({"width": 900, "height": 1900})
            _open_lineage(page, webserver.url)
            page.locator("button:has([aria-label=panel_show_right])").first.click()  # hide the asset sidebar
            _center_graph(page)
            page.mouse.move(5, 5)
            page.wait_for_timeout(1000)
            names, edges = _drawn_lineage(page)
            assert names == set(STAGES) and edges == EDGES
            _save_png(page, shots / "asset-graph.png")
        finally:
            browser.close()

    for png in ("asset-graph.png", "evaluation-plot.png"):
        assert (shots / png).stat().st_size > 10_000
        if os.environ.get("RAG_UPDATE_SCREENSHOTS") == "1":
            shutil.copyfile(shots / png, REPO / "docs" / "images" / png)
    print(f"screenshots in {shots}; UI test took {time.monotonic() - started:.1f} s after the webserver was up")


# The graph's viewport: the first ancestor of the SVG that clips it (the SVG's own parent moves as it pans)
_VIEWPORT_JS = """svg => {
  let e = svg.parentElement;
  while (e && getComputedStyle(e).overflow !== 'hidden') e = e.parentElement;
  const r = (e || svg.parentElement).getBoundingClientRect();
  return {x: r.x, y: r.y, width: r.width, height: r.height};
}"""


def _center_graph(page) -> None:
    """Pan (mouse wheel) so the graph sits in the middle of its canvas."""
    for _ in range(3):
        canvas = page.locator("svg:has(> foreignObject)").first.evaluate(_VIEWPORT_JS)
        groups = [b for b in (f.bounding_box() for f in page.locator("svg foreignObject.group").all()) if b]
        if not canvas or not groups:
            return
        left = min(b["x"] for b in groups)
        right = max(b["x"] + b["width"] for b in groups)
        top = min(b["y"] for b in groups)
        bottom = max(b["y"] + b["height"] for b in groups)
        dx = (canvas["x"] + canvas["width"] / 2) - (left + right) / 2
        dy = (canvas["y"] + canvas["height"] / 2) - (top + bottom) / 2
        if abs(dx) < 8 and abs(dy) < 8:
            return
        page.mouse.move(canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2)
        page.mouse.wheel(-dx, -dy)
        page.wait_for_timeout(400)
