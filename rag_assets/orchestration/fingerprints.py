"""What a document's stage records must carry to be current (the corpus's chunking, embedder and store),
and the one staleness rule `rag ingest`, the sensor and the schedule ask (stale_now)."""

from collections.abc import Sequence

from rag_assets.config import Settings
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.document_metadata import MetadataPolicy
from rag_assets.ingest.stages import Fingerprints, chunking_fingerprint, index_fingerprint, stale_documents
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.models import DocumentRef

from .resources import EmbedderResource, IndexResources, VectorStoreResource


def chunking_setup(embedder_resource: EmbedderResource, settings: Settings):
    """(embedder, chunking config, token counter, chunk fingerprint): what document_chunks chunks with."""
    settings = embedder_resource.settings(settings)
    embedder = embedder_resource.get(settings)
    counter = TokenCounter.for_name(settings.chunking.tiktoken_encoding, settings.chunking.tiktoken_dir)
    return embedder, ChunkingConfig.from_settings(settings.chunking), counter, chunking_fingerprint_for(settings, embedder)


def chunking_fingerprint_for(settings: Settings, embedder) -> str:
    """What a chunk record must carry to be current (no model or tokenizer is loaded for it)."""
    config = ChunkingConfig.from_settings(settings.chunking)
    return chunking_fingerprint(config, settings.chunking.tiktoken_encoding, embedder.model_name, embedder.max_input_tokens,
                                MetadataPolicy.from_settings(settings.ingest).fingerprint)


def current_fingerprints(embedder: EmbedderResource, vector_store: VectorStoreResource, settings: Settings) -> Fingerprints:
    """What every stage record must carry right now to count as current (stale_documents' input)."""
    settings = embedder.settings(settings)
    model = embedder.get(settings)
    return Fingerprints(
        parsed=MetadataPolicy.from_settings(settings.ingest).fingerprint,
        chunks=chunking_fingerprint_for(settings, model),
        embedded=model.model_name,
        indexed=index_fingerprint(vector_store.settings(settings).collection, vector_store.collection_id(model, settings),
                                   model.model_name),
    )


def stale_now(refs: Sequence[DocumentRef], stages: StageStore, settings: Settings,
              resources: IndexResources) -> dict[str, str]:
    """ingestion.stale_documents against the corpus's embedder and store as `resources` are
    configured (those the runs use): the one staleness rule that `rag ingest`, the sensor and the
    schedule ask (doc_path -> why)."""
    return stale_documents(refs, stages, current_fingerprints(resources.embedder, resources.vector_store, settings))
