"""The Dagster layer, materialized for real: a SQLite instance in a temporary DAGSTER_HOME, the real
model, a real embedded Chroma, real files."""

import os

import dagster as dg
import pytest
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from rag_assets.config import Settings
from rag_assets.orchestration.definitions import defs
from rag_assets.orchestration.definitions import PER_DOCUMENT_ASSETS, document_catalog, documents_partitions, index_audit, vector_index
from rag_assets.orchestration.resources import EmbedderResource, VectorStoreResource, project_resources
from rag_assets.embedding import load_embedder
from rag_assets.index.stage_store import StageStore
from rag_assets.index.chroma_store import ChromaStore

RESOURCES = project_resources()


@pytest.fixture
def instance(rag_env, dagster_home):
    with dg.DagsterInstance.get() as inst:
        yield inst


def _store() -> ChromaStore:
    settings = Settings.from_env()
    embedder = load_embedder(settings.embedding)
    return ChromaStore(
        path=settings.chroma_path, collection=settings.collection,
        embedding_model=embedder.model_name, dimension=embedder.dimension,
    )


def _materialize_catalog(instance) -> dg.ExecuteInProcessResult:
    result = dg.materialize([document_catalog], instance=instance, resources=RESOURCES)
    assert result.success
    return result


def _materialize_all(instance) -> dg.ExecuteInProcessResult:
    keys = instance.get_dynamic_partitions(documents_partitions.name)
    return dg.materialize(
        PER_DOCUMENT_ASSETS,
        instance=instance,
        resources=RESOURCES,
        tags={ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]},
        raise_on_error=False,
    )


def _metadata(result, asset) -> dict:
    mats = result.asset_materializations_for_node(asset.op.name)
    return {k: v.value for k, v in mats[0].metadata.items()}


def _checks(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_catalog_registers_every_document_as_a_partition(instance):
    result = _materialize_catalog(instance)
    keys = set(instance.get_dynamic_partitions(documents_partitions.name))
    assert keys == {"guide/evaluation.md", "guide/streaming.md", "rate-limits.md"}
    meta = _metadata(result, document_catalog)
    assert meta["documents"] == 3 and meta["partitions_added"] == 3


def test_a_runs_settings_come_from_its_run_settings_config(instance, rag_env, tmp_path):
    """What the CLI's launched runs (and the launchpad) do: variables over the corpus's settings."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "only.md").write_text("---\ntitle: Only\n---\n# Only\n\nThe one page of another folder.\n")
    config = {"resources": {"run_settings": {"config": {"variables": {"RAG_DOCS_DIR": str(other)}}}}}
    assert dg.materialize([document_catalog], instance=instance, resources=RESOURCES, run_config=config).success
    assert instance.get_dynamic_partitions(documents_partitions.name) == ["only.md"]


def test_one_partition_materializes_one_document_through_every_stage(instance):
    _materialize_catalog(instance)
    result = dg.materialize(
        PER_DOCUMENT_ASSETS, instance=instance, resources=RESOURCES, partition_key="guide/evaluation.md"
    )
    assert result.success
    chunk_meta = _metadata(result, PER_DOCUMENT_ASSETS[2])  # document_chunks
    assert chunk_meta["chunks"] >= 2 and chunk_meta["tokens_max"] <= 200
    index_meta = _metadata(result, vector_index)
    assert index_meta["vectors_written"] == chunk_meta["chunks"]
    assert _store().doc_paths() == {"guide/evaluation.md"}
    materialized = instance.get_materialized_partitions(vector_index.key)
    assert materialized == {"guide/evaluation.md"}


def test_range_run_indexes_all_and_checks_pass_then_rerun_is_a_no_op(instance):
    _materialize_catalog(instance)
    result = _materialize_all(instance)
    assert result.success
    assert _checks(result) == {
        "chunks_within_embedder_limit": True,
        "chunk_metadata_present": True,
        "all_documents_indexed": True,
        "index_matches_records": True,
    }
    assert len(result.get_asset_materialization_events()) == 3 * len(PER_DOCUMENT_ASSETS)
    count = _store().count()

    again = _materialize_all(instance)
    embed_meta = _metadata(again, PER_DOCUMENT_ASSETS[3])  # chunk_embeddings
    assert embed_meta["embeddings_computed"] == 0 and embed_meta["documents_unchanged"] == 3
    # the staleness rule asks the resources as configured: none is stale for the ones the runs used,
    # every document for a store configured elsewhere (its collection holds none of them)
    from rag_assets.ingest.discovery import discover_for
    from rag_assets.orchestration.fingerprints import stale_now
    from rag_assets.orchestration.resources import IndexResources

    settings = Settings.from_env()
    stages = StageStore.for_settings(settings.paths)
    refs = discover_for(settings, known=stages.read_catalog()).documents
    assert stale_now(refs, stages, settings, IndexResources.of(RESOURCES)) == {}
    elsewhere = IndexResources(EmbedderResource(), VectorStoreResource(collection="elsewhere_chunks"))
    assert set(stale_now(refs, stages, settings, elsewhere)) == {r.doc_path for r in refs}
    assert _store().count() == count


def test_deleted_file_loses_its_vectors_and_its_partition(instance, rag_env):
    _materialize_catalog(instance)
    assert _materialize_all(instance).success
    os.remove(rag_env / "docs" / "rate-limits.md")
    result = _materialize_catalog(instance)
    meta = _metadata(result, document_catalog)
    assert meta["partitions_removed"] == 1 and meta["vectors_deleted"] >= 1
    assert "rate-limits.md" not in instance.get_dynamic_partitions(documents_partitions.name)
    assert _store().doc_paths() == {"guide/evaluation.md", "guide/streaming.md"}
    assert StageStore(Settings.from_env().state_dir).read("indexed", "rate-limits.md") is None


def test_audit_checks_the_whole_index(instance):
    _materialize_catalog(instance)
    assert _materialize_all(instance).success
    result = dg.materialize([index_audit], instance=instance, resources=RESOURCES)
    assert result.success
    assert all(_checks(result).values()) and len(_checks(result)) == 4
    assert _metadata(result, index_audit)["documents"] == 3


def test_a_bad_document_fails_alone_with_its_reason(instance, rag_env):
    (rag_env / "docs" / "broken.md").write_text("---\ntitle: [unclosed\n---\n# Broken\n\ntext\n", encoding="utf-8")
    _materialize_catalog(instance)
    result = _materialize_all(instance)
    parse_meta = _metadata(result, PER_DOCUMENT_ASSETS[0])
    assert parse_meta["documents_failed"] == 1
    assert "broken.md:2: invalid YAML frontmatter" in str(parse_meta["errors"])
    # the three good documents are indexed; the check names the bad one
    assert _store().doc_paths() == {"guide/evaluation.md", "guide/streaming.md", "rate-limits.md"}
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["all_documents_indexed"].passed is False
    assert "broken.md" in str(checks["all_documents_indexed"].metadata["problems"].value)
    assert checks["index_matches_records"].passed is True


def test_definitions_load_with_lineage_in_order():
    graph = defs.resolve_asset_graph()
    chain = ["document_catalog", "parsed_documents", "markdown_blocks", "document_chunks", "chunk_embeddings",
             "vector_index", "index_audit"]
    for upstream, downstream in zip(chain, chain[1:]):
        assert dg.AssetKey(upstream) in graph.get(dg.AssetKey(downstream)).parent_keys
    assert defs.resolve_sensor_def("docs_sensor") is not None
    assert defs.resolve_schedule_def("nightly_reconcile") is not None
