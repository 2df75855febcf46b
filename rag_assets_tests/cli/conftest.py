"""Fixtures of the CLI tests."""

import pytest


@pytest.fixture
def env(rag_env, dagster_home):
    """The sample corpus and every RAG_* path in a temporary folder, with a temporary Dagster instance
    (test_query.py has its own `env`: a prebuilt index)."""
    return rag_env
