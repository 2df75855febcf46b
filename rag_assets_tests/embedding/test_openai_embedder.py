"""OpenAIEmbedder against a real HTTP server (rag_assets_tests.support.openai_server), through the real openai client.

Nothing is mocked: the embedder builds its own `openai.OpenAI` client pointed at the stub server,
which injects 429s, 500s, slow answers and malformed bodies on request.
"""

from __future__ import annotations

import logging
import time
import traceback

import numpy as np
import pytest
from openai import OpenAI

from rag_assets.config import Settings
from rag_assets.embedding import Embedder, OpenAIEmbedder, load_embedder
from rag_assets.errors import ConfigurationError, EmbeddingError, EmbeddingServiceUnavailable
from rag_assets.ingest.tokens import TokenCounter
from rag_assets_tests.support.openai_server import EMBEDDINGS_PATH, Fault, OpenAIStubServer, fake_embedding

SECRET = "sk-test-SECRET123456"
MODEL = "text-embedding-3-small"
TEXTS = [
    "Rate limits return HTTP 429.",
    "Streaming uses server-sent events.",
    "Evaluation grades each output.",
    "Prompt caching lowers cost.",
    "Tool use lets the model call functions.",
]


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # never route the loopback through a proxy
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    # unnormalised vectors, so the embedder's own L2 normalisation is what the tests see
    with OpenAIStubServer(api_key=SECRET, normalise=False) as srv:
        yield srv


@pytest.fixture
def make_embedder(server, tmp_path):
    def make(**kwargs) -> OpenAIEmbedder:
        options = dict(
            api_key=SECRET, base_url=kwargs.pop("base_url", None) or server.base_url, batch_size=2, max_retries=3, timeout_seconds=2.0,
            backoff_base=0.001, backoff_max=0.01, tiktoken_cache_dir=tmp_path / "tiktoken",
        )
        options.update(kwargs)
        return OpenAIEmbedder(**options)

    return make


def expected(texts: list[str], dimension: int = 1536) -> np.ndarray:
    rows = np.array([fake_embedding(t, dimension, normalise=False) for t in texts], dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text
        assert "SECRET123456" not in text


# -- the happy path ----------------------------------------------------------------------------
def test_vectors_are_unit_float32_in_input_order_and_batched(server, make_embedder):
    embedder = make_embedder(batch_size=2)
    vectors = embedder.embed_documents(TEXTS)

    assert vectors.shape == (5, 1536)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-5)  # row i is text i
    assert isinstance(embedder, Embedder)

    sent = server.embedding_requests
    assert sorted(text for r in sent for text in r.inputs) == sorted(TEXTS)  # each input sent once
    assert sorted(len(r.inputs) for r in sent) == [1, 2, 2]
    for request in sent:
        assert request.method == "POST"
        assert request.headers["authorization"] == f"Bearer {SECRET}"
        assert request.json["model"] == MODEL
        assert request.json["encoding_format"] == "base64"


def test_out_of_order_data_is_put_back_by_index(server, make_embedder):
    server.inject(Fault.shuffled())
    vectors = make_embedder(batch_size=5).embed_documents(TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-5)
    assert len(server.embedding_requests) == 1


def test_embed_query_and_empty_input(server, make_embedder):
    embedder = make_embedder()
    query = embedder.embed_query("how do I stream?")
    assert query.shape == (1536,) and query.dtype == np.float32
    np.testing.assert_allclose(query, expected(["how do I stream?"])[0], atol=1e-5)

    empty = embedder.embed_documents([])
    assert empty.shape == (0, 1536) and empty.dtype == np.float32
    assert len(server.embedding_requests) == 1  # no request for no texts
    with pytest.raises(TypeError):
        embedder.embed_documents("a single string")


def test_too_long_inputs_are_cut_to_the_token_limit_and_empty_ones_are_not_sent_empty(server, make_embedder, tmp_path):
    embedder = make_embedder(batch_size=10)
    counter = TokenCounter.for_name("cl100k_base", tmp_path / "tiktoken")
    long_text = "retrieval augmented generation " * 3000  # ~9000 tokens
    assert counter.count(long_text) > embedder.max_input_tokens
    assert not embedder.fits(long_text) and embedder.fits("short")
    assert embedder.count_tokens("hello world") == 2

    vectors = embedder.embed_documents([long_text, ""])
    assert vectors.shape == (2, 1536)
    sent_empty, sent_long = sorted(server.embedding_requests[0].inputs, key=len)
    assert counter.count(sent_long) <= embedder.max_input_tokens
    assert long_text.startswith(sent_long.rstrip())
    assert sent_empty.strip() == "" and sent_empty != ""


