"""A docs folder as document sources (read as the ingestion reads it), and where a corpus's synthetic set
lives and how it is loaded."""

from __future__ import annotations

from pathlib import Path

from rag_assets.evaluation.evalset import load_eval_set
from rag_assets.evaluation.synthetic.build import _read_json, DocumentSource, SyntheticSet
from rag_assets.evaluation.synthetic.tuning import KIND, MANIFEST_FILE, SET_FILE
from rag_assets.models import Block


def folder_documents(settings, docs_dir: Path | None = None, known=None) -> tuple[list[DocumentSource], list[str]]:
    """The folder's pages as the ingestion sees them (discovery, frontmatter, MDX, splitting), each
    read only when asked for; ``known``: an earlier catalog, so unchanged files are not hashed again."""
    from rag_assets.ingest.discovery import discover
    from rag_assets.ingest.document_metadata import MetadataPolicy, complete
    from rag_assets.ingest.frontmatter import read_document
    from rag_assets.ingest.markdown import split_markdown
    from rag_assets.ingest.snippets import render_page

    from rag_assets.ingest.scope import ScopeSettings

    docs_dir = Path(docs_dir or settings.docs_dir)
    # the corpus's scope: drafts, ignored files and translations are no pages to ask about
    catalog = discover(docs_dir, max_file_bytes=settings.max_file_bytes, known=known,
                       index_snippets=settings.index_snippets, scope=ScopeSettings.from_settings(settings))
    policy = MetadataPolicy.from_settings(settings)

    def reader(ref):
        def read() -> tuple[str, list[Block]]:
            doc = complete(render_page(read_document(ref), ref, settings.max_file_bytes)[0], ref, policy)
            return doc.title, split_markdown(doc.body)
        return read

    sources = [DocumentSource(ref.doc_path, ref.content_hash, reader(ref)) for ref in catalog.documents]
    return sources, [f"{e.path}: {e.reason}" for e in catalog.errors]


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
