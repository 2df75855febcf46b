"""rag_assets.orchestration.resources: a run's settings over its corpus's (RunSettingsResource)."""

import pytest

from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.errors import ConfigurationError
from rag_assets.orchestration.resources import RunSettingsResource


def test_run_settings_variables_go_over_the_corpus_settings_and_a_named_corpus_keeps_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CORPORA_DIR", str(tmp_path / "corpora"))
    default, named = Corpus(base=Settings.from_env), Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora",
                                                                  base=Settings.from_env)
    assert RunSettingsResource().settings_for(default) == default.settings()
    chosen = RunSettingsResource(variables={"RAG_DOCS_DIR": str(tmp_path / "elsewhere"), "RAG_COLLECTION": "mine",
                                            "RAG_LANGUAGES": "en,es", "RAG_INCLUDE": ""})
    s = chosen.settings_for(default)
    assert (s.docs_dir, s.collection, s.languages) == (tmp_path / "elsewhere", "mine", "en,es")
    s = chosen.settings_for(named)  # its folder and collection are its own; the rest follows the run
    assert (s.docs_dir, s.collection, s.languages) == ((tmp_path / "faq").resolve(), "faq_chunks", "en,es")
    with pytest.raises(ConfigurationError, match="unknown setting.*RAG_NOPE"):
        RunSettingsResource(variables={"RAG_NOPE": "1"}).settings_for(default)
    with pytest.raises(ConfigurationError, match="RAG_CHUNK_MAX_TOKENS must be a int"):
        RunSettingsResource(variables={"RAG_CHUNK_MAX_TOKENS": "many"}).settings_for(default)
