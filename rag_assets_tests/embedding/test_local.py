"""The offline all-MiniLM-L6-v2 embedder: the real int8 ONNX model and the vendored tokenizer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rag_assets.config import Settings
from rag_assets.embedding import Embedder, MiniLMOnnxEmbedder, load_embedder
from rag_assets.errors import ConfigurationError

CLS, SEP = 101, 102
COOKING = (
    "to make a simple tomato sauce warm olive oil in a wide pan , add sliced garlic and cook it gently "
    "until golden , then pour in crushed tomatoes with a pinch of salt and let the sauce simmer slowly . "
)
ASTRONOMY = (
    "the telescope observed distant galaxies and measured the red shift of their light , showing that "
    "the universe is expanding and that the stars in those galaxies are moving away from us . "
)


@pytest.fixture(scope="module")
def embedder() -> MiniLMOnnxEmbedder:
    model = MiniLMOnnxEmbedder(batch_size=4)  # small batches: a call of 9 texts spans three of them
    model.embed_query("warm up")  # load the session once for the module
    return model


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def pieces(embedder: MiniLMOnnxEmbedder, text: str) -> list[int]:
    """The word-piece ids of `text`, without [CLS]/[SEP], untruncated."""
    ids = embedder._tokenizers()[1].encode(text).ids
    assert ids[0] == CLS and ids[-1] == SEP
    return ids[1:-1]


def text_of(embedder: MiniLMOnnxEmbedder, n_pieces: int, source: str) -> str:
    """A text of exactly `n_pieces` word pieces cut from `source` (repeated as needed)."""
    repeats = n_pieces // 20 + 2
    ids = pieces(embedder, source * repeats)[:n_pieces]
    text = embedder._tokenizers()[1].decode(ids)
    assert pieces(embedder, text) == ids  # the cut text tokenises back to exactly those pieces
    return text


def test_shape_dtype_and_unit_norm(embedder):
    vectors = embedder.embed_documents(["Rate limits return HTTP 429.", "Streaming uses server-sent events."])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vectors).all()

    query = embedder.embed_query("Rate limits return HTTP 429.")
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(query, vectors[0], atol=1e-5)
    assert isinstance(embedder, Embedder)


def test_empty_list_and_single_string(embedder):
    empty = embedder.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    with pytest.raises(TypeError):
        embedder.embed_documents("one string is not a list of texts")


def test_order_is_kept_across_mixed_length_batches(embedder):
    texts = [
        "Short.",
        ASTRONOMY * 3,  # > 100 pieces
        "How do I stream responses?",
        COOKING,
        "x",
        "Evaluation grades each output on a five point scale and compares prompt versions side by side.",
        "",
        COOKING * 4,  # truncated at 256
        "Rate limits: 50 requests per minute on the free tier.",
    ]
    batched = embedder.embed_documents(texts)
    one_by_one = np.stack([embedder.embed_documents([t])[0] for t in texts])
    similarity = batched @ one_by_one.T
    assert (np.diag(similarity) >= 0.999).all(), np.diag(similarity)
    # every row is distinguishable from the others, so a mix-up would have been caught
    off_diagonal = similarity[~np.eye(len(texts), dtype=bool)]
    assert off_diagonal.max() < 0.99


def test_matches_the_reference_similarities_of_sentence_transformers(embedder):
    # sentence-transformers' README for all-MiniLM-L6-v2 (fp32, PyTorch) prints this matrix; the
    # int8 ONNX model with our tokenisation and pooling must land within rounding of it
    vectors = embedder.embed_documents(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    reference = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]])
    np.testing.assert_allclose(vectors @ vectors.T, reference, atol=0.01)


def test_numpy_arrays_of_texts_are_accepted(embedder):
    texts = ["alpha beta", "gamma delta"]
    np.testing.assert_allclose(embedder.embed_documents(np.array(texts)), embedder.embed_documents(texts), atol=1e-6)
    assert embedder.embed_documents(np.array([], dtype=str)).shape == (0, 384)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder):
    query, paraphrase, unrelated = embedder.embed_documents([
        "How do I reset my password?",
        "What are the steps to change my account password?",
        "The cat slept in the sun on the warm windowsill.",
    ])
    assert cos(query, paraphrase) > cos(query, unrelated) + 0.3
    assert cos(query, paraphrase) > 0.6


def test_inputs_between_128_and_256_pieces_are_not_cut_at_128(embedder):
    # the vendored tokenizer.json says max_length 128; the model takes 256 and so must we
    head = text_of(embedder, 126, COOKING)  # 126 pieces + [CLS] + [SEP] = the first 128 tokens
    tail = text_of(embedder, 72, ASTRONOMY)
    full = f"{head} {tail}"
    assert embedder.count_tokens(head) == 128
    assert embedder.count_tokens(full) == 200
    assert embedder.fits(full)

    v_full, v_head = embedder.embed_documents([full, head])
    assert cos(v_full, v_head) < 0.98  # the astronomy tail changed the vector: it was seen
    v_tail = embedder.embed_query(tail)
    assert cos(v_full, v_tail) > cos(v_head, v_tail) + 0.05


def test_inputs_over_256_pieces_are_cut_at_256(embedder):
    prefix = text_of(embedder, 254, COOKING)  # 254 + 2 special tokens = the model's 256
    long = f"{prefix} {ASTRONOMY * 2}"
    assert embedder.count_tokens(prefix) == 256 and embedder.fits(prefix)
    assert embedder.count_tokens(long) > 256 and not embedder.fits(long)

    v_long, v_prefix = embedder.embed_documents([long, prefix])
    assert cos(v_long, v_prefix) >= 0.999  # everything after token 256 was dropped


def test_count_tokens_and_fits(embedder):
    assert embedder.count_tokens("") == 2  # [CLS] [SEP]
    assert embedder.count_tokens("hello world") == 4
    assert embedder.count_tokens("Hello World") == 4  # the tokenizer lower-cases
    at_limit = text_of(embedder, 254, ASTRONOMY)
    over = text_of(embedder, 255, ASTRONOMY)
    assert (embedder.count_tokens(at_limit), embedder.fits(at_limit)) == (256, True)
    assert (embedder.count_tokens(over), embedder.fits(over)) == (257, False)
    huge = COOKING * 40
    assert embedder.count_tokens(huge) > 1500  # counting never truncates


def test_a_text_counted_again_is_not_tokenized_again():
    fresh = MiniLMOnnxEmbedder()
    texts = [f"{COOKING} {i}" for i in range(50)]
    first = [fresh.count_tokens(t) for t in texts]
    tokenized = fresh._count_kept.cache_info().misses
    assert [fresh.count_tokens("".join(list(t))) for t in texts] == first  # equal text, another object
    assert fresh._count_kept.cache_info().misses == tokenized
    assert [fresh._count(t) for t in texts] == first


def test_counting_does_not_load_the_model():
    fresh = MiniLMOnnxEmbedder()
    assert fresh.count_tokens("hello world") == 4 and fresh.fits("hello world")
    assert fresh._session is None


def test_first_use_from_many_threads_loads_once_and_agrees(embedder):
    fresh = MiniLMOnnxEmbedder(batch_size=2)
    texts = ["alpha beta", COOKING, "gamma", ASTRONOMY, "delta epsilon zeta"] * 2
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: fresh.embed_query(t), texts))
    reference = embedder.embed_documents(texts)
    np.testing.assert_allclose(np.stack(results), reference, atol=1e-4)


def test_load_embedder_default_is_the_local_minilm(monkeypatch):
    for var in ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_EMBED_BATCH_SIZE", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    for model in (load_embedder(Settings.from_env().embedding), load_embedder(Settings.from_env(env={}).embedding)):
        assert isinstance(model, MiniLMOnnxEmbedder)
        assert (model.model_name, model.dimension, model.max_input_tokens) == ("all-MiniLM-L6-v2", 384, 256)
        assert model.batch_size == 32

    tuned = load_embedder(Settings.from_env(env={"RAG_EMBED_BATCH_SIZE": "8"}).embedding)
    assert tuned.batch_size == 8
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        model = load_embedder(Settings.from_env(env={"RAG_EMBEDDER": "local", "RAG_EMBEDDING_MODEL": name}).embedding)
        assert isinstance(model, MiniLMOnnxEmbedder)


def test_an_unknown_local_model_is_a_configuration_error():
    settings = Settings.from_env(env={"RAG_EMBEDDER": "local", "RAG_EMBEDDING_MODEL": "BAAI/bge-small-en-v1.5"})
    with pytest.raises(ConfigurationError, match="RAG_EMBEDDING_MODEL") as info:
        load_embedder(settings.embedding)
    assert "bge-small" in str(info.value)


def test_an_unknown_embedder_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="RAG_EMBEDDER"):
        Settings.from_env(env={"RAG_EMBEDDER": "cohere"})


def test_warm_in_background_loads_the_model_the_runs_share(tmp_path):
    from rag_assets.embedding import shared_embedder, warm_in_background
    from rag_assets.orchestration.resources import EmbedderResource

    settings = Settings.from_env({"RAG_EMBED_BATCH_SIZE": "7"}, cache_dir=tmp_path)  # a key no other test shares
    thread = warm_in_background(settings)
    assert thread is not None
    thread.join(timeout=120)
    embedder = shared_embedder(settings)
    assert embedder._session is not None, "the session was not loaded"
    assert EmbedderResource().get(settings) is embedder  # the same model the assets embed with
    assert warm_in_background(Settings.from_env({"RAG_EMBEDDER": "openai", "OPENAI_API_KEY": "k"})) is None
