"""rag_assets.corpus: names, namespaces and the registry, with plain pytest."""

import re

import pytest

from rag_assets.config import Settings
from rag_assets.corpus import (
    RESERVED, Corpus, find_corpus, name_for_folder, new_corpus_for, owner_of, register, registered, validate_name)
from rag_assets.errors import ConfigurationError


def test_a_named_corpus_pins_what_keeps_it_apart_and_the_environment_fills_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_DOCS_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("RAG_COLLECTION", "someone_elses")
    monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "90")
    corpus = Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora", chunk_max_tokens=180, base=Settings.from_env)
    s = corpus.settings()
    assert s.docs_dir == (tmp_path / "faq").resolve() and s.collection == "faq_chunks"
    assert s.state_dir == tmp_path / "corpora" / "faq" / "state" and s.eval_dir == tmp_path / "corpora" / "faq" / "eval"
    assert s.chunk_target_tokens == 90 and s.chunk_max_tokens == 180
    default = Corpus(base=Settings.from_env).settings()  # the default corpus is the environment's
    assert default.collection == "someone_elses" and default.docs_dir == (tmp_path / "elsewhere").resolve()


def test_names_come_from_folders_and_never_collide(tmp_path):
    assert name_for_folder(tmp_path / "My Docs!") == "my_docs" and name_for_folder(tmp_path / "---") == "docs"
    first = new_corpus_for(tmp_path / "a" / "docs", tmp_path / "corpora", taken=["default"])
    second = new_corpus_for(tmp_path / "b" / "docs", tmp_path / "corpora", taken=["default", first.name])
    assert first.name == "docs" and second.name.startswith("docs_") and second.name != first.name
    with pytest.raises(ConfigurationError, match="corpus name"):
        validate_name("Bad-Name")
    with pytest.raises(ConfigurationError, match="project's own corpus"):
        Corpus.named("default", tmp_path, tmp_path)
    with pytest.raises(ConfigurationError, match="unknown setting"):
        Corpus.named("x", tmp_path, tmp_path, chunk_size=5)


@pytest.mark.parametrize("folder", ["rag", "RAG", "default", "Default", "ingestion", "evaluation"])
def test_a_folder_named_like_a_reserved_name_gets_a_name_of_its_own(tmp_path, folder):
    corpus = new_corpus_for(tmp_path / folder, tmp_path / "corpora", taken=["default"], base=Settings.from_env)
    assert corpus.name.startswith(f"{folder.lower()}_") and corpus.name not in RESERVED
    settings = corpus.settings()
    default = Corpus(base=Settings.from_env).settings()
    assert settings.collection != default.collection and settings.state_dir != default.state_dir
    assert settings.chroma_path == tmp_path / "corpora" / corpus.name / "chroma" != default.chroma_path


@pytest.mark.parametrize("name, why", [
    ("Upper Case", "`upper_case` would do"), ("RAG", "lowercase letters"), ("../evil", "lowercase letters"), ("", "lowercase"),
    ("rag", "reserved"), ("default", "reserved"), ("evaluation", "reserved"),
])
def test_a_name_given_by_hand_is_refused_saying_why(tmp_path, name, why):
    with pytest.raises(ConfigurationError, match=re.escape(why)):
        new_corpus_for(tmp_path / "docs", tmp_path / "corpora", taken=["default"], name=name)
    assert not (tmp_path / "corpora").exists()  # nothing written
    with pytest.raises(ConfigurationError, match="there is a corpus named 'faq'"):
        new_corpus_for(tmp_path / "docs", tmp_path / "corpora", taken=["default", "faq"], name="faq")


def test_a_named_corpus_has_a_store_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_PATH", str(tmp_path / "chroma"))
    monkeypatch.delenv("CHROMA_HOST", raising=False)
    corpus = Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora", base=Settings.from_env)
    assert corpus.settings().chroma_path == tmp_path / "corpora" / "faq" / "chroma"
    assert Corpus(base=Settings.from_env).settings().chroma_path == tmp_path / "chroma"
    # on a Chroma server collections share one namespace: a corpus's may never be the default's
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("RAG_COLLECTION", "faq_chunks")
    with pytest.raises(ConfigurationError, match="default corpus's RAG_COLLECTION"):
        corpus.settings()


