"""The corpus registry (rag_assets.corpus_registry): the read side finds corpora without the Dagster layer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rag_assets.config import Settings
from rag_assets.corpus import Corpus, register
from rag_assets.corpus_registry import DEFS_FOLDER, PROJECT_ROOT, _only_the_default_declared, known_corpora

READ_SIDE = """
import json, sys
import rag_assets.cli.query, rag_assets.serving.service
from rag_assets.cli.main import main
from rag_assets.config import Settings
from rag_assets.serving.service import IndexService

rc = main(["query", "How do I stream responses?", "--json", "--top-k", "3"])
served = IndexService.for_corpora(Settings.from_env()).names  # every corpus the server would serve
print(json.dumps({"rc": rc, "served": served, "dagster": sorted(m for m in sys.modules if m.split(".")[0] == "dagster")[:5]}))
"""


@pytest.mark.system
def test_a_query_and_the_servers_corpus_list_load_no_dagster(built, tmp_path):
    env, _settings = built
    child = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    child.update(env, RAG_CORPORA_DIR=str(tmp_path / "corpora"), RAG_NO_SERVER="1")
    proc = subprocess.run([sys.executable, "-c", READ_SIDE], env=child, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcome["rc"] == 0 and outcome["served"] == ["default"]
    assert outcome["dagster"] == [], "the read side imported the Dagster layer"


def test_without_a_declared_corpus_the_registry_answers_as_dagsters_loader_does(tmp_path):
    from rag_assets.orchestration.component import component_corpora

    base = Settings(corpora_dir=tmp_path / "corpora")
    folder = tmp_path / "notes"
    folder.mkdir()
    register(Corpus.named("notes", folder, base.corpora_dir, base=base), base.corpora_dir)
    assert _only_the_default_declared(PROJECT_ROOT / DEFS_FOLDER), "the project's own defs folder declares the default alone"
    loaded = [c for c in component_corpora(base) if not c.is_default]
    assert loaded == [] and [c.name for c in known_corpora(base)] == ["notes"]


def test_a_second_declared_corpus_is_left_to_dagsters_loader(tmp_path):
    defs = tmp_path / "corpora"
    (defs / "default").mkdir(parents=True)
    (defs / "default" / "defs.yaml").write_text("type: rag_assets.MarkdownCorpus\n\nattributes:\n  name: default\n")
    (defs / "__init__.py").write_text("")
    assert _only_the_default_declared(defs)
    (defs / "fastapi_docs").mkdir()
    (defs / "fastapi_docs" / "defs.yaml").write_text("type: rag_assets.MarkdownCorpus\n\nattributes:\n  docs_dir: data/f\n")
    assert not _only_the_default_declared(defs)
    (defs / "fastapi_docs" / "defs.yaml").unlink()
    (defs / "fastapi_docs" / "component.py").write_text("")  # a component declared in Python
    assert not _only_the_default_declared(defs)
    (defs / "fastapi_docs" / "component.py").unlink()
    (defs / "default" / "defs.yaml").write_text("type: rag_assets.MarkdownCorpus\nattributes:\n  name: default\n  docs_dir: x\n")
    assert not _only_the_default_declared(defs), "a default corpus with settings of its own: the loader says what is wrong"
