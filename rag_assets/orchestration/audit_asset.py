"""index_audit: the whole index checked against the catalog and the records (run by nightly_reconcile,
or on demand): what the per-run checks verify for their documents, for every document."""

import time

import dagster as dg

from rag_assets.corpus import Corpus
from rag_assets.index import invariants
from rag_assets.index.stage_store import StageStore

from .asset_support import check_result, check_specs
from .naming import CorpusNames
from .resources import EmbedderResource, RunSettingsResource, VectorStoreResource

AUDIT_CHECKS = ("audit_all_documents_indexed", "audit_no_orphan_vectors", "audit_chunks_within_embedder_limit",
                "audit_chunk_metadata_present")


def build_index_audit(corpus: Corpus, names: CorpusNames, group: str,
                      vector_index: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The corpus's index_audit asset, after its vector_index."""
    @dg.asset(
        deps=[vector_index],
        key_prefix=names.prefix,
        group_name=group,
        check_specs=check_specs(names.key("index_audit"), {
            AUDIT_CHECKS[0]: "Every discovered document is indexed at its current version",
            AUDIT_CHECKS[1]: "The store holds exactly the recorded chunks: no orphans, no gaps",
            AUDIT_CHECKS[2]: "No chunk is silently truncated by the embedder",
            AUDIT_CHECKS[3]: "Every chunk carries its id, hash, text and metadata",
        }),
    )
    def index_audit(
        context: dg.AssetExecutionContext, embedder: EmbedderResource, vector_store: VectorStoreResource,
        run_settings: RunSettingsResource,
    ) -> dg.MaterializeResult:
        """The whole index checked against the catalog and the records (run by nightly_reconcile, or
        on demand): what the per-run checks verify for their documents, for every document."""
        settings = embedder.settings(run_settings.settings_for(corpus))
        model = embedder.get(settings)
        stages = StageStore.for_settings(settings.paths)
        catalog = stages.read_catalog()
        if catalog is None:
            raise dg.Failure(description="no catalog yet: materialize document_catalog (or run `rag ingest`) first")
        started = time.perf_counter()
        store = vector_store.open(model, settings)
        refs = catalog.documents
        within_limit, metadata_present = invariants.chunk_checks(stages, refs, model.fits)  # one read of the chunks
        findings = {
            AUDIT_CHECKS[0]: invariants.documents_indexed(stages, refs, catalog.errors),
            AUDIT_CHECKS[1]: invariants.index_matches_records(stages, refs, store, whole_store=True),
            AUDIT_CHECKS[2]: within_limit,
            AUDIT_CHECKS[3]: metadata_present,
        }
        metadata = {
            "documents": len(refs),
            "vectors": findings[AUDIT_CHECKS[1]].counts["vectors"],
            "problems": sum(len(f.problems) for f in findings.values()),
            "seconds": round(time.perf_counter() - started, 3),
        }
        return dg.MaterializeResult(metadata=metadata, check_results=[check_result(n, f) for n, f in findings.items()])

    return index_audit
