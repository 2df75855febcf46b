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


LONG_PAGE = "long/manual.md"


def many_pages_corpora(root: Path, pages: int = 310) -> list[tuple[Corpus, Settings]]:
    """Two corpora (default and "second") of `pages` short pages each (two sections apiece) and one long
    page (60 sections, ~45,000 characters): for bounded lists and reads. The second reuses the first's
    embeddings (the same texts), so only one corpus is embedded."""
    from rag_assets.index.embedding_cache import EmbeddingCache
    from rag_assets_tests.support.corpus import write_corpus

    docs = {f"section-{i // 40:02d}/page-{i:03d}.md":
            f"# Page {i} of the handbook\n\n## Setting up widget {i}\n\nConfigure widget number {i} before use.\n\n"
            f"## Using widget {i}\n\nCall widget {i} once a day.\n" for i in range(pages)}
    docs[LONG_PAGE] = "# The long manual\n\n" + "".join(
        f"## Chapter {n}\n\n" + " ".join(f"Sentence {k} of chapter {n} explains one more detail of the manual."
                                         for k in range(10)) + "\n\n" for n in range(60))
    settings = Settings.from_env({}, docs_dir=write_corpus(root / "docs", docs), chroma_path=root / "chroma",
                                 state_dir=root / "state", cache_dir=root / "cache", corpora_dir=root / "corpora")
    cache = EmbeddingCache.for_settings(settings.paths)
    build_index(None, settings, cache=cache)
    second = Corpus.named("second", write_corpus(root / "second-docs", docs), root / "corpora", base=settings)
    second_settings = second.settings()
    build_index(second_settings.docs_dir, second_settings, cache=cache)
    return [(Corpus(base=settings), settings), (second, second_settings)]


def versioned_corpus(root: Path) -> list[tuple[Corpus, Settings]]:
    """One corpus whose docs site has two versions of its install page (frontmatter `version`)."""
    from rag_assets_tests.support.corpus import write_corpus

    page = "---\ntitle: Installing\nversion: {v}\n---\n# Installing the widget\n\n## Requirements\n\n" \
           "The widget needs a power supply of 12 volts in release {v}.\n"
    docs = write_corpus(root / "docs", {"v1/install.md": page.format(v="v1"), "v2/install.md": page.format(v="v2")})
    settings = Settings.from_env({}, docs_dir=docs, chroma_path=root / "chroma", state_dir=root / "state",
                                 cache_dir=root / "cache", corpora_dir=root / "corpora")
    build_index(None, settings)
    return [(Corpus(base=settings), settings)]


def data_folder_corpora(data: Path) -> list[tuple[Corpus, Settings]]:
    """The sample corpora laid out as a checkout's data folder is (RAG_DATA_DIR=data): the default
    corpus in data/docs, data/chroma, data/state, and a corpus made with --name under data/corpora."""
    from rag_assets_tests.support.corpus import SAMPLE_DOCS, write_corpus

    settings = Settings.from_env({"RAG_DATA_DIR": str(data)})
    write_corpus(settings.docs_dir)
    build_index(None, settings)
    second = Corpus.named(SECOND, write_corpus(data.parent / "limits-docs", {"rate-limits.md": SAMPLE_DOCS["rate-limits.md"]}),
                          settings.corpora_dir, base=settings)
    register(second, settings.corpora_dir)
    build_index(second.settings().docs_dir, second.settings())
    return [(Corpus(base=settings), settings), (second, second.settings())]