def test_a_cut_inside_a_multibyte_character_still_fits(server, make_embedder, tmp_path):
    # token 8191 of this text ends half-way through the UTF-8 bytes of a Devanagari sign: decoding
    # the first 8191 tokens gives a U+FFFD that re-encodes to 8192 tokens, one over the limit
    counter = TokenCounter.for_name("cl100k_base", tmp_path / "tiktoken")
    text = "word " * 8189 + "\u0915\u094d\u0915\u094d" + " word" * 100
    assert counter.count(counter.decode(counter.encode(text)[:8191])) > 8191  # the trap is real

    make_embedder().embed_query(text)
    (sent,) = server.embedding_requests[0].inputs
    assert counter.count(sent) <= 8191
    assert text.startswith(sent.rstrip("\ufffd"))


def test_numpy_arrays_of_texts_are_accepted(server, make_embedder):
    vectors = make_embedder(batch_size=5).embed_documents(np.array(TEXTS[:3]))
    np.testing.assert_allclose(vectors, expected(TEXTS[:3]), atol=1e-5)
    assert make_embedder().embed_documents(np.array([], dtype=str)).shape == (0, 1536)


def test_unknown_model_dimension_is_asked_of_the_service(server, make_embedder):
    server.dimensions["in-house-embedder"] = 64
    embedder = make_embedder(model_name="in-house-embedder")
    assert embedder.dimension == 64
    assert len(server.embedding_requests) == 1
    assert embedder.embed_documents(TEXTS[:3]).shape == (3, 64)


# -- retries -----------------------------------------------------------------------------------
def test_429_is_retried_after_the_retry_after_delay_then_succeeds(server, make_embedder, caplog):
    caplog.set_level(logging.WARNING, logger="rag_assets")
    server.inject(Fault.status(429, retry_after=0.2), Fault.status(429, retry_after=0.2))
    embedder = make_embedder(batch_size=5, max_retries=3, backoff_base=0.001, backoff_max=1.0)

    vectors = embedder.embed_documents(TEXTS)

    np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-5)
    sent = server.embedding_requests
    assert [r.fault for r in sent] == ["status", "status", None]
    gaps = np.diff([r.received_at for r in sent])
    assert (gaps >= 0.19).all(), gaps  # waited as the server asked, not the 1 ms backoff
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and all("429" in r.getMessage() for r in retries)


def test_retry_after_ms_is_honoured(server, make_embedder):
    server.inject(Fault.status(429, retry_after_ms=250))
    make_embedder(backoff_base=0.001, backoff_max=1.0).embed_query("x")
    first, second = server.embedding_requests
    assert second.received_at - first.received_at >= 0.24


def test_retry_after_is_capped_by_backoff_max(server, make_embedder):
    server.inject(Fault.status(429, retry_after=30))
    started = time.monotonic()
    make_embedder(backoff_base=0.001, backoff_max=0.05).embed_query("x")
    assert time.monotonic() - started < 10  # not the 30 s asked for
    assert len(server.embedding_requests) == 2


def test_backoff_grows_exponentially_and_is_capped(server, make_embedder, caplog):
    caplog.set_level(logging.WARNING, logger="rag_assets")
    server.always(Fault.status(503))
    embedder = make_embedder(max_retries=5, backoff_base=0.05, backoff_max=0.1)
    with pytest.raises(EmbeddingError, match="5 attempt"):
        embedder.embed_query("x")
    # the waits the client chose (its "retrying in" line's delay), not the gaps a loaded machine stretches
    delays = [r.args[-1] for r in caplog.records if "retrying" in r.getMessage()]
    assert len(delays) == 4
    # ceilings 0.05, 0.1, then capped at 0.1 (uncapped: 0.2, 0.4); "equal jitter" waits between half
    # the ceiling and the ceiling
    assert 0.025 <= delays[0] <= 0.05 and all(0.05 <= d <= 0.1 for d in delays[1:]), delays
    gaps = np.diff([r.received_at for r in server.embedding_requests])
    assert (gaps >= np.array(delays)).all(), (gaps, delays)  # and it waited them before the next attempt


