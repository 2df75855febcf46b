"""The multi-pipeline API contract (`query`, `load_documents`, `embed`: inputs, response structures,
errors, and the test cases it states), written as its callers write them: `pipeline.query("...")`,
`pipeline.load_documents([Document(content=..., metadata={...})])`, their assertions. Where we differ on
purpose the test pins our behaviour and docs/api.md lists the difference."""

import dataclasses
import logging

import pytest

from rag_assets import Document, RAGPipeline
from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError, DimensionMismatchError, VectorDBUnavailableError
from rag_assets_tests.support.contract_documents import contract_settings, dagster_home_in

RESPONSE_METADATA = ("retrieval_method", "context_count", "sources", "execution_time_ms", "pipeline_type",
                     "fallback_used")
LOAD_KEYS = ("documents_loaded", "documents_failed", "embeddings_generated", "storage_complete", "errors",
             "execution_time_ms")


@pytest.fixture
def pipeline(built):
    return RAGPipeline.from_settings(built[1])


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """A pipeline over Settings of its own folder, and the contract's sample documents loaded into it."""
    root = tmp_path_factory.mktemp("loaded")
    sample_documents = [
        Document(content="# Diabetes\n\nCommon symptoms of diabetes are thirst, frequent urination and tiredness.",
                 metadata={"source": "diabetes.md"}),
        Document(content="# Hypertension\n\nHigh blood pressure often has no symptoms; measure it regularly.",
                 metadata={"source": "hypertension.md"}),
    ]
    with dagster_home_in(root):
        pipeline = RAGPipeline.from_settings(contract_settings(root))
        result = pipeline.load_documents(sample_documents)
    return pipeline, sample_documents, result, root


# -- its stated test cases -----------------------------------------------------------------------
def test_query_validates_required_parameter(pipeline):
    with pytest.raises(ValueError, match="query.*required"):
        pipeline.query(query=None)
    with pytest.raises(ValueError, match="query.*empty"):
        pipeline.query(query="")


def test_query_returns_valid_structure(pipeline):
    result = pipeline.query("How do I add more test cases?")
    assert "answer" in result
    assert "contexts" in result
    assert "metadata" in result
    assert "retrieval_method" in result["metadata"]
    assert "context_count" in result["metadata"]


def test_query_handles_missing_api_key(pipeline, monkeypatch):
    """The contract raises ConfigurationError naming OPENAI_API_KEY whenever the key is missing. Ours
    answers only when asked or configured (retrieval needs no key): asked without the key, it raises
    as the contract says; not asked, it retrieves."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAG_CHAT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        pipeline.query("test query", generate_answer=True)
    assert pipeline.query("test query")["answer"] == ""


def test_load_documents_validates_input(pipeline):
    with pytest.raises(ValueError, match="documents.*required"):
        pipeline.load_documents(documents=[])
    with pytest.raises(ValueError, match="content.*required"):
        pipeline.load_documents(documents=[Document(metadata={})])


def test_load_documents_returns_valid_structure(loaded):
    _, sample_documents, result, _ = loaded
    assert "documents_loaded" in result
    assert "documents_failed" in result
    assert "embeddings_generated" in result
    assert result["documents_loaded"] == len(sample_documents)


# -- query: inputs, structure, errors ------------------------------------------------------------
def test_query_structure_in_full_and_its_methods(pipeline):
    result = pipeline.query("How do I add more test cases?", method="vector", top_k=3)
    assert isinstance(result["answer"], str) and isinstance(result["contexts"], list)
    assert all(key in result["metadata"] for key in RESPONSE_METADATA)
    assert result["metadata"]["context_count"] == len(result["contexts"]) <= 3
    assert result["metadata"]["fallback_used"] is False and result["metadata"]["execution_time_ms"] > 0
    for method in ("vector", "hybrid", "rrf", "keyword"):
        assert pipeline.query("test cases", method=method)["metadata"]["retrieval_method"] in ("vector", "hybrid", "keyword")
    with pytest.raises(ValueError, match="mode"):
        pipeline.query("test cases", method="graph")


@pytest.mark.parametrize("top_k", [0, 101, -1, 2.5, True])
def test_query_top_k_is_1_to_100(pipeline, top_k):
    with pytest.raises(ValueError, match="top_k"):
        pipeline.query("test cases", top_k=top_k)


def test_query_length_limit_is_ours_2000_by_default_the_contracts_10000_when_set(built):
    """Differ on purpose (docs/api.md): the rules-bot contract limits queries to 2,000 characters, this
    one to 10,000; RAG_MAX_QUERY_CHARS=10000 takes this one's."""
    long_query = "test cases " * 900  # 9,900 characters
    with pytest.raises(ValueError, match="query is too long"):
        RAGPipeline.from_settings(built[1]).query(long_query)
    wide = RAGPipeline.from_settings(dataclasses.replace(built[1], max_query_chars=10_000))
    assert "contexts" in wide.query(long_query)
    with pytest.raises(ValueError, match="query is too long"):
        wide.query("x" * 10_001)


