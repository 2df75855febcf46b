"""synthetic_eval_set: known-item questions generated from a corpus's own documents, scored by
retrieval_evaluation where the index (or an extra corpus) has no labelled eval set
(rag_assets.evaluation.synthetic; RAG_EVAL_SYNTHETIC=auto|always|off). Its numbers, tables and files
all carry the ``synthetic/`` prefix (evaluation.py).
"""

import dagster as dg

from rag_assets.corpus import Corpus

from .assets import IngestionAssets
from .resources import RunSettingsResource

SYNTHETIC = "synthetic"


SYNTHETIC_PREFIX = f"{SYNTHETIC}/"  # every number, table and file of a synthetic set carries it


class SyntheticEvalConfig(dg.Config):
    always: bool = False  # build it even when the main index has a labelled set (as RAG_EVAL_SYNTHETIC=always)


def synthetic_wanted(settings, labelled: bool) -> bool:
    """Whether an index (or corpus) is scored on a synthetic set: RAG_EVAL_SYNTHETIC=always, or auto
    and it has no labelled set."""
    return settings.eval_synthetic == "always" or (settings.eval_synthetic == "auto" and not labelled)


def question_llm(settings):
    """The chat model that writes synthetic questions, or None for offline ones
    (RAG_EVAL_SYNTHETIC_GENERATOR: auto = when a chat model is configured)."""
    if settings.eval_synthetic_generator == "offline":
        return None
    from rag_assets.answer.generation import ChatLLM, chat_configured
    from rag_assets.errors import ConfigurationError

    if settings.eval_synthetic_generator == "auto" and not chat_configured(settings.answer):
        return None
    try:
        return ChatLLM.from_settings(settings.answer, temperature=0.0, max_tokens=300)
    except ConfigurationError as exc:
        raise dg.Failure(f"RAG_EVAL_SYNTHETIC_GENERATOR=llm: {exc}") from None


def build_synthetic(settings, log, docs_dir=None, corpus: str | None = None):
    """Bring the synthetic set of the main docs folder (or of an extra corpus) up to date: only
    changed documents are read and asked about again. Of the main index, only the documents indexed
    at their current version and in the corpus's default language are asked about (an ingest stopped
    half-way, a page left out of scope, a translation: never scored as if indexed), each read from the
    records its ingest stages wrote (parsed documents and blocks: no file is parsed again); the
    folder's files are parsed only where no such records can exist (an extra corpus, indexed directly;
    a folder never ingested). The folder is still looked at (a stat per file against the catalog, a
    hash of the changed ones only): that is what tells a page edited since it was indexed."""
    from rag_assets.evaluation.synthetic.build import build_synthetic_set
    from rag_assets.evaluation.synthetic.folder import folder_documents, synthetic_dir

    known = stages = None
    if corpus is None:  # the main index's catalog: files whose stat did not change are not hashed again
        try:
            from rag_assets.index.stage_store import StageStore

            stages = StageStore.for_settings(settings.paths)
            known = stages.read_catalog()
        except Exception:  # noqa: BLE001 - no state yet (or unreadable): every file is hashed and read
            known = stages = None
    sources, errors = folder_documents(settings, docs_dir, known, records=stages)
    for error in errors[:20]:
        log.warning(f"synthetic eval set: {error}")
    coverage = {"documents_found": len(sources)}
    if stages is not None:
        sources = indexed_sources(sources, stages, known)
        coverage["documents_indexed"] = len(sources)
        log.info(f"synthetic eval set: asks about the {len(sources)} of {coverage['documents_found']} documents "
                 "indexed now in the corpus's default language")
    built = build_synthetic_set(sources, synthetic_dir(settings, corpus), size=settings.eval_synthetic_questions,
                                seed=settings.eval_synthetic_seed, llm=question_llm(settings),
                                concurrency=settings.openai_concurrency, logger=log.info)
    for warning in built.warnings[:20]:
        log.warning(f"synthetic eval set: {warning}")
    built.manifest.update(coverage)  # what this build covered (reported with the set, not stored in it)
    return built


