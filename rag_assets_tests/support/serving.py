"""A served sample index for the serving tests: the sample corpus (support.corpus) indexed once per module
as the default corpus, plus a second corpus (its rate-limits page only) for searches over several."""

from __future__ import annotations

from pathlib import Path

from rag_assets.config import Settings
from rag_assets.corpus import Corpus, register
from rag_assets.serving.service import IndexService
from rag_assets_tests.support.index_builder import build_index, build_sample_index
from rag_assets_tests.support.openai_server import OpenAIStubServer

SECOND = "limits"


def sample_corpora(root: Path) -> tuple[dict[str, str], list[tuple[Corpus, Settings]]]:
    """(the default corpus's env vars, [(default, its settings), (limits, its settings)]), both indexed."""
    from rag_assets_tests.support.corpus import SAMPLE_DOCS, write_corpus

    env, settings = build_sample_index(root / "default")
    env = {**env, "RAG_CORPORA_DIR": str(root / "corpora")}
    settings = Settings.from_env(env)
    second = Corpus.named(SECOND, write_corpus(root / "limits-docs", {"rate-limits.md": SAMPLE_DOCS["rate-limits.md"]}),
                          root / "corpora", base=settings)
    register(second, root / "corpora")  # known to `rag serve` and `rag --corpus limits` like any indexed folder
    second_settings = second.settings()
    build_index(second_settings.docs_dir, second_settings)
    return env, [(Corpus(base=settings), settings), (second, second_settings)]


def sample_service(root: Path, **kwargs) -> tuple[dict[str, str], IndexService]:
    env, corpora = sample_corpora(root)
    return env, IndexService(corpora, **kwargs)


def chat_stub(reply: str = "Set stream to true [Source 1].") -> OpenAIStubServer:
    """The OpenAI-compatible stub the answers of the serving tests come from (a context manager)."""
    return OpenAIStubServer(default_chat_reply=reply)


def with_chat(corpora: list[tuple[Corpus, Settings]], chat: OpenAIStubServer, **settings) -> list[tuple[Corpus, Settings]]:
    """The corpora with their chat model at the stub (and any other settings replaced)."""
    import dataclasses

    return [(c, dataclasses.replace(s, openai_api_key="sk-test-000", openai_base_url=chat.base_url, **settings))
            for c, s in corpora]
