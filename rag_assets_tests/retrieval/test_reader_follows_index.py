"""A long-running reader follows the index another process changes (issue #12).

The reader is a separate process holding one RAGPipeline (and so one embedded Chroma client and
one keyword index) for its whole life. This test process is the writer: it adds a document and
deletes another through its own ChromaStore, as an ingest would. The reader's very next query, in
every mode, must see the new document, never the deleted one, and raise nothing.
"""

import json
import subprocess
import sys
import time

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets_tests.support.corpus import SAMPLE_DOCS, write_corpus
from rag_assets_tests.support.index_builder import build_index

pytestmark = pytest.mark.system

NEW_DOC = "parts/valves.md"
NEW_TEXT = """# Valves

## Quarterly valve maintenance

The brass gate valve catalogued as ZK-4411-VALVE must be greased every quarter; a dry valve
seizes and then cracks its housing when it is forced open.
"""
DELETED = "rate-limits.md"
NEW_QUERY = "How often should the ZK-4411-VALVE gate valve be greased?"
DELETED_QUERY = "How many requests per minute may the free tier send before HTTP 429?"
MODES = ("vector", "keyword", "hybrid")

READER = r"""
import json, sys
from rag_assets.pipeline import RAGPipeline
pipeline = RAGPipeline.from_settings()
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    mode, query = line.rstrip("\n").split("\t", 1)
    try:
        results = pipeline.search(query, mode, 5)
        print(json.dumps({"docs": [r.doc_path for r in results]}), flush=True)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
"""


class Reader:
    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", READER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}

    def ask(self, mode: str, query: str) -> dict:
        self.proc.stdin.write(f"{mode}\t{query}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def reader_env(rag_env):
    import os

    return {**os.environ}


def test_reader_sees_new_and_never_deleted_documents_on_its_next_query(rag_env, reader_env):
    embedder = load_embedder(Settings.from_env({}).embedding)
    settings = Settings.from_env()
    build_index(None, settings, embedder=embedder)

    reader = Reader(reader_env)
    try:
        for mode in MODES:  # the reader has opened Chroma and built its keyword index
            before = reader.ask(mode, DELETED_QUERY)
            assert "error" not in before and DELETED in before["docs"], (mode, before)
            assert NEW_DOC not in reader.ask(mode, NEW_QUERY)["docs"]

        (rag_env / "docs" / DELETED).unlink()
        write_corpus(rag_env / "docs", {NEW_DOC: NEW_TEXT})
        build_index(None, settings, embedder=embedder)  # this process writes and deletes
        changed_at = time.monotonic()

        for mode in MODES:
            new = reader.ask(mode, NEW_QUERY)
            gone = reader.ask(mode, DELETED_QUERY)
            assert "error" not in new and "error" not in gone, (mode, new, gone)
            assert new["docs"] and new["docs"][0] == NEW_DOC, (mode, new)
            assert DELETED not in gone["docs"], (mode, gone)
            assert set(gone["docs"]) <= set(SAMPLE_DOCS) | {NEW_DOC}, (mode, gone)
        assert time.monotonic() - changed_at < 30  # followed at once, not after a cache expiry
    finally:
        reader.close()
