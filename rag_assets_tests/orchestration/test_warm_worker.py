"""A warm run worker is warm for the whole road: after its warm-up the language model that tells a
page's language, the token encoding, the embedding model's inference session and Chroma's modules are
loaded, so a run's first document loads none of them. Measured under `dagster dev` before, those
loads were 1-3 s of each run's steps (py-spy: the language identifier 1.2 s, Chroma's imports 0.8 s,
the inference session 0.5 s a run; benchmarks/freshness.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import subprocess_env

pytestmark = pytest.mark.system

PROBE = """
import json, sys
from rag_assets.orchestration import warm_worker
warm_worker.warm_up()
from rag_assets.ingest import text_language, tokens
from rag_assets.orchestration.definitions import DEFAULT, RESOURCES
embedder = RESOURCES["embedder"].get(DEFAULT.corpus.settings())
print(json.dumps({"language_model": text_language._IDENTIFIER is not None,
                  "inference_session": getattr(embedder, "_session", None) is not None,
                  "chromadb": "chromadb.api.rust" in sys.modules or "chromadb.api" in sys.modules,
                  "snapshot_writer": "rag_assets.retrieval.snapshot_writer" in sys.modules}))
"""


def test_the_warm_up_loads_everything_a_runs_first_document_needs(tmp_path):
    write_corpus(tmp_path / "docs")
    proc = subprocess.run([sys.executable, "-c", PROBE], env=subprocess_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == {"language_model": True, "inference_session": True, "chromadb": True, "snapshot_writer": True}
    assert not list(tmp_path.glob("**/warm-up.md"))  # the scratch folder of the warm-up is gone
