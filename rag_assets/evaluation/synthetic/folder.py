"""A docs folder as document sources (from the ingest stages' records, or read as the ingestion reads
it), and where a corpus's synthetic set lives and how it is loaded."""

from __future__ import annotations

from pathlib import Path

from rag_assets.evaluation.evalset import load_eval_set
from rag_assets.evaluation.synthetic.build import _read_json, DocumentSource, SyntheticSet
from rag_assets.evaluation.synthetic.tuning import KIND, MANIFEST_FILE, SET_FILE
from rag_assets.models import Block


def folder_documents(settings, docs_dir: Path | None = None, known=None,
                     records=None) -> tuple[list[DocumentSource], list[str]]:
    """The folder's pages as the ingestion sees them, each read only when asked for: found by discovery
    (``known``: an earlier catalog, so files whose stat did not change are not hashed again), and read
    from ``records`` (the ingest stages' StageStore: the parsed and blocks records the index was chunked
    from) where they hold the page at its current version, else from the file by the ingestion's own
    road (rag_assets.ingest.document): a folder never ingested, an extra eval corpus (indexed directly,
    no stage records), a page edited since it was ingested."""
    from rag_assets.ingest.discovery import discover
    from rag_assets.ingest.document import ParseSettings
    from rag_assets.ingest.scope import ScopeSettings

    docs_dir = Path(docs_dir or settings.docs_dir)
    # the corpus's scope: drafts, ignored files and translations are no pages to ask about
    catalog = discover(docs_dir, max_file_bytes=settings.max_file_bytes, known=known,
                       index_snippets=settings.index_snippets, scope=ScopeSettings.from_settings(settings.ingest))
    parse = ParseSettings.from_settings(settings.ingest)
    sources = [DocumentSource(ref.doc_path, ref.content_hash,
                              _file_reader(ref, parse) if records is None else _record_reader(ref, parse, records))
               for ref in catalog.documents]
    return sources, [f"{e.path}: {e.reason}" for e in catalog.errors]


def _file_reader(ref, parse):
    from rag_assets.ingest.document import document_blocks

    def read() -> tuple[str, list[Block]]:
        doc, blocks = document_blocks(ref, parse)
        return doc.title, blocks
    return read


def _record_reader(ref, parse, stages):
    from rag_assets.index.stage_store import BLOCKS, PARSED, blocks_from_list
    from rag_assets.ingest.stages import SPLIT_FINGERPRINT

    wanted = {PARSED: parse.policy.fingerprint, BLOCKS: SPLIT_FINGERPRINT}

    def read() -> tuple[str, list[Block]]:
        records = {stage: stages.read(stage, ref.doc_path) for stage in wanted}
        if all(r is not None and r["source_hash"] == ref.content_hash and r["fingerprint"] == wanted[stage]
               for stage, r in records.items()):
            return records[PARSED]["payload"]["title"], blocks_from_list(records[BLOCKS]["payload"])
        return _file_reader(ref, parse)()
    return read


def synthetic_dir(settings, corpus: str | None = None) -> Path:
    """Where a synthetic set lives: ``<RAG_EVAL_RESULTS_DIR>/synthetic/`` (``/<corpus>/synthetic/``
    for an extra corpus), never under RAG_EVAL_DIR (that folder holds labelled sets)."""
    base = Path(settings.eval_results_dir)
    return (base / corpus if corpus else base) / "synthetic"


def load_synthetic_set(out_dir: Path | str) -> SyntheticSet | None:
    """The set last written under out_dir, or None."""
    out = Path(out_dir)
    manifest = _read_json(out / MANIFEST_FILE)
    path = out / SET_FILE
    if manifest.get("kind") != KIND or not path.is_file():
        return None
    return SyntheticSet(path, manifest, load_eval_set(path).questions)
