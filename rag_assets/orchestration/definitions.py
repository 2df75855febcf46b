"""The Dagster code location: every corpus's assets in lineage order (their checks ride on them),
the sensors and schedule that keep each index current, and the resources they share.

The default corpus (RAG_DOCS_DIR) keeps the plain names; each corpus registered with `rag ingest
--docs-dir` (rag_assets.corpus) or declared as a `rag_assets.MarkdownCorpus` component gets a set of
its own, prefixed with its name.

This module is an edge: the code location's settings are the environment's. Its corpora are built
over Settings.from_env itself (the reader, not a value: rag_assets.corpus.SettingsSource), so a run
or a sensor tick works with the settings of the process that runs it, as Dagster's code server and
run workers have them; nothing under the code location reads the environment. The corpora found
at load (the registry under RAG_CORPORA_DIR) are read once, here.

Its module-level objects are the code location itself: Dagster loads `defs` from this module, once
per process, and they are never changed afterwards (a corpus registered later, or the default one
over the CLI's `--docs-dir`, is built by whoever needs it: loaded_corpora.corpus_definitions)."""

from __future__ import annotations

import logging

import dagster as dg

from rag_assets.config import Settings
from rag_assets.corpus import Corpus, SettingsSource, registered, resolve_settings
from rag_assets.errors import ConfigurationError

from .component import component_corpora
from .corpus_definitions import CorpusDefinitions, build_corpus_definitions
from .interrupt_logging import LOGGER_NAME, rag_interrupt_logger
from .resources import project_resources

RESOURCES = project_resources()


def project_definitions(corpora: list[CorpusDefinitions]) -> dg.Definitions:
    return dg.Definitions.merge(
        *(c.definitions() for c in corpora),
        dg.Definitions(
            resources=RESOURCES,
            # One process per run, not per step: steps share the loaded model, start-up costs once, and
            # the embedded Chroma store is never opened by two step processes at once (chroma #7040).
            executor=dg.in_process_executor,
            # the console logger as every job has it, and the one that ends a run stopped by Ctrl-C
            # CANCELED (switched on by the CLI's own runs only: interrupt_logging)
            loggers={"console": dg.colored_console_logger, LOGGER_NAME: rag_interrupt_logger},
        ),
    )


def registered_corpora(base: SettingsSource) -> list[Corpus]:
    """The folders indexed with `rag ingest --docs-dir`; a broken registration is logged, not fatal
    (the code location must still load)."""
    try:
        return registered(resolve_settings(base).corpora_dir, base)
    except ConfigurationError as exc:
        logging.getLogger("rag_assets").warning("corpora: %s", exc)
        return []


def load_corpora(base: SettingsSource) -> dict[str, CorpusDefinitions]:
    """Every corpus of the project over the base settings: the defs folder's components (the default
    one among them), then the folders registered by `rag ingest --docs-dir`. Names are unique."""
    corpora: dict[str, Corpus] = {}
    for corpus in [*component_corpora(base), *registered_corpora(base)]:
        if corpus.name in corpora:
            raise ConfigurationError(f"two corpora are named {corpus.name!r}: {corpora[corpus.name].docs_dir} and "
                                     f"{corpus.docs_dir}")
        corpora[corpus.name] = corpus
    corpora.setdefault(Corpus().name, Corpus(base=base))  # the project's own corpus, declared or not
    return {name: build_corpus_definitions(c) for name, c in sorted(corpora.items(), key=lambda kv: kv[0] != "default")}


CORPORA = load_corpora(Settings.from_env)  # the edge: see the module docstring
DEFAULT = CORPORA[Corpus().name]
defs = project_definitions(list(CORPORA.values()))

# the default corpus's objects by their plain names
documents_partitions = DEFAULT.ingestion.partitions
document_catalog = DEFAULT.ingestion.document_catalog
PER_DOCUMENT_ASSETS = list(DEFAULT.ingestion.per_document)
INGESTION_ASSETS = DEFAULT.ingestion.ingestion
vector_index = DEFAULT.ingestion.vector_index
index_audit = DEFAULT.ingestion.index_audit
synthetic_eval_set = DEFAULT.evaluation.synthetic_eval_set
retrieval_evaluation = DEFAULT.evaluation.retrieval_evaluation
ingest_documents = DEFAULT.ingest_job
docs_sensor, evaluation_sensor = DEFAULT.sensors
nightly_reconcile = DEFAULT.schedule