def test_a_corpus_indexed_before_stores_were_its_own_is_read_where_its_vectors_are(tmp_path, monkeypatch):
    from rag_assets.index.chroma_store import ChromaStore

    monkeypatch.setenv("RAG_CHROMA_PATH", str(tmp_path / "chroma"))
    for var in ("CHROMA_HOST", "RAG_COLLECTION"):
        monkeypatch.delenv(var, raising=False)
    corpus = Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora", base=Settings.from_env)
    ChromaStore(path=tmp_path / "chroma", collection="faq_chunks", embedding_model="m", dimension=3).close()
    assert corpus.legacy_store() == tmp_path / "chroma" and corpus.settings().chroma_path == tmp_path / "chroma"
    (tmp_path / "corpora" / "faq" / "chroma").mkdir(parents=True)  # moved (orchestration.corpus_stores)
    assert corpus.legacy_store() is None and corpus.settings().chroma_path == tmp_path / "corpora" / "faq" / "chroma"
    # the default corpus's own collection is another corpus's only if that corpus wrote there (a `rag` of old)
    old = Corpus.named("rag", tmp_path / "rag", tmp_path / "corpora", base=Settings.from_env)
    ChromaStore(path=tmp_path / "chroma", collection="rag_chunks", embedding_model="m", dimension=3).close()
    assert old.legacy_store() is None
    (tmp_path / "corpora" / "rag" / "state").mkdir(parents=True)
    assert old.legacy_store() == tmp_path / "chroma"


def test_the_registry_round_trips_and_names_a_broken_entry(tmp_path):
    corpora = tmp_path / "corpora"
    corpus = Corpus.named("rules", tmp_path / "rules", corpora, base=Settings.from_env)
    register(corpus, corpora)
    assert registered(corpora) == [corpus]
    assert owner_of(tmp_path / "rules", registered(corpora)) == corpus and owner_of(tmp_path, [corpus]) is None
    base = Settings.from_env()
    assert find_corpus("rules", base, known=registered(corpora)) == corpus and find_corpus(None, base) == Corpus()
    assert find_corpus("rules", base, known=registered(corpora)).settings().chunk_max_tokens == base.chunk_max_tokens
    with pytest.raises(ConfigurationError, match="no corpus named 'nope'.*default, rules"):
        find_corpus("nope", base, known=registered(corpora))
    (corpora / "broken").mkdir()
    (corpora / "broken" / "corpus.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match=r"broken/corpus.json: not a corpus registration"):
        registered(corpora)


def test_corpora_with_the_same_embedder_share_one_model(tmp_path):
    from rag_assets.orchestration.resources import EmbedderResource

    a = Corpus.named("a", tmp_path / "a", tmp_path / "corpora", chunk_target_tokens=90, base=Settings.from_env).settings()
    b = Corpus.named("b", tmp_path / "b", tmp_path / "corpora", base=Settings.from_env).settings()
    resource = EmbedderResource()
    assert resource.get(a) is resource.get(b) is resource.get(Corpus(base=Settings.from_env).settings())
    assert EmbedderResource(batch_size=7).get(a) is not resource.get(a)


def test_a_corpus_reads_the_settings_its_edge_resolved_and_never_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "90")
    resolved = Settings.from_env()  # what the CLI or the Python API resolved, once
    corpus = Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora", base=resolved)
    monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "120")  # changed afterwards: not this corpus's business
    assert corpus.settings().chunk_target_tokens == 90 and Corpus(base=resolved).settings() is resolved
    assert Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora", base=Settings.from_env).settings().chunk_target_tokens == 120
    with pytest.raises(ConfigurationError, match="settings were not resolved"):
        Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora").settings()
