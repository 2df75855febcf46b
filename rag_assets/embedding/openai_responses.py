"""What an OpenAI-compatible embeddings answer must hold, checked by us: one finite vector per input
(base64 float32, or a JSON list from servers that ignore encoding_format), each index once, all of
one size. Anything else is a MalformedResponse, which the embedder retries like a transient failure.
"""

from __future__ import annotations

import base64
import binascii

import numpy as np


class MalformedResponse(Exception):
    """A 200 answer we cannot use: retried like a transient failure."""


def vectors_of(response: object, inputs: int) -> np.ndarray:
    """The answer's vectors as rows in input order (not normalised), shape (inputs, size)."""
    data = getattr(response, "data", None)
    if not isinstance(data, list):
        raise MalformedResponse("no 'data' list in the response")
    if len(data) != inputs:
        raise MalformedResponse(f"{len(data)} embeddings for {inputs} inputs")
    rows: list[np.ndarray | None] = [None] * inputs
    for position, item in enumerate(data):
        index = getattr(item, "index", position)
        if not isinstance(index, int) or not 0 <= index < inputs or rows[index] is not None:
            raise MalformedResponse(f"bad or repeated index {index!r}")
        rows[index] = _decode(getattr(item, "embedding", None))
    sizes = {row.shape[0] for row in rows if row is not None}
    if len(sizes) != 1:
        raise MalformedResponse(f"embeddings of different sizes {sorted(sizes)}")
    return np.stack(rows)  # type: ignore[arg-type]


def _decode(embedding: object) -> np.ndarray:
    try:
        if isinstance(embedding, str):
            vector = np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
        elif isinstance(embedding, list):  # servers that ignore encoding_format=base64
            vector = np.asarray(embedding, dtype=np.float32)
        else:
            raise MalformedResponse(f"embedding is {type(embedding).__name__}")
    except (binascii.Error, ValueError, TypeError) as exc:
        raise MalformedResponse(f"undecodable embedding: {type(exc).__name__}") from exc
    if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
        raise MalformedResponse("embedding is not a finite, non-empty vector")
    return vector
