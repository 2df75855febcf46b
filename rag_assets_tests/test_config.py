"""The settings' groups (rag_assets.config): derived views that carry every flat field exactly once,
and leave the no-op check's settings digest as it was before them."""

import hashlib
import pickle
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path

import pytest

from rag_assets.config import GROUPS, Settings
from rag_assets.errors import ConfigurationError

# sha256(repr(Settings())): the no-op check digests repr(settings) (rag_assets.orchestration.noop_check.
# noop_base), so a change here re-runs every user's next no-op ingest. The groups (75f2c7c) left it as it
# was; RAG_VERSIONS (issue 42) and RAG_MIN_RELEVANCE 0.25 -> 0.16 (issue 43, a calibrated relevance) moved it
# on purpose: that ingest re-parses anyway (the parse fingerprint is meta-v3); RAG_MIN_RELEVANCE 0.16 -> 0.17
# (the refit calibration) moves it again: the next no-op ingest takes Dagster's road once, judges every
# document current and embeds nothing
DEFAULT_SETTINGS_DIGEST = "376d1c4f103fbc23a5cc8491e6a62d414592f5918e4a288cd1d41ab240ebd0c9"


def test_the_groups_carry_every_field_exactly_once_with_its_value():
    flat = [f.name for f in fields(Settings)]
    settings = Settings.from_env({"OPENAI_API_KEY": "k", "RAG_CHUNK_MAX_TOKENS": "150", "RAG_LANGUAGES": "en,es"})
    owned = Counter()
    for name, cls in GROUPS.items():
        group = getattr(settings, name)
        assert type(group) is cls
        for f in fields(cls):
            if f.name in flat:
                owned[f.name] += 1
                assert getattr(group, f.name) == getattr(settings, f.name), (name, f.name)
    assert not [name for name, n in owned.items() if n > 1], "a field in two groups"
    assert sorted(owned) == sorted(flat), f"fields in no group: {sorted(set(flat) - set(owned))}"
    # what a group borrows from another one, it carries under a name of its own
    assert settings.answer.openai is settings.openai and settings.answer.openai_api_key == "k"
    assert settings.embedding.model_name == settings.model_name
    assert settings.chunking.tiktoken_dir == settings.embedding.tiktoken_dir == settings.cache_dir / "tiktoken"


def test_the_groups_leave_the_settings_digest_equality_and_copies_as_they_were():
    settings = Settings()
    assert hashlib.sha256(repr(settings).encode()).hexdigest() == DEFAULT_SETTINGS_DIGEST
    before = repr(settings)
    for name in GROUPS:
        getattr(settings, name)  # built and cached
    assert repr(settings) == before and settings == Settings() and hash(settings) == hash(Settings())
    assert "paths" not in repr(settings) and "sk-" not in repr(replace(settings, openai_api_key="sk-x").openai)
    # a changed copy gets its own groups, not the original's cached ones
    other = replace(settings, chunk_max_tokens=150, docs_dir=Path("/elsewhere"))
    assert other.chunking.chunk_max_tokens == 150 and other.paths.docs_dir == Path("/elsewhere")
    assert settings.chunking.chunk_max_tokens == 140
    assert pickle.loads(pickle.dumps(settings)).retrieval == settings.retrieval


def test_include_and_exclude_globs_outside_the_docs_folder_are_errors_naming_them(tmp_path):
    """An absolute or `../` glob never matches a page: it would empty the corpus (or leave out nothing) silently."""
    (tmp_path / "guides").mkdir()
    base = {"RAG_DOCS_DIR": str(tmp_path)}
    with pytest.raises(ConfigurationError, match=r"RAG_INCLUDE \(--include\): '\.\./other/\*\*' reaches above the docs folder"):
        Settings.from_env({**base, "RAG_INCLUDE": "../other/**"})
    with pytest.raises(ConfigurationError) as err:
        Settings.from_env({**base, "RAG_EXCLUDE": f"drafts/;{tmp_path}/guides/**"})
    assert f"'{tmp_path}/guides/**' is an absolute path: patterns are relative to the docs folder ({tmp_path}); " \
           "write 'guides/**'" in str(err.value) and "RAG_EXCLUDE (--exclude)" in str(err.value)
    # a leading "/" anchors a glob at the docs folder, as in .gitignore
    assert Settings.from_env({**base, "RAG_INCLUDE": "/guides/**;guides/*.md"}).include == "/guides/**;guides/*.md"


def test_one_variable_names_the_data_folder_and_each_folder_defaults_under_it(tmp_path):
    """RAG_DATA_DIR: what a client entry needs to find every corpus from any working directory (the
    documented entry set the default corpus's folders, and corpora made with --name, which live
    under RAG_CORPORA_DIR, were not served)."""
    root = tmp_path / "project" / "data"
    settings = Settings.from_env({"RAG_DATA_DIR": str(root), "RAG_STATE_DIR": str(tmp_path / "state")})
    assert (settings.docs_dir, settings.chroma_path, settings.corpora_dir, settings.cache_dir, settings.eval_dir,
            settings.eval_results_dir) == (root / "docs", root / "chroma", root / "corpora", root / "cache",
                                           root / "eval", root / "eval_results")
    assert settings.state_dir == tmp_path / "state"  # a folder's own variable wins
    assert repr(settings) == repr(Settings.from_env({}, **{k: getattr(settings, k) for k in (
        "docs_dir", "chroma_path", "state_dir", "cache_dir", "eval_dir", "eval_results_dir", "corpora_dir")}))
    moved = Settings.from_env({}).with_variables({"RAG_DATA_DIR": str(root)})
    assert moved.docs_dir == root / "docs" and moved.corpora_dir == root / "corpora"
