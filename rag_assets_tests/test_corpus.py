"""rag_assets.corpus: names, namespaces and the registry, with plain pytest."""

import pytest

from rag_assets.corpus import (
    Corpus, find_corpus, name_for_folder, new_corpus_for, owner_of, register, registered, validate_name)
from rag_assets.errors import ConfigurationError


def test_a_named_corpus_pins_what_keeps_it_apart_and_the_environment_fills_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_DOCS_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("RAG_COLLECTION", "someone_elses")
    monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "90")
    corpus = Corpus.named("faq", tmp_path / "faq", tmp_path / "corpora", chunk_max_tokens=180)
    s = corpus.settings()
    assert s.docs_dir == (tmp_path / "faq").resolve() and s.collection == "faq_chunks"
    assert s.state_dir == tmp_path / "corpora" / "faq" / "state" and s.eval_dir == tmp_path / "corpora" / "faq" / "eval"
    assert s.chunk_target_tokens == 90 and s.chunk_max_tokens == 180
    default = Corpus().settings()  # the default corpus is the environment's
    assert default.collection == "someone_elses" and default.docs_dir == (tmp_path / "elsewhere").resolve()


def test_names_come_from_folders_and_never_collide(tmp_path):
    assert name_for_folder(tmp_path / "My Docs!") == "my_docs" and name_for_folder(tmp_path / "default") == "docs"
    first = new_corpus_for(tmp_path / "a" / "docs", tmp_path / "corpora", taken=["default"])
    second = new_corpus_for(tmp_path / "b" / "docs", tmp_path / "corpora", taken=["default", first.name])
    assert first.name == "docs" and second.name.startswith("docs_") and second.name != first.name
    with pytest.raises(ConfigurationError, match="corpus name"):
        validate_name("Bad-Name")
    with pytest.raises(ConfigurationError, match="project's own corpus"):
        Corpus.named("default", tmp_path, tmp_path)
    with pytest.raises(ConfigurationError, match="unknown setting"):
        Corpus.named("x", tmp_path, tmp_path, chunk_size=5)


def test_the_registry_round_trips_and_names_a_broken_entry(tmp_path):
    corpora = tmp_path / "corpora"
    corpus = Corpus.named("rules", tmp_path / "rules", corpora)
    register(corpus, corpora)
    assert registered(corpora) == [corpus]
    assert owner_of(tmp_path / "rules", registered(corpora)) == corpus and owner_of(tmp_path, [corpus]) is None
    assert find_corpus("rules", known=registered(corpora)) == corpus and find_corpus(None) == Corpus()
    with pytest.raises(ConfigurationError, match="no corpus named 'nope'.*default, rules"):
        find_corpus("nope", known=registered(corpora))
    (corpora / "broken").mkdir()
    (corpora / "broken" / "corpus.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match=r"broken/corpus.json: not a corpus registration"):
        registered(corpora)


def test_corpora_with_the_same_embedder_share_one_model(tmp_path):
    from rag_assets.orchestration.resources import EmbedderResource

    a = Corpus.named("a", tmp_path / "a", tmp_path / "corpora", chunk_target_tokens=90).settings()
    b = Corpus.named("b", tmp_path / "b", tmp_path / "corpora").settings()
    resource = EmbedderResource()
    assert resource.get(a) is resource.get(b) is resource.get(Corpus().settings())
    assert EmbedderResource(batch_size=7).get(a) is not resource.get(a)
