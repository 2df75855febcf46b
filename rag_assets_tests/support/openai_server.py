"""A real OpenAI-compatible HTTP server for tests: stdlib only, 127.0.0.1, a free port, one thread.

Point the real `openai` client (or anything built on it) at ``server.base_url`` and it talks HTTP to
this process, so retries, timeouts, headers and response parsing are exercised for real.

    with OpenAIStubServer() as server:
        server.inject(Fault.status(429, retry_after=0.01), Fault.status(500))
        client = OpenAI(api_key="sk-test", base_url=server.base_url)
        ...
        assert server.requests[-1].headers["authorization"] == "Bearer sk-test"

Endpoints
---------
POST /v1/embeddings
    Deterministic vectors: the same text always gives the same vector (see `fake_embedding`). The
    size is per model (text-embedding-3-small 1536, -3-large 3072, ada-002 1536; unknown models get
    HTTP 404 like the real service); a ``dimensions`` parameter shortens them (OpenAI's way: cut,
    then renormalise). ``encoding_format`` "float" (the default) or "base64" (little-endian float32,
    what the openai client asks for unless told otherwise).
POST /v1/chat/completions
    A scripted reply: the next of ``server.chat_replies`` (a str, or a callable taking the request
    body and returning a str), else ``server.default_chat_reply``. ``n`` > 1 gives n choices and
    ``stream: true`` answers as server-sent events. Request bodies are in ``server.chat_requests``.
GET /v1/models
    The embedding models this server knows, plus whatever chat model was asked for.

Faults
------
``server.inject(*faults)`` queues faults; each request to a matching path takes the next one
(FIFO), and once the queue is empty requests succeed. ``server.always(fault)`` applies a fault to
every matching request until ``server.always(None)``. See `Fault` for the kinds.

Every request (method, path, lower-cased headers, parsed JSON body, the fault applied) is recorded
in ``server.requests``, in arrival order.

Load
----
``latency`` (seconds) delays every /embeddings answer, faults included, like a remote service;
requests are served concurrently and ``server.max_in_flight`` is the most seen at once.
``max_request_tokens`` with ``count_tokens`` (a callable, e.g. a tiktoken counter) makes an
/embeddings request whose inputs sum to more tokens an HTTP 400, as OpenAI's per-request limit does.

When ``api_key`` is given, requests without ``Authorization: Bearer <api_key>`` get OpenAI's 401,
whose message quotes the key that was sent (in full, unlike the real service: a leak test).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

EMBEDDING_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
EMBEDDINGS_PATH = "/v1/embeddings"
CHAT_PATH = "/v1/chat/completions"
_WORD = re.compile(r"\w+", re.UNICODE)


# -- vectors -----------------------------------------------------------------------------------
def _hash_unit_floats(seed: bytes, count: int) -> list[float]:
    """`count` deterministic floats in [-1, 1) from sha-256 in counter mode."""
    out: list[float] = []
    block = 0
    while len(out) < count:
        digest = hashlib.sha256(seed + block.to_bytes(4, "little")).digest()
        for (word,) in struct.iter_unpack("<I", digest):
            out.append(word / 2**31 - 1.0)
        block += 1
    return out[:count]


def _normalise(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm > 0 else vector


def fake_embedding(text: str, dimension: int = 1536, *, mode: str = "hash", normalise: bool = True) -> list[float]:
    """The vector this server returns for `text` (before any ``dimensions`` cut).

    mode "hash": a pseudo-random direction per exact text (different texts are near-orthogonal).
    mode "bow": a hashed bag of lower-cased words (sign-hashed into buckets, plus a small per-text
    component), so texts sharing words are similar, as with a real model.
    """
    if mode == "hash":
        vector = _hash_unit_floats(b"text\0" + text.encode("utf-8"), dimension)
    elif mode == "bow":
        vector = [0.0] * dimension
        for word in _WORD.findall(text.lower()):
            digest = hashlib.sha256(b"word\0" + word.encode("utf-8")).digest()
            bucket = int.from_bytes(digest[:8], "little") % dimension
            vector[bucket] += 1.0 if digest[8] & 1 else -1.0
        noise = _hash_unit_floats(b"text\0" + text.encode("utf-8"), dimension)
        vector = [v + 0.05 * n for v, n in zip(vector, noise)]
    else:
        raise ValueError(f"mode must be 'hash' or 'bow', got {mode!r}")
    return _normalise(vector) if normalise else vector


def shorten(vector: list[float], dimensions: int) -> list[float]:
    """What the ``dimensions`` parameter does: keep the first `dimensions` values, renormalise."""
    return _normalise(vector[:dimensions])


def encode_base64(vector: Iterable[float]) -> str:
    values = list(vector)
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


# -- faults ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour. Build them with the class methods."""

    kind: str  # status | slow | held | invalid_json | missing_data | wrong_count | shuffled | wrong_dimension | raw
    http_status: int = 500
    retry_after: float | None = None
    delay: float = 0.0
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    value: int = 0
    path: str | None = EMBEDDINGS_PATH  # which requests it applies to; None = any path

    @classmethod
    def status(cls, status: int, *, retry_after: float | None = None, retry_after_ms: float | None = None,
               message: str | None = None, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """An OpenAI-style JSON error with this HTTP status, with retry-after(-ms) headers if given."""
        error_type = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_exceeded"}
        body = {
            "error": {
                "message": message or f"Injected HTTP {status} from the test server",
                "type": error_type.get(status, "server_error"),
                "param": None,
                "code": "rate_limit_exceeded" if status == 429 else None,
            }
        }
        headers: tuple[tuple[str, str], ...] = ()
        if retry_after is not None:
            headers += (("retry-after", f"{retry_after:g}"),)
        if retry_after_ms is not None:
            headers += (("retry-after-ms", f"{retry_after_ms:g}"),)
        return cls("status", http_status=status, retry_after=retry_after, body=json.dumps(body).encode(),
                   headers=headers, path=path)

    @classmethod
    def slow(cls, seconds: float, *, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """Wait `seconds` before answering normally (longer than the client timeout = a timeout)."""
        return cls("slow", delay=seconds, path=path)

    @classmethod
    def held(cls, answers: int, *, timeout: float = 60, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """Answer normally once the server has answered `answers` requests (since it started or was
        reset): a request answered after later ones whatever the machine's speed, where a sleep would
        race them. After `timeout` s it answers anyway (a client that never sends the others)."""
        return cls("held", value=answers, delay=timeout, path=path)

    @classmethod
    def invalid_json(cls, *, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """HTTP 200, Content-Type application/json, a body that is not JSON."""
        return cls("invalid_json", http_status=200, body=b'{"object": "list", "data": [', path=path)

    @classmethod
    def missing_data(cls, *, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """HTTP 200 with valid JSON that has no ``data``."""
        return cls("missing_data", http_status=200, path=path)

    @classmethod
    def wrong_count(cls, delta: int = -1, *, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """HTTP 200 with `delta` more (or fewer) embeddings than inputs."""
        return cls("wrong_count", http_status=200, value=delta, path=path)

    @classmethod
    def shuffled(cls, *, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """HTTP 200, correct embeddings, but ``data`` in reverse order (each item keeps its ``index``)."""
        return cls("shuffled", http_status=200, path=path)

    @classmethod
    def wrong_dimension(cls, dimension: int, *, path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """HTTP 200 with every vector of `dimension` values instead of the model's size."""
        return cls("wrong_dimension", http_status=200, value=dimension, path=path)

    @classmethod
    def raw(cls, status: int, body: bytes | str, *, content_type: str = "application/json",
            path: str | None = EMBEDDINGS_PATH) -> "Fault":
        """Exactly this status and body."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        return cls("raw", http_status=status, body=data, headers=(("content-type", content_type),), path=path)

    def applies_to(self, path: str) -> bool:
        return self.path is None or self.path == path


# -- recording ---------------------------------------------------------------------------------
@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    raw_body: bytes
    json: Any  # the parsed body, None when it was not JSON
    fault: str | None = None  # the kind of fault applied to this request, if any
    received_at: float = field(default_factory=time.monotonic)
    answered_at: float | None = None  # when the answer was sent (None: not yet, or the client gave up)

    @property
    def inputs(self) -> list[Any]:
        """The embedding inputs of an /embeddings request, always as a list."""
        value = (self.json or {}).get("input")
        return value if isinstance(value, list) and not all(isinstance(v, int) for v in value) else [value]


# -- the server --------------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"
    counted_in_flight = False  # True from the request's arrival until its answer starts going out

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.server.owner._handle(self, "GET")

    def do_POST(self) -> None:  # noqa: N802
        self.server.owner._handle(self, "POST")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler sleeping in a slow fault must not hold up close()
    owner: "OpenAIStubServer"


class OpenAIStubServer:
    """An OpenAI-compatible server on 127.0.0.1:<free port>; a context manager (start/stop)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        embedding_mode: str = "hash",
        normalise: bool = True,
        dimensions: dict[str, int] | None = None,
        default_chat_reply: str = "OK",
        latency: float = 0.0,
        max_request_tokens: int | None = None,
        count_tokens: Callable[[str], int] | None = None,
    ):
        if (max_request_tokens is None) != (count_tokens is None):
            raise ValueError("max_request_tokens and count_tokens go together")
        self.latency = latency
        self.max_request_tokens = max_request_tokens
        self.count_tokens = count_tokens
        self.in_flight = 0
        self.max_in_flight = 0
        self.answered = 0  # requests answered since the start or the last reset (what a held fault waits for)
        self.api_key = api_key
        self.embedding_mode = embedding_mode
        self.normalise = normalise
        self.dimensions = dict(EMBEDDING_DIMENSIONS if dimensions is None else dimensions)
        self.default_chat_reply = default_chat_reply
        self.chat_replies: deque[str | Callable[[dict], str]] = deque()
        self.requests: list[RecordedRequest] = []
        self._faults: deque[Fault] = deque()
        self._always: Fault | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> "OpenAIStubServer":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-stub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping in a slow fault
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> "OpenAIStubServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What OPENAI_BASE_URL / OpenAI(base_url=...) should be."""
        return f"{self.url}/v1"

    # -- scripting -----------------------------------------------------------------------------
    def inject(self, *faults: Fault) -> None:
        """Queue faults; each matching request takes the next one."""
        with self._lock:
            self._faults.extend(faults)

    def always(self, fault: Fault | None) -> None:
        """Apply `fault` to every matching request (after the queue is empty); None turns it off."""
        with self._lock:
            self._always = fault

    def reply(self, *replies: str | Callable[[dict], str]) -> None:
        """Queue chat completion replies."""
        with self._lock:
            self.chat_replies.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._always = None
            self.chat_replies.clear()
            self.requests.clear()
            self.max_in_flight = self.in_flight
            self.answered = 0

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return self.requests_to(EMBEDDINGS_PATH)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to(CHAT_PATH)

    # -- handling ------------------------------------------------------------------------------
    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self._faults):
                if fault.applies_to(path):
                    del self._faults[i]
                    return fault
            if self._always is not None and self._always.applies_to(path):
                return self._always
        return None

    def _handle(self, h: _Handler, method: str) -> None:
        path = h.path.split("?", 1)[0].rstrip("/")
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        fault = self._take_fault(path)
        record = RecordedRequest(method, path, {k.lower(): v for k, v in h.headers.items()}, raw, body,
                                 fault.kind if fault else None)
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        h.counted_in_flight = True
        try:
            if path == EMBEDDINGS_PATH and self.latency and self._stopping.wait(self.latency):
                return
            self._respond(h, method, path, body, fault)
            record.answered_at = time.monotonic()
            with self._lock:
                self.answered += 1
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client gave up (e.g. timed out during a slow fault)
        finally:
            self._leave_in_flight(h)

    def _leave_in_flight(self, h: _Handler) -> None:
        """Once per request, before its answer is written: the client may send its next request as
        soon as it has read this one, and must not find it still counted."""
        if h.counted_in_flight:
            h.counted_in_flight = False
            with self._lock:
                self.in_flight -= 1

    def _respond(self, h: _Handler, method: str, path: str, body: Any, fault: Fault | None) -> None:
        if fault is not None and fault.kind == "slow":
            if self._stopping.wait(fault.delay):
                return
            fault = None
        if fault is not None and fault.kind == "held":
            deadline = time.monotonic() + fault.delay
            while self.answered < fault.value and time.monotonic() < deadline:
                if self._stopping.wait(0.01):
                    return
            fault = None
        auth = h.headers.get("authorization") or ""
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            # echoes the key it got, in full (the real service masks the middle): a client that passes
            # error messages on must scrub them
            given = auth.removeprefix("Bearer ").strip()
            return self._error(h, 401, f"Incorrect API key provided: {given}. You can find your API key at "
                               "https://platform.openai.com/account/api-keys.", "invalid_api_key")
        if fault is not None and fault.kind in ("status", "raw", "invalid_json"):
            headers = dict(fault.headers)
            headers.setdefault("content-type", "application/json")
            return self._send(h, fault.http_status, fault.body, headers)
        if method == "GET" and path == "/v1/models":
            models = sorted(self.dimensions)
            return self._json(h, 200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in models]})
        if method != "POST":
            return self._error(h, 405, f"{method} {path} is not supported", None)
        if not isinstance(body, dict):
            return self._error(h, 400, "We could not parse the JSON body of your request.", None)
        if path == EMBEDDINGS_PATH:
            return self._embeddings(h, body, fault)
        if path == CHAT_PATH:
            return self._chat(h, body)
        return self._error(h, 404, f"Invalid URL ({method} {path})", None)

    def _embeddings(self, h: _Handler, body: dict, fault: Fault | None) -> None:
        model = body.get("model")
        if model not in self.dimensions:
            return self._error(h, 404, f"The model `{model}` does not exist or you do not have access to it.",
                               "model_not_found")
        inputs = body.get("input")
        if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and all(isinstance(v, int) for v in inputs)):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or any(i == "" or i == [] for i in inputs):
            return self._error(h, 400, "'input' must be a non-empty string or array of non-empty items", None,
                               param="input")
        if len(inputs) > 2048:
            return self._error(h, 400, "'input' must have at most 2048 items", None, param="input")
        if self.max_request_tokens is not None and self.count_tokens is not None:
            requested = sum(self.count_tokens(i) if isinstance(i, str) else len(i) for i in inputs)
            if requested > self.max_request_tokens:
                return self._error(h, 400, f"Requested {requested} tokens, max {self.max_request_tokens} tokens "
                                   "per request", "max_tokens_per_request", param="input")
        encoding = body.get("encoding_format", "float") or "float"
        if encoding not in ("float", "base64"):
            return self._error(h, 400, f"Invalid encoding_format {encoding!r}", None, param="encoding_format")
        native = self.dimensions[model]
        wanted = body.get("dimensions")
        if wanted is not None and (not isinstance(wanted, int) or isinstance(wanted, bool) or not 1 <= wanted <= native):
            return self._error(h, 400, f"'dimensions' must be an integer between 1 and {native}", None,
                               param="dimensions")
        if fault is not None and fault.kind == "missing_data":
            return self._json(h, 200, {"object": "list", "model": model, "usage": {"prompt_tokens": 0, "total_tokens": 0}})
        size = native
        if fault is not None and fault.kind == "wrong_dimension":
            size = wanted = fault.value
        vectors = []
        for item in inputs:
            text = item if isinstance(item, str) else json.dumps(item)
            vector = fake_embedding(text, max(size, wanted or 0), mode=self.embedding_mode, normalise=self.normalise)
            if wanted is not None:
                vector = shorten(vector, wanted) if self.normalise else vector[:wanted]
            vectors.append(vector)
        if fault is not None and fault.kind == "wrong_count":
            if fault.value < 0:
                vectors = vectors[: max(0, len(vectors) + fault.value)]
            else:
                vectors = vectors + vectors[:1] * fault.value
        tokens = sum(len(_WORD.findall(i)) if isinstance(i, str) else len(i) for i in inputs)
        data = [
            {"object": "embedding", "index": i,
             "embedding": encode_base64(v) if encoding == "base64" else v}
            for i, v in enumerate(vectors)
        ]
        if fault is not None and fault.kind == "shuffled":
            data.reverse()
        self._json(h, 200, {"object": "list", "data": data, "model": model,
                            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _chat(self, h: _Handler, body: dict) -> None:
        messages = body.get("messages")
        if not body.get("model") or not isinstance(messages, list) or not messages:
            return self._error(h, 400, "'model' and a non-empty 'messages' array are required", None)
        n = body.get("n") or 1
        contents = []
        for _ in range(n):
            with self._lock:
                reply = self.chat_replies.popleft() if self.chat_replies else self.default_chat_reply
            contents.append(reply(body) if callable(reply) else reply)
        prompt_tokens = sum(len(_WORD.findall(str(m.get("content", "")))) for m in messages if isinstance(m, dict))
        completion_tokens = sum(len(_WORD.findall(c)) for c in contents)
        ident, created, model = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time()), body["model"]
        if body.get("stream"):
            return self._stream_chat(h, ident, created, model, contents)
        self._json(h, 200, {
            "id": ident, "object": "chat.completion", "created": created, "model": model,
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": c, "refusal": None},
                 "logprobs": None, "finish_reason": "stop"}
                for i, c in enumerate(contents)
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def _stream_chat(self, h: _Handler, ident: str, created: int, model: str, contents: list[str]) -> None:
        events = []
        base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
        for i, content in enumerate(contents):
            events.append({**base, "choices": [{"index": i, "delta": {"role": "assistant", "content": ""},
                                                "finish_reason": None}]})
            for piece in re.findall(r"\S+\s*|\s+", content):
                events.append({**base, "choices": [{"index": i, "delta": {"content": piece}, "finish_reason": None}]})
            events.append({**base, "choices": [{"index": i, "delta": {}, "finish_reason": "stop"}]})
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._send(h, 200, payload.encode("utf-8"), {"content-type": "text/event-stream"})

    # -- responses -----------------------------------------------------------------------------
    def _error(self, h: _Handler, status: int, message: str, code: str | None, param: str | None = None) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        self._json(h, status, {"error": {"message": message, "type": kind, "param": param, "code": code}})

    def _json(self, h: _Handler, status: int, payload: Any) -> None:
        self._send(h, status, json.dumps(payload).encode("utf-8"), {"content-type": "application/json"})

    def _send(self, h: _Handler, status: int, body: bytes, headers: dict[str, str]) -> None:
        h.close_connection = True
        h.send_response(status)
        for name, value in headers.items():
            h.send_header(name, value)
        h.send_header("x-request-id", f"req_{uuid.uuid4().hex[:16]}")
        h.send_header("content-length", str(len(body)))
        h.send_header("connection", "close")
        h.end_headers()
        self._leave_in_flight(h)
        h.wfile.write(body)
        h.wfile.flush()