def test_persistent_500_ends_in_an_embedding_error_naming_the_status(server, make_embedder):
    server.always(Fault.status(500, message="the upstream exploded"))
    embedder = make_embedder(max_retries=3)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(TEXTS[:2])
    message = str(info.value)
    assert "HTTP 500" in message and "3 attempt" in message and "the upstream exploded" in message
    assert len(server.embedding_requests) == 3


def test_500_then_success_recovers(server, make_embedder):
    server.inject(Fault.status(500), Fault.status(502))
    vectors = make_embedder(max_retries=3).embed_documents(TEXTS[:2])
    np.testing.assert_allclose(vectors, expected(TEXTS[:2]), atol=1e-5)
    assert len(server.embedding_requests) == 3


def test_slow_response_times_out_is_retried_then_fails(server, make_embedder):
    server.always(Fault.slow(5.0))
    embedder = make_embedder(timeout_seconds=0.2, max_retries=2)
    started = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_query("x")
    assert time.monotonic() - started < 6  # gave up on each attempt after ~0.2 s, not 2 x 5 s
    assert "timeout" in str(info.value) and "2 attempt" in str(info.value)
    assert len(server.embedding_requests) == 2


def test_one_slow_response_then_success(server, make_embedder):
    server.inject(Fault.slow(5.0))
    vector = make_embedder(timeout_seconds=0.2, max_retries=2).embed_query("x")
    np.testing.assert_allclose(vector, expected(["x"])[0], atol=1e-5)
    assert [r.fault for r in server.embedding_requests] == ["slow", None]


@pytest.mark.parametrize(
    "fault",
    [Fault.invalid_json(), Fault.missing_data(), Fault.wrong_count(-1), Fault.wrong_count(+1),
     Fault.raw(200, "<html>gateway says hi</html>", content_type="text/html")],
    ids=["invalid-json", "missing-data", "one-vector-short", "one-vector-extra", "html"],
)
def test_malformed_bodies_are_retried(server, make_embedder, fault):
    server.inject(fault)
    vectors = make_embedder(max_retries=2).embed_documents(TEXTS[:2])
    np.testing.assert_allclose(vectors, expected(TEXTS[:2]), atol=1e-5)
    assert [r.fault for r in server.embedding_requests] == [fault.kind, None]


def test_persistently_malformed_bodies_end_in_an_embedding_error(server, make_embedder):
    server.always(Fault.wrong_count(-1))
    with pytest.raises(EmbeddingError, match="malformed") as info:
        make_embedder(max_retries=3).embed_documents(TEXTS[:2])
    assert "1 embeddings for 2 inputs" in str(info.value)
    assert len(server.embedding_requests) == 3


def test_a_changed_vector_size_is_not_retried(server, make_embedder):
    server.inject(Fault.wrong_dimension(8))
    with pytest.raises(EmbeddingError, match="8-d vectors, expected 1536"):
        make_embedder(max_retries=3).embed_query("x")
    assert len(server.embedding_requests) == 1


# -- errors that retrying cannot fix -----------------------------------------------------------
def test_401_is_not_retried_and_the_key_is_not_echoed(server, make_embedder):
    server.api_key = "sk-the-right-key-000"  # the server now rejects ours, quoting it back in full
    embedder = make_embedder(max_retries=5)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_query("x")
    message = str(info.value)
    assert "401" in message and "OPENAI_API_KEY" in message and "not retried" in message
    assert len(server.embedding_requests) == 1
    assert server.embedding_requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert_no_secret(message, "".join(traceback.format_exception(info.value)))


@pytest.mark.parametrize("status", [400, 403, 404])
def test_other_client_errors_are_not_retried(server, make_embedder, status):
    server.always(Fault.status(status))
    with pytest.raises(EmbeddingError, match=f"HTTP {status}"):
        make_embedder(max_retries=5).embed_query("x")
    assert len(server.embedding_requests) == 1


