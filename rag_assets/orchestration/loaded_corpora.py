"""The corpus definitions cache: a corpus's Dagster objects (and its asset job) for the settings it
carries, the code location's own when it loaded the same corpus over the same settings; and the code
location's embedder and vector store, which the runs started in this process execute with.

The CLI, `RAGPipeline.ingest` and the watcher run a corpus as they were told (`--docs-dir`,
`--collection`, a pipeline over `Settings(...)`): the objects are built for those settings when they
differ from what the code location loaded, so the runs they start work on what they were told.
"""

from __future__ import annotations

import functools

import dagster as dg

from rag_assets.corpus import Corpus

from .corpus_definitions import CorpusDefinitions, build_corpus_definitions
from .definitions import CORPORA, DEFAULT, RESOURCES, project_definitions
from .resources import IndexResources


def index_resources() -> IndexResources:
    """The configured embedder and vector store the CLI's runs execute with (the code location's)."""
    return IndexResources.of(RESOURCES)


def corpus_definitions(corpus: Corpus | None = None) -> CorpusDefinitions:
    """A corpus's Dagster objects for the settings it carries (the CLI's: its flags over the
    environment; None: the default corpus as the code location has it). The code location's own
    objects when it loaded this corpus over the same settings; else built for them (a corpus
    registered after this process loaded the code location, or `--docs-dir` / `--collection` for
    the default corpus): the runs the CLI starts in this process then work on what it was told."""
    if corpus is None:
        return DEFAULT
    loaded = CORPORA.get(corpus.name)
    if loaded is not None and loaded.corpus == corpus and loaded.corpus.base_settings() == corpus.base_settings():
        return loaded
    return build_corpus_definitions(corpus)


@functools.lru_cache(maxsize=None)
def asset_job(corpus: CorpusDefinitions) -> dg.JobDefinition:
    """The job the CLI's in-process runs of one corpus's assets execute."""
    return project_definitions([corpus]).resolve_implicit_global_asset_job_def()