def indexed_sources(sources, stages, catalog):
    """The document sources indexed at their current version, in the corpus's default language."""
    from rag_assets.index.stage_store import INDEXED
    from rag_assets.ingest.languages import same_language

    headers = stages.headers([s.doc_path for s in sources])
    default = str((stages.read_scope() or {}).get("default_language") or "")
    language = {d.doc_path: d.language for d in catalog.documents} if catalog is not None else {}
    return [s for s in sources
            if headers.get(s.doc_path, {}).get(INDEXED, ("",))[0] == s.content_hash
            and (not default or not language.get(s.doc_path) or same_language(language[s.doc_path], default))]


def synthetic_summary(built) -> dict:
    m = built.manifest
    sample = ["| question | expected | kind |", "|---|---|---|"]
    for q in built.questions[:10]:
        expected = "<br>".join(e.describe() for e in q.expected)
        sample.append(f"| {q.question} | {expected} | {q.metadata.get('synthetic', {}).get('kind', '')} |")
    return {
        "kind": SYNTHETIC,
        "version": m["version"],
        "generator": m["generator"],
        "seed": m["seed"],
        "questions": m["questions"],
        "documents": m["documents"],
        # how many documents the set could ask about: those indexed now, of those in the folder
        **{k: m[k] for k in ("documents_indexed", "documents_found") if k in m},
        "documents_regenerated": m["documents_regenerated"],
        "documents_reused": m["documents_reused"],
        "llm_calls": m["llm_calls"],
        "llm_fallbacks": m["llm_fallbacks"],
        "question_kinds": dg.MetadataValue.json(m["kinds"]),
        "path": dg.MetadataValue.path(str(built.path)),
        "sample_questions": dg.MetadataValue.md("\n".join(sample)),
    }


def synthetic_for_evaluation(context, settings, synthetic_key: dg.AssetKey):
    """The set synthetic_eval_set wrote in this same run, else brought up to date here (when this asset
    runs on its own: only changed documents cost anything)."""
    from rag_assets.evaluation.synthetic.folder import load_synthetic_set, synthetic_dir

    event = context.instance.get_latest_materialization_event(synthetic_key)
    if event is not None and event.run_id == context.run_id:
        loaded = load_synthetic_set(synthetic_dir(settings))
        if loaded is not None:
            return loaded
    return build_synthetic(settings, context.log)


def synthetic_eval_set_asset(corpus: Corpus, ingestion: IngestionAssets, group: str) -> dg.AssetsDefinition:
    """The corpus's synthetic_eval_set, after the assets whose records it reads: document_catalog,
    parsed_documents and markdown_blocks (the pages and their blocks), vector_index (which pages are
    indexed now)."""
    names = ingestion.names

    @dg.asset(
        deps=[ingestion.document_catalog, *ingestion.per_document[:2], ingestion.vector_index],
        key_prefix=names.prefix,
        group_name=group,
        description="Known-item questions generated from the documents (a synthetic eval set, versioned), "
                    "scored by retrieval_evaluation when the index has no labelled eval set. Only changed "
                    "documents are asked about again.",
    )
    def synthetic_eval_set(context: dg.AssetExecutionContext, config: SyntheticEvalConfig,
                           run_settings: RunSettingsResource) -> dg.MaterializeResult:
        """The main docs folder's synthetic eval set, under RAG_EVAL_RESULTS_DIR/synthetic/."""
        from rag_assets.evaluation.corpora import main_eval_sets

        settings = run_settings.settings_for(corpus)
        labelled = main_eval_sets(settings.eval_dir)
        if not (config.always or synthetic_wanted(settings, bool(labelled))):
            reason = ("synthetic sets are off (RAG_EVAL_SYNTHETIC=off)" if settings.eval_synthetic == "off" else
                      f"not needed: {len(labelled)} labelled eval set(s) under {settings.eval_dir} are scored instead "
                      "(RAG_EVAL_SYNTHETIC=always scores a synthetic set too)")
            context.log.info(f"skipped: {reason}")
            return dg.MaterializeResult(metadata={"kind": SYNTHETIC, "skipped": reason})
        built = build_synthetic(settings, context.log)
        context.log.info(f"synthetic eval set {built.version}: {len(built.questions)} questions, "
                         f"{len(built.documents_regenerated)} document(s) asked about again, {built.documents_reused} reused")
        return dg.MaterializeResult(metadata=synthetic_summary(built), data_version=dg.DataVersion(built.version))

    return synthetic_eval_set