def test_unknown_model_is_a_404_that_names_the_setting(server, make_embedder):
    with pytest.raises(EmbeddingError, match="RAG_EMBEDDING_MODEL") as info:
        make_embedder(model_name="text-embedding-9-huge").embed_query("x")
    assert "404" in str(info.value)
    assert len(server.embedding_requests) == 1


def test_connection_refused_is_an_embedding_error(make_embedder, server):
    dead_url = server.base_url
    server.stop()
    with pytest.raises(EmbeddingError, match="connection error"):
        make_embedder(base_url=dead_url, max_retries=2).embed_query("x")


# -- configuration and secrets -----------------------------------------------------------------
@pytest.mark.parametrize("key", [None, "", "   "])
def test_a_missing_key_is_a_configuration_error_naming_the_variable(key):
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIEmbedder(api_key=key)


def test_load_embedder_without_a_key_names_openai_api_key(tmp_path):
    settings = Settings.from_env(env={"RAG_EMBEDDER": "openai", "RAG_CACHE_DIR": str(tmp_path)})
    with pytest.raises(ConfigurationError) as info:
        load_embedder(settings.embedding)
    assert "OPENAI_API_KEY" in str(info.value)


def test_load_embedder_builds_an_openai_embedder_from_the_environment(server, tmp_path):
    env = {
        "RAG_EMBEDDER": "openai",
        "OPENAI_API_KEY": SECRET,
        "OPENAI_BASE_URL": server.base_url,
        "RAG_OPENAI_MAX_RETRIES": "2",
        "RAG_OPENAI_TIMEOUT_SECONDS": "0.5",
        "RAG_CACHE_DIR": str(tmp_path / "cache"),
    }
    embedder = load_embedder(Settings.from_env(env=env).embedding)
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.model_name, embedder.dimension, embedder.max_input_tokens) == (MODEL, 1536, 8191)
    assert (embedder.max_retries, embedder.timeout_seconds, embedder.base_url) == (2, 0.5, server.base_url)

    server.always(Fault.status(500))
    with pytest.raises(EmbeddingError, match="2 attempt"):  # RAG_OPENAI_MAX_RETRIES is honoured
        embedder.embed_query("x")
    server.always(None)
    np.testing.assert_allclose(embedder.embed_query("x"), expected(["x"])[0], atol=1e-5)
    assert server.embedding_requests[-1].headers["authorization"] == f"Bearer {SECRET}"

    large = load_embedder(Settings.from_env(env={**env, "RAG_EMBEDDING_MODEL": "text-embedding-3-large"}).embedding)
    assert (large.model_name, large.dimension) == ("text-embedding-3-large", 3072)
    assert large.embed_query("x").shape == (3072,)


def test_an_embedder_given_no_base_url_talks_to_openai_not_to_the_environments_url(server, monkeypatch, tmp_path):
    """OPENAI_BASE_URL is a setting, resolved at the edge (Settings -> load_embedder passes it in): an
    embedder built without a base_url never reads it from the environment (nor lets the openai client)."""
    import socket

    with socket.socket() as free:  # a port nothing listens on: the way out to api.openai.com is closed, offline
        free.bind(("127.0.0.1", 0))
        dead_proxy = f"http://127.0.0.1:{free.getsockname()[1]}"
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, dead_proxy)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # NO_PROXY (the fixture): reachable, were it read
    embedder = OpenAIEmbedder(api_key=SECRET, max_retries=1, timeout_seconds=2.0, tiktoken_cache_dir=tmp_path / "tiktoken")
    with pytest.raises(EmbeddingError, match="connection error"):  # the closed way out
        embedder.embed_query("x")
    assert server.requests == []
    # from the settings, the same variable is the endpoint
    settings = Settings.from_env(env={"RAG_EMBEDDER": "openai", "OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": server.base_url,
                                      "RAG_CACHE_DIR": str(tmp_path / "cache")})
    np.testing.assert_allclose(load_embedder(settings.embedding).embed_query("x"), expected(["x"])[0], atol=1e-5)


