"""One rule per value (rag_assets.config.rules): the chunk sizes are checked by the same rule whether they
come from the environment or are given to the chunker directly."""

import pytest

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError
from rag_assets.ingest.chunking.config import ChunkingConfig


@pytest.mark.parametrize("sizes", [dict(overlap_tokens=70), dict(overlap_tokens=100), dict(min_tokens=0)])
def test_chunk_sizes_meet_one_rule_from_the_environment_and_in_the_chunker(sizes):
    """The overlap stays under half the maximum (the chunker used to allow up to the maximum), and the
    smallest chunk is positive (the chunker used to allow 0)."""
    variables = {f"RAG_CHUNK_{name.upper()}": str(value) for name, value in sizes.items()}
    with pytest.raises(ConfigurationError) as from_env:
        Settings.from_env(variables)
    with pytest.raises(ValueError) as direct:
        ChunkingConfig(**sizes)
    assert str(direct.value) == str(from_env.value)


def test_chunk_sizes_valid_before_stay_valid():
    assert ChunkingConfig(overlap_tokens=69).overlap_tokens == 69
    assert ChunkingConfig() == ChunkingConfig.from_settings(Settings.from_env({}).chunking)
