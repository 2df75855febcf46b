"""How docs sites chunk: the chunk defects of issue 19, counted per site (no Dagster, no embedding).

    .venv/bin/python benchmarks/site_chunk_stats.py NAME=DIR [NAME=DIR ...] [--json] [--show METRIC]

Each folder goes through the pipeline's own stage functions (rag_assets.ingest.stages: discover,
run_parse -> run_split -> run_chunk) over a throwaway stage store, with the settings `rag ingest` uses
(Settings.from_env: RAG_CHUNK_*_TOKENS, the tiktoken counter and the embedder's `fits`, so the local
model's input limit applies). Whatever those stages do today (MDX rendering, snippet expansion,
skipping snippet files...) is what gets measured. Run it with PYTHONPATH=<worktree> to measure
another checkout's code; the code measured is printed on stderr. Metrics (all outside fenced and
inline code), as "share% (count)" of a site's chunks:

  tag        a JSX/HTML component tag, <Capitalised...> or </Capitalised>
  import     an `import ... from` / `export ...` line
  only_tags  nothing but tags, import/export lines and headings (no prose left)
  colon      the chunk ends in ":" (a closing ::: line does not count)
  lead_cut   ends in ":" and the next chunk of the same section starts with a code fence, table or list
  small      under RAG_CHUNK_MIN_TOKENS tokens
  small_runt under the minimum AND not alone in its section (a piece that could merge with a neighbour;
             a section whose whole body is small is one small chunk on purpose: a chunk never spans a heading)
  no_section the chunk's section is empty (text before the page's first heading)
  oversized  an atomic block over the size limit, kept whole (the model truncates it)
  adm_cut    the last line is a bare admonition opener (!!! note, ??? tip, === "...", /// tip, :::note)
             and the document has a next chunk (which then holds the body)
  snippet    from a file under a folder named `snippets`, or imported by another file
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path, PurePosixPath

try:
    import rag_assets
except ImportError:  # run from a checkout without the package installed
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    import rag_assets

from rag_assets.config import Settings  # noqa: E402
from rag_assets.embedding import load_embedder  # noqa: E402
from rag_assets.ingest import stages as st  # noqa: E402
from rag_assets.ingest.chunking import ChunkingConfig  # noqa: E402
from rag_assets.ingest.discovery import discover  # noqa: E402
from rag_assets.ingest.document_metadata import MetadataPolicy  # noqa: E402
from rag_assets.ingest.tokens import TokenCounter  # noqa: E402
from rag_assets.index.stage_store import StageStore, chunks_from_list  # noqa: E402

METRICS = ["tag", "import", "only_tags", "colon", "lead_cut", "small", "small_runt", "no_section", "oversized", "adm_cut", "snippet"]
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+).+?\1")
TAG = re.compile(r"(?:^|(?<=[\s>(\[{]))</?[A-Z][\w.]*(?=[\s/>]|$)", re.M)
TAG_WHOLE = re.compile(r"</?[A-Z][\w.]*(?:\s[^<>]*)?/?>", re.S)
IMPORT_LINE = re.compile(r"^\s*(?:import\s+(?:[\w*{][^\n]*?\s+from\s+)?['\"]|export\s+(?:default|const|function|let|var|\{|\*))")
HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
STARTS_BLOCK = re.compile(r"^(?:`{3,}|~{3,}|\||[-*+]\s|\d+[.)]\s)")
ADMONITION_OPENER = re.compile(r'^\s*(?:(?:!!!|\?\?\?\+?)\s*[\w-]+.*|===\+?\s+".*"\s*|///\s*[\w-]+.*|:{3,}\s*[\w-]+.*)$')
ADMONITION_CLOSER = re.compile(r"^\s*:{3,}\s*$")  # a Docusaurus ::: closer ends in ":" but is no lead-in
IMPORT_SOURCE = re.compile(r"^import\s+(?:[\w*{][^\n]*?\s+from\s+)?['\"]([^'\"]+)['\"]", re.M)


def _call(fn, settings: Settings, *args, **kwargs):
    """fn(*args, **kwargs), plus each optional parameter named like a setting (max_file_bytes,
    index_snippets...) taken from `settings`, as the pipeline passes them: one script for the stage
    signatures of older and newer commits."""
    for name, param in list(inspect.signature(fn).parameters.items())[len(args):]:
        if param.default is not param.empty and name not in kwargs and hasattr(settings, name):
            kwargs[name] = getattr(settings, name)
    return fn(*args, **kwargs)


def code_mask(text: str) -> list[tuple[str, bool]]:
    """The chunk's lines, each with True when it is fenced code (fence lines included)."""
    out, fence = [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append((line, True))
        elif fence is not None:
            out.append((line, True))
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            out.append((line, False))
    return out


def imported_files(root: Path, doc_paths: set[str]) -> set[str]:
    """Documents another document imports (`import X from '/snippets/a.mdx'` or './_part.md')."""
    found = set()
    for doc_path in doc_paths:
        text = (root / doc_path).read_text(encoding="utf-8", errors="replace")
        for source in IMPORT_SOURCE.findall(text):
            if source.startswith("/"):
                target = PurePosixPath(source.lstrip("/"))
            elif source.startswith("."):
                target = PurePosixPath(doc_path).parent / source
            else:
                continue  # a package (@theme/Tabs, react...)
            parts: list[str] = []
            for part in target.parts:
                parts = parts[:-1] if part == ".." else parts if part == "." else parts + [part]
            found.add("/".join(parts))
    return found & doc_paths


def flags(chunk, following, min_tokens: int, snippet_files: set[str], section_size: int = 1) -> dict[str, bool]:
    mask = code_mask(chunk.text)
    prose = [INLINE_CODE.sub("", line) for line, code in mask if not code]
    last, last_is_code = next(((l, c) for l, c in reversed(mask) if l.strip()), ("", True))
    ends_outside = not last_is_code
    tag = any(TAG.search(l) for l in prose)
    imp = any(IMPORT_LINE.match(l) for l in prose)
    rest = TAG_WHOLE.sub("", "\n".join(l for l in chunk.text.splitlines() if not (IMPORT_LINE.match(l) or HEADING.match(l))))
    colon = ends_outside and last.rstrip().endswith(":") and not ADMONITION_CLOSER.match(last)
    same = following is not None and following.heading_breadcrumb == chunk.heading_breadcrumb
    parts = PurePosixPath(chunk.doc_path).parts[:-1]
    return {
        "tag": tag,
        "import": imp,
        "only_tags": (tag or imp) and not re.search(r"\w", rest),
        "colon": colon,
        "lead_cut": colon and same and bool(STARTS_BLOCK.match(following.text.lstrip())),
        "small": chunk.token_count < min_tokens,
        "small_runt": chunk.token_count < min_tokens and section_size > 1,
        "no_section": not chunk.section.strip(),
        "oversized": bool(chunk.oversized),
        "adm_cut": ends_outside and following is not None and bool(ADMONITION_OPENER.match(last)),
        "snippet": "snippets" in parts or chunk.doc_path in snippet_files,
    }


def measure(name: str, docs: Path, show: str | None) -> dict:
    settings = Settings.from_env()
    embedder = load_embedder(settings.embedding)  # loads no model; `fits` uses its tokenizer
    counter = TokenCounter.for_name(settings.tiktoken_encoding, settings.cache_dir / "tiktoken")
    config, policy = ChunkingConfig.from_settings(settings.chunking), MetadataPolicy.from_settings(settings.ingest)
    fingerprint = st.chunking_fingerprint(config, settings.tiktoken_encoding, embedder.model_name,
                                          embedder.max_input_tokens, policy.fingerprint)
    catalog = _call(discover, settings, docs)
    refs = catalog.documents
    with tempfile.TemporaryDirectory(prefix="site-chunk-stats-") as tmp:
        store = StageStore(tmp)
        reports = [
            _call(st.run_parse, settings, refs, store, policy=policy),
            _call(st.run_split, settings, refs, store),
            _call(st.run_chunk, settings, refs, store, counter, config, embedder.fits, fingerprint),
        ]
        records = store.read_many(st.CHUNKS, [r.doc_path for r in refs])
    all_files = {p.relative_to(docs.resolve()).as_posix() for p in docs.resolve().rglob("*") if p.suffix in (".md", ".mdx")}
    snippet_files = imported_files(docs.resolve(), all_files)
    counts = dict.fromkeys(METRICS, 0)
    tokens: list[int] = []
    for doc_path in sorted(records):
        chunks = sorted(chunks_from_list(records[doc_path]["payload"]), key=lambda c: c.chunk_index)
        per_section = Counter(tuple(c.heading_breadcrumb) for c in chunks)
        for i, chunk in enumerate(chunks):
            found = flags(chunk, chunks[i + 1] if i + 1 < len(chunks) else None, config.min_tokens, snippet_files,
                          per_section[tuple(chunk.heading_breadcrumb)])
            tokens.append(chunk.token_count)
            for metric, hit in found.items():
                counts[metric] += hit
            if show and found.get(show):
                print(f"--- {name}: {doc_path} #{chunk.chunk_index} [{chunk.section}]\n{chunk.text}\n", file=sys.stderr)
    tokens.sort()
    failed = {p for r in reports for p in r.failed}
    return {
        "site": name, "docs_dir": str(docs), "documents": len(refs), "failed_documents": len(failed),
        "discovery_errors": len(catalog.errors), "chunks": len(tokens), "counts": counts,
        "tokens_median": tokens[(len(tokens) - 1) // 2] if tokens else 0,
        "tokens_p90": tokens[int(0.9 * (len(tokens) - 1))] if tokens else 0,
        "min_tokens": config.min_tokens, "max_tokens": config.max_tokens,
        "embedder": f"{embedder.model_name} ({embedder.max_input_tokens} tokens)",
    }


def table(results: list[dict]) -> str:
    head = ["site", "docs", "chunks", "tokens med / p90", *METRICS]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        n = r["chunks"] or 1
        docs = f"{r['documents']}" + (f" ({r['failed_documents']} failed)" if r["failed_documents"] else "")
        cells = [f"{100 * r['counts'][m] / n:.1f}% ({r['counts'][m]})" for m in METRICS]
        rows.append("| " + " | ".join([r["site"], docs, str(r["chunks"]), f"{r['tokens_median']} / {r['tokens_p90']}", *cells]) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sites", nargs="+", metavar="NAME=DIR", help="a site's name and its docs folder")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--show", choices=METRICS, help="print the chunks flagged by this metric on stderr")
    args = parser.parse_args()
    print(f"rag_assets from {Path(rag_assets.__file__).parent}", file=sys.stderr)
    results = []
    for spec in args.sites:
        name, sep, folder = spec.partition("=")
        if not sep or not Path(folder).is_dir():
            parser.error(f"{spec!r}: expected NAME=DIR with an existing folder")
        results.append(measure(name, Path(folder), args.show))
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