def test_the_key_never_appears_in_reprs_errors_or_logs(server, make_embedder, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)  # the root logger: openai's, httpx's and httpcore's debug lines too
    embedder = make_embedder(max_retries=2)
    settings = Settings.from_env(env={"RAG_EMBEDDER": "openai", "OPENAI_API_KEY": SECRET,
                                      "OPENAI_BASE_URL": server.base_url, "RAG_CACHE_DIR": str(tmp_path)})
    texts = [repr(embedder), str(embedder), repr(settings), repr(load_embedder(settings.embedding))]

    server.inject(Fault.status(429, retry_after=0.0))
    embedder.embed_documents(TEXTS)  # a retry (logged) then success
    server.always(Fault.status(500, message=f"upstream saw Authorization: Bearer {SECRET}"))
    with pytest.raises(EmbeddingError) as failed:
        embedder.embed_query("x")
    server.always(None)
    server.api_key = "sk-another-key-999999"
    with pytest.raises(EmbeddingError) as rejected:
        embedder.embed_query("x")

    errors = [failed.value, rejected.value]
    texts += [str(e) for e in errors] + ["".join(traceback.format_exception(e)) for e in errors]
    texts += [caplog.text] + [str(r.args) for r in caplog.records]
    assert len(caplog.records) > 0  # the logs were really captured
    assert any("retrying" in r.getMessage() for r in caplog.records)
    assert_no_secret(*texts)
    assert "sk-another-key-999999" not in "".join(texts)  # any key-like text is scrubbed, not just ours


# -- the stub server itself (used by other suites for chat and float embeddings) ---------------
def test_stub_server_float_format_dimensions_and_chat_recording(server):
    with OpenAIStubServer() as plain:  # defaults: unit vectors, no key check
        client = OpenAI(api_key="anything", base_url=plain.base_url, max_retries=0, timeout=5)
        short = client.embeddings.create(model=MODEL, input=["a", "b"], dimensions=256, encoding_format="float")
        default = client.embeddings.create(model=MODEL, input="a")  # the client asks for and decodes base64
    assert [len(d.embedding) for d in short.data] == [256, 256]
    full = fake_embedding("a", 1536)
    np.testing.assert_allclose(np.linalg.norm(full), 1.0)
    cut = np.array(full[:256]) / np.linalg.norm(full[:256])  # OpenAI's way: cut, then renormalise
    np.testing.assert_allclose(short.data[0].embedding, cut, atol=1e-6)
    np.testing.assert_allclose(default.data[0].embedding, full, atol=1e-6)
    assert plain.requests[-1].json["encoding_format"] == "base64"

    client = OpenAI(api_key=SECRET, base_url=server.base_url, max_retries=0, timeout=5)

    server.reply("first answer", lambda body: f"echo: {body['messages'][-1]['content']}")
    one = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    two = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "again"}])
    three = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], n=2)
    assert one.choices[0].message.content == "first answer"
    assert two.choices[0].message.content == "echo: again"
    assert [c.message.content for c in three.choices] == ["OK", "OK"]
    assert [r.json["messages"][0]["content"] for r in server.chat_requests] == ["hi", "again", "x"]

    server.inject(Fault.status(429, retry_after=0, path="/v1/chat/completions"))
    with pytest.raises(Exception) as info:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "y"}])
    assert getattr(info.value, "status_code", None) == 429
    assert server.requests[-1].path == "/v1/chat/completions" and server.requests[-1].fault == "status"
    assert all(r.path != EMBEDDINGS_PATH or r.fault is None for r in server.requests)