def test_database_connection_failure_is_a_connection_error_with_guidance(tmp_path):
    settings = contract_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=9)
    with pytest.raises(ConnectionError) as err:
        RAGPipeline.from_settings(settings).query("test query")
    assert isinstance(err.value, VectorDBUnavailableError)
    assert "127.0.0.1:9" in str(err.value) and "CHROMA_HOST" in str(err.value)


def test_missing_embedding_model_is_a_configuration_error_naming_it():
    with pytest.raises(ConfigurationError, match="no-such-model"):
        RAGPipeline.from_settings(Settings.from_env({}, embedder="local", embedding_model="no-such-model"))


def test_dimension_mismatch_names_the_dimensions(pipeline):
    with pytest.raises(DimensionMismatchError) as err:
        pipeline.retriever.store.query([0.0] * 1536)
    assert "1536" in str(err.value) and "384" in str(err.value)


# -- load_documents --------------------------------------------------------------------------------
def test_load_documents_response_in_full_and_the_ids_it_gave(loaded):
    pipeline, sample_documents, result, _ = loaded
    assert all(key in result for key in LOAD_KEYS)
    assert result["documents_failed"] == 0 and result["storage_complete"] is True and result["errors"] == []
    assert result["embeddings_generated"] >= 2 and result["execution_time_ms"] > 0
    ids = result["document_ids"]  # documents without an id get one derived from source and content
    assert len(ids) == 2 and all(i.startswith("doc-") for i in ids)
    hit = pipeline.search("What are the symptoms of diabetes?", "hybrid", 1)[0]
    assert hit.metadata["document_id"] == ids[0]


def test_a_document_loaded_again_is_the_same_document(loaded):
    pipeline, sample_documents, result, root = loaded
    with dagster_home_in(root):
        again = pipeline.load_documents(sample_documents[:1])
    assert again["document_ids"] == result["document_ids"][:1]
    assert again["embeddings_generated"] == 0 and again["documents_failed"] == 0
    chunks = [meta for _, _, meta in pipeline.retriever.store.iter_all() if meta.get("document_id") == again["document_ids"][0]]
    assert len({m["doc_path"] for m in chunks}) == 1  # not stored twice


def test_the_derived_id_deletes_the_document(tmp_path):
    with dagster_home_in(tmp_path):
        pipeline = RAGPipeline.from_settings(contract_settings(tmp_path))
        loaded = pipeline.load_documents([Document(content="# Note\n\nThe kettle is descaled weekly.", metadata={})])
        deleted = pipeline.delete_documents(loaded["document_ids"])
    assert deleted["documents_deleted"] == 1 and pipeline.search("kettle descaled", "keyword", 1) == []


@pytest.mark.parametrize("bad", [[{"content": "# No metadata\n\nText."}], [Document(content="# x\n\ny", metadata=None)]])
def test_a_document_without_metadata_is_refused(pipeline, bad):
    with pytest.raises(ValueError, match="metadata is required"):
        pipeline.load_documents(bad)


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True])
def test_batch_size_must_be_a_positive_integer(pipeline, batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        pipeline.load_documents([Document(content="x", metadata={})], batch_size=batch_size)


def test_an_empty_document_is_skipped_with_a_warning_and_the_others_load(tmp_path, caplog):
    with dagster_home_in(tmp_path), caplog.at_level(logging.WARNING):
        pipeline = RAGPipeline.from_settings(contract_settings(tmp_path))
        result = pipeline.load_documents([Document(content="  ", metadata={}),
                                          Document(content="# Kept\n\nThis one loads.", metadata={"source": "k"})])
    assert (result["documents_loaded"], result["documents_failed"]) == (1, 1)
    assert result["errors"][0].startswith("document 0: content is required")
    assert any("content is required" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


# -- embed -----------------------------------------------------------------------------------------
def test_embed_returns_one_384_float_vector_per_text(pipeline):
    vectors = pipeline.embed(["first text", "second text"])
    assert len(vectors) == 2 and all(len(v) == 384 and all(isinstance(x, float) for x in v) for v in vectors)


@pytest.mark.parametrize("bad", [[], "a string", [1, 2], None])
def test_embed_validates_its_input(pipeline, bad):
    with pytest.raises(ValueError):
        pipeline.embed(bad)


def test_embed_truncates_an_over_long_text_with_a_warning(pipeline, caplog):
    with caplog.at_level(logging.WARNING, logger="rag_assets.pipeline"):
        assert len(pipeline.embed(["word " * 600])[0]) == 384
    assert any("exceed" in r.getMessage() for r in caplog.records)
