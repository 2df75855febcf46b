"""Asset checks: the index's invariants (rag_assets.invariants), evaluated after each run."""


import dagster as dg

from rag_assets import invariants
from rag_assets.stage_store import StageStore

from .assets import chunking_setup, document_chunks, vector_index
from .resources import EmbedderResource, VectorStoreResource, current_settings


def _state():
    stages = StageStore(current_settings().state_dir)
    catalog = stages.read_catalog()
    if catalog is None:
        raise dg.Failure("no catalog yet: materialize document_catalog first")
    return stages, catalog


def _result(finding: invariants.Finding, severity=dg.AssetCheckSeverity.ERROR) -> dg.AssetCheckResult:
    metadata: dict = dict(finding.counts)
    if finding.problems:
        metadata["problems"] = dg.MetadataValue.md("\n".join(f"- {p}" for p in finding.problems[:100]))
    return dg.AssetCheckResult(passed=finding.passed, severity=severity, metadata=metadata)


@dg.asset_check(asset=document_chunks, description="No chunk is silently truncated by the embedder")
def chunks_within_embedder_limit(embedder: EmbedderResource) -> dg.AssetCheckResult:
    model = chunking_setup(embedder)[0]
    return _result(invariants.chunks_within_limit(*_state(), model.fits))


@dg.asset_check(asset=document_chunks, description="Every chunk carries its id, hash, text and document metadata")
def chunk_metadata_present() -> dg.AssetCheckResult:
    return _result(invariants.chunk_metadata_complete(*_state()))


@dg.asset_check(asset=vector_index, description="Every discovered document is indexed at its current version")
def all_documents_indexed() -> dg.AssetCheckResult:
    return _result(invariants.documents_indexed(*_state()))


@dg.asset_check(asset=vector_index, description="Chroma holds exactly the recorded chunks: no orphans, no gaps")
def index_matches_records(embedder: EmbedderResource, vector_store: VectorStoreResource) -> dg.AssetCheckResult:
    stages, catalog = _state()
    with vector_store.writer(embedder.get()) as store:
        return _result(invariants.index_matches_records(stages, catalog, store))


INGESTION_CHECKS = [chunks_within_embedder_limit, chunk_metadata_present, all_documents_indexed, index_matches_records]