# -- at scale: concurrency, rate limits, token budgets (issue #14) -----------------------------
@pytest.fixture
def slow_server(monkeypatch):
    """The stub with 0.2 s of latency on every /embeddings answer, like a remote service."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with OpenAIStubServer(api_key=SECRET, normalise=False, latency=0.2) as srv:
        yield srv


def timed_embed(embedder: OpenAIEmbedder, texts: list[str]) -> tuple[np.ndarray, float]:
    started = time.monotonic()
    vectors = embedder.embed_documents(texts)
    return vectors, time.monotonic() - started


EIGHT = [f"passage number {i} about {'rate limits ' * i}" for i in range(8)]


def test_eight_requests_at_concurrency_four_take_two_latencies_not_eight(slow_server, make_embedder):
    embedder = make_embedder(base_url=slow_server.base_url, batch_size=1)  # the default concurrency: 4
    embedder.embed_query("warm-up")  # imports openai, loads tiktoken: not what is measured here
    slow_server.reset()
    vectors, parallel = timed_embed(embedder, EIGHT)
    np.testing.assert_allclose(vectors, expected(EIGHT), atol=1e-5)
    # four requests were in flight at once (the server counted them): the speed-up follows from that
    assert len(slow_server.embedding_requests) == 8 and slow_server.max_in_flight == 4

    slow_server.reset()
    vectors, serial = timed_embed(make_embedder(base_url=slow_server.base_url, batch_size=1, concurrency=1), EIGHT)
    np.testing.assert_allclose(vectors, expected(EIGHT), atol=1e-5)
    assert slow_server.max_in_flight == 1 and serial >= 0.2 * 8
    print(f"8 requests x 0.2 s: concurrency 1 {serial:.2f} s, concurrency 4 {parallel:.2f} s")


def test_vectors_stay_in_input_order_when_requests_finish_out_of_order(server, make_embedder):
    texts = [f"text {i} " + "word " * (i % 5) for i in range(12)]
    # the first two requests sent are answered after three (the second) and four (the first) others:
    # the third worker's requests, sent while both wait (so three are in flight, however slow the machine)
    server.inject(Fault.held(4), Fault.held(3))
    vectors = make_embedder(batch_size=2, concurrency=3, timeout_seconds=60).embed_documents(texts)
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-5)
    assert server.max_in_flight == 3


def test_429_retry_after_is_honoured_and_every_worker_backs_off(slow_server, make_embedder):
    slow_server.inject(Fault.status(429, retry_after=0.6))
    texts = [f"question {i}" for i in range(12)]
    embedder = make_embedder(base_url=slow_server.base_url, batch_size=1, backoff_max=1.0)
    vectors = embedder.embed_documents(texts)
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-5)

    sent = slow_server.embedding_requests
    assert slow_server.max_in_flight == 4  # the other workers were busy when the 429 came
    (limited,) = [r for r in sent if r.fault == "status"]
    answered_at = limited.answered_at  # (after the stub's latency: it applies to the 429 too)
    retried = [r for r in sent if r.inputs == limited.inputs and r is not limited]
    assert len(retried) == 1 and retried[0].received_at >= answered_at + 0.55  # retry-after: 0.6 s
    # once the 429 was in, no worker sent anything until the time the server asked for: the three others
    # were answered as the 429 was, and each may have sent its next request before the client had read
    # the 429 (on a loaded machine well after the server's answer), but none sends a second one (without
    # the shared wait, each sends two or three in the 0.55 s)
    hammering = [round(r.received_at - answered_at, 3) for r in sent
                 if answered_at < r.received_at < answered_at + 0.55 and r is not limited]
    assert len(hammering) <= 3, f"requests sent during the back-off, at +{hammering} s"


def test_requests_never_exceed_the_token_budget_and_group_similar_lengths(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    counter = TokenCounter.for_name("cl100k_base", tmp_path / "tiktoken")
    budget = 60
    texts = [("alpha beta gamma delta " * (i % 7 + 1)).strip() + f" item {i}" for i in range(40)]
    texts.append("over the budget " * 40)  # one input alone is longer than a whole request may be
    with OpenAIStubServer(api_key=SECRET, normalise=False, max_request_tokens=budget,
                          count_tokens=counter.count) as srv:
        settings = Settings.from_env(env={"RAG_EMBEDDER": "openai", "OPENAI_API_KEY": SECRET, "RAG_OPENAI_MAX_BATCH_TOKENS": str(budget),
                                          "OPENAI_BASE_URL": srv.base_url, "RAG_CACHE_DIR": str(tmp_path)})
        embedder = load_embedder(settings.embedding)
        assert embedder.max_input_tokens == budget and not embedder.fits(texts[-1])
        vectors = embedder.embed_documents(texts)
        sent = srv.embedding_requests

    assert all(r.fault is None for r in sent) and len(sent) > 1
    per_request = [[counter.count(t) for t in r.inputs] for r in sent]
    assert max(sum(counts) for counts in per_request) <= budget
    # similar lengths share a request: put side by side, the requests' token counts never interleave
    side_by_side = [c for counts in sorted(per_request, key=lambda c: (min(c), max(c))) for c in counts]
    assert side_by_side == sorted(side_by_side)
    cut = max((t for r in sent for t in r.inputs), key=len)
    assert counter.count(cut) == budget and texts[-1].startswith(cut.rstrip())
    np.testing.assert_allclose(vectors[:-1], expected(texts[:-1]), atol=1e-5)  # in input order
    np.testing.assert_allclose(vectors[-1], expected([cut])[0], atol=1e-5)


def test_one_failing_request_fails_the_call_and_the_rest_are_not_sent(slow_server, make_embedder):
    slow_server.inject(Fault.status(400, message="input 3 is not valid"))
    embedder = make_embedder(base_url=slow_server.base_url, batch_size=1, concurrency=2)
    with pytest.raises(EmbeddingError, match="HTTP 400.*input 3 is not valid"):
        embedder.embed_documents(EIGHT)
    time.sleep(0.3)  # nothing more arrives later either
    assert len(slow_server.embedding_requests) <= 3  # the failing one, the one beside it, at most one more


# -- the circuit breaker -----------------------------------------------------------------------
def test_a_dead_endpoint_costs_two_retry_budgets_for_eight_documents_not_eight(make_embedder, server, caplog):
    dead_url = server.base_url
    server.stop()  # connection refused from now on
    embedder = make_embedder(base_url=dead_url, max_retries=4, backoff_base=0.1, backoff_max=0.2)
    caplog.set_level(logging.WARNING, logger="rag_assets")
    durations, errors, retries = [], [], []
    for i in range(8):  # what an ingest of 8 documents asks of it
        started = time.monotonic()
        caplog.clear()
        with pytest.raises(EmbeddingError) as info:
            embedder.embed_documents([f"document {i}"])
        durations.append(time.monotonic() - started)
        errors.append(info.value)
        retries.append(sum("retrying" in r.getMessage() for r in caplog.records))

    # the first two calls spend a retry budget each (4 attempts, 3 back-offs of at least 0.05+0.1+0.1 s) ...
    assert retries[:2] == [3, 3] and min(durations[:2]) > 0.2, (retries, durations)
    assert not isinstance(errors[0], EmbeddingServiceUnavailable)
    assert all(isinstance(e, EmbeddingServiceUnavailable) for e in errors[1:])  # the 2nd failure opened it
    assert retries[2:] == [0] * 6, retries  # ... then the six others fail at once: no attempt, no back-off
    assert embedder.unavailable

    message = str(errors[-1])
    port = dead_url.split(":")[2].split("/")[0]
    assert f"127.0.0.1:{port}" in message and "2 request(s) in a row" in message
    assert "connection error" in message and "4 attempt" in message
    assert (errors[-1].endpoint, errors[-1].failures) == (f"127.0.0.1:{port}", 2)
    assert_no_secret(message, repr(errors[-1]), "".join(traceback.format_exception(errors[-1])))
    print(f"8 calls to a dead endpoint: {sum(durations):.2f} s (retry budgets {durations[0]:.2f} + {durations[1]:.2f} s)")


def test_persistent_500s_open_the_breaker_and_no_request_is_sent_while_open(server, make_embedder):
    server.always(Fault.status(500))
    embedder = make_embedder(max_retries=3, breaker_failures=3)
    for _ in range(2):
        with pytest.raises(EmbeddingError) as info:
            embedder.embed_query("x")
        assert not isinstance(info.value, EmbeddingServiceUnavailable)
    with pytest.raises(EmbeddingServiceUnavailable, match="3 request"):
        embedder.embed_query("x")  # the third failure in a row opens it
    sent = len(server.embedding_requests)
    assert sent == 3 * 3
    for _ in range(5):
        with pytest.raises(EmbeddingServiceUnavailable, match="HTTP 500"):
            embedder.embed_documents(TEXTS)
    assert len(server.embedding_requests) == sent


def test_a_success_resets_the_count(server, make_embedder):
    embedder = make_embedder(max_retries=2, breaker_failures=2)
    for _ in range(3):
        server.always(Fault.status(503))
        with pytest.raises(EmbeddingError) as info:
            embedder.embed_query("x")
        assert not isinstance(info.value, EmbeddingServiceUnavailable)
        server.always(None)
        embedder.embed_query("x")
    assert not embedder.unavailable


def test_after_the_cooldown_one_probe_decides(server, make_embedder):
    server.always(Fault.status(502))
    # a cool-down no loaded machine spends between a failure and the next line (each check of
    # `unavailable` right after one); the sleeps past it only grow on a loaded machine
    embedder = make_embedder(max_retries=2, breaker_failures=1, breaker_cooldown_seconds=1.0)
    with pytest.raises(EmbeddingServiceUnavailable):
        embedder.embed_query("x")
    assert embedder.unavailable
    time.sleep(1.05)
    assert not embedder.unavailable  # half-open: the next attempt goes through...
    before = len(server.embedding_requests)
    with pytest.raises(EmbeddingServiceUnavailable):
        embedder.embed_query("x")  # ...fails once, not max_retries times, and re-opens it
    assert len(server.embedding_requests) == before + 1 and embedder.unavailable
    time.sleep(1.05)
    server.always(None)
    np.testing.assert_allclose(embedder.embed_query("x"), expected(["x"])[0], atol=1e-5)
    assert not embedder.unavailable
    embedder.embed_documents(TEXTS)  # closed again: calls go through as usual


def test_the_breaker_counts_failures_across_concurrent_workers(slow_server, make_embedder):
    embedder = make_embedder(base_url=slow_server.base_url, batch_size=1, concurrency=4, max_retries=2,
                             breaker_failures=2)
    embedder.embed_query("warm-up")  # imports openai, loads tiktoken: not what is timed here
    slow_server.reset()
    slow_server.always(Fault.status(500))
    with pytest.raises(EmbeddingServiceUnavailable):
        embedder.embed_documents(EIGHT)  # the workers' failed requests add up within one call
    assert len(slow_server.embedding_requests) <= 4 * 2  # the first wave and its retries; not 8 texts x 2 attempts
    with pytest.raises(EmbeddingServiceUnavailable):
        embedder.embed_documents(EIGHT)


def test_tuning_settings_are_read_and_checked(tmp_path):
    env = {"RAG_OPENAI_CONCURRENCY": "8", "RAG_OPENAI_MAX_BATCH_TOKENS": "5000",
           "RAG_OPENAI_BREAKER_FAILURES": "3", "RAG_OPENAI_BREAKER_COOLDOWN_SECONDS": "2.5"}
    for var, bad in [("RAG_OPENAI_CONCURRENCY", "0"), ("RAG_OPENAI_CONCURRENCY", "four"),
                     ("RAG_OPENAI_MAX_BATCH_TOKENS", "-1"), ("RAG_OPENAI_BREAKER_COOLDOWN_SECONDS", "-1")]:
        with pytest.raises(ConfigurationError, match=var):
            Settings.from_env({var: bad})
    settings = Settings.from_env(env={**env, "RAG_EMBEDDER": "openai", "OPENAI_API_KEY": SECRET, "RAG_CACHE_DIR": str(tmp_path)})
    assert (settings.openai_breaker_failures, settings.openai_breaker_cooldown_seconds) == (3, 2.5)
    embedder = load_embedder(settings.embedding)
    assert (embedder.concurrency, embedder.max_batch_tokens, embedder.max_input_tokens) == (8, 5000, 5000)
    assert "concurrency=8" in repr(embedder) and SECRET not in repr(embedder)


def test_credentials_in_the_base_url_are_never_shown_even_when_the_server_echoes_them(server, make_embedder):
    import base64

    from rag_assets.answer.generation import ChatLLM
    from rag_assets.openai_errors import redact_url

    url = server.base_url.replace("http://", "http://admin:PASS-hunter2-x@")
    basic = base64.b64encode(b"admin:PASS-hunter2-x").decode()
    server.inject(Fault.raw(400, f'{{"error": {{"message": "bad request from {url} with Basic {basic}"}}}}'))
    embedder = make_embedder(base_url=url, max_retries=1)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(["one text"])
    message = str(info.value)
    assert "PASS-hunter2-x" not in message and basic not in message and "admin:" not in message
    assert "PASS-hunter2-x" not in repr(embedder)
    llm = ChatLLM(api_key=SECRET, base_url=url)
    assert "PASS-hunter2-x" not in repr(llm) and "PASS-hunter2-x" not in llm.provider and "***@127.0.0.1" in llm.provider
    assert redact_url("https://h.example/v1") == "https://h.example/v1" and redact_url(None) is None
