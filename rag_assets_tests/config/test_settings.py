"""Each setting declared once (rag_assets.config.settings): its variable and default written nowhere
else in the package, what the component and launched runs take derived from the declarations, and the
no-op check's digest of the same settings as it was before the declarations."""

import ast
import hashlib
from dataclasses import fields
from pathlib import Path

import pytest

from rag_assets.config import (CORPUS_SETTINGS, DEFAULTS, ENV_VARS, GROUPS, LAUNCHED_SETTINGS, SWITCHES, Settings,
                               declared, switch)
from rag_assets.errors import ConfigurationError

PACKAGE = Path(__file__).resolve().parents[2] / "rag_assets"
# the code that used to write a setting's default a second time (module, and class when one), and the
# settings whose defaults it wrote
DUPLICATE_SITES = {
    ("ingest/chunking/config.py", "ChunkingConfig"): (
        "chunk_min_tokens", "chunk_target_tokens", "chunk_max_tokens", "chunk_overlap_tokens"),
    ("retrieval/ranking.py", "RankingConfig"): (
        "rrf_k", "heading_weight", "max_results_per_page", "dense_weight", "keyword_weight"),
    ("retrieval/rescoring.py", None): ("heading_weight",),
    ("retrieval/diversity.py", None): ("max_results_per_page",),
    ("retrieval/fusion.py", None): ("rrf_k",),
    ("retrieval/snapshot.py", None): ("keyword_heading_repeats",),
    ("answer/generation.py", "ChatLLM"): ("chat_temperature", "chat_max_tokens", "chat_max_retries",
                                          "chat_timeout_seconds"),
    ("embedding/local.py", None): ("embed_batch_size",),
    ("embedding/e5_embedder.py", None): ("embed_batch_size",),
    ("ingest/discovery.py", None): ("max_file_bytes",),
    ("ingest/document.py", None): ("max_file_bytes",),
    ("ingest/snippets.py", None): ("max_file_bytes",),
    ("ingest/change_detection.py", None): ("max_file_bytes",),
    ("index/chroma_store.py", "ChromaStore"): ("chroma_port", "collection"),
    ("ingest/stages.py", None): ("max_file_bytes",),
    ("embedding/openai_embedder.py", None): ("openai_batch_size", "openai_max_retries", "openai_timeout_seconds",
                                             "openai_concurrency", "openai_max_batch_tokens",
                                             "openai_breaker_failures", "openai_breaker_cooldown_seconds"),
}


def _strings(tree: ast.AST):
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _defaults_written(tree: ast.AST):
    """(line, value) of every constant a module, class or function writes as a default: an assignment's
    value or a parameter's default."""
    found = []
    for node in ast.walk(tree):
        values = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            values = [node.value]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values = [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
        found += [(v.lineno, v.value) for v in values if isinstance(v, ast.Constant)]
    return found


def test_a_settings_variable_is_written_only_in_its_declaration():
    names = set(ENV_VARS.values()) | {s.env for s in SWITCHES.values()}
    written = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith("config/"):
            continue
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            # the variable as a value (a key to read or set), not a message that names it
            if text in names:
                written.append(f"rag_assets/{module}:{line}: {text!r}")
    assert not written, "read these through rag_assets.config (ENV_VARS, switch):\n" + "\n".join(written)


# the functional core (plain Python given its settings' groups): none of it reads a setting from the environment
CORE = ("ingest/", "index/", "retrieval/", "embedding/", "evaluation/", "answer/")
# reads not yet moved to the edge: the tiktoken folder when a caller passes none (benchmarks, a directly built
# OpenAIEmbedder)
CORE_READS_LEFT = {"rag_assets/ingest/tokens.py: cache_dir"}


def _environment_reads(tree: ast.AST):
    """(line, setting) of every os.environ.get(ENV_VARS[x]), os.getenv(ENV_VARS[x]) and os.environ[ENV_VARS[x]]."""
    def setting(node):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "ENV_VARS"
                and isinstance(node.slice, ast.Constant)):
            return node.slice.value
        return None

    def is_environ(node):
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and setting(node.args[0]):
            func = node.func
            if (isinstance(func, ast.Attribute) and ((func.attr == "get" and is_environ(func.value)) or func.attr == "getenv")):
                yield node.lineno, setting(node.args[0])
        elif isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load) and setting(node.slice):
            yield node.lineno, setting(node.slice)


def test_the_core_reads_no_setting_from_the_environment():
    read = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith(CORE):
            for line, name in _environment_reads(ast.parse(path.read_text(encoding="utf-8"))):
                read[f"rag_assets/{module}: {name}"] = line
    assert set(read) == CORE_READS_LEFT, (
        "settings are resolved at the edge and passed in (a base_url, a cache_dir), not read here: "
        + ", ".join(f"{site} (line {line})" for site, line in read.items() if site not in CORE_READS_LEFT))


@pytest.mark.parametrize("site", sorted(DUPLICATE_SITES, key=str), ids=lambda site: site[1] or site[0])
def test_a_default_is_written_only_in_its_declaration(site):
    module, scope = site
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    if scope is not None:
        tree = next(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == scope)
    defaults = {DEFAULTS[name] for name in DUPLICATE_SITES[site]}
    again = [(line, value) for line, value in _defaults_written(tree)
             if not isinstance(value, bool) and value != "" and value in defaults]
    assert not again, f"rag_assets/{module} writes a declared default again (take it from DEFAULTS): {again}"


def test_the_component_and_launched_runs_take_what_the_declarations_say():
    from rag_assets.orchestration.component import MarkdownCorpus
    from rag_assets.orchestration.resources import LAUNCHED_SETTINGS as launched

    by_name = {f.name: declared(f) for f in fields(Settings)}
    assert CORPUS_SETTINGS == tuple(n for n, d in by_name.items() if d.corpus) and "chunk_max_tokens" in CORPUS_SETTINGS
    for name in CORPUS_SETTINGS:
        attribute = MarkdownCorpus.model_fields[name]
        assert attribute.default is None and attribute.description == by_name[name].doc
    assert launched == LAUNCHED_SETTINGS == tuple(n for n, d in by_name.items() if d.launched)
    assert {"docs_dir", "collection", "languages", "versions", "include", "exclude"} == set(launched)
    # every field in one group, the group it declares
    for name, spec in by_name.items():
        assert name in {f.name for f in fields(GROUPS[spec.group])}, name


def test_process_switches_are_read_through_the_declarations_and_are_no_settings():
    assert switch("debug", {"RAG_DEBUG": "yes"}) is True and switch("debug", {"RAG_DEBUG": "0"}) is False
    assert switch("serve_token", {"RAG_SERVE_TOKEN": "t"}) == "t" and switch("server_url", {}) == ""
    assert not {s.env for s in SWITCHES.values()} & set(ENV_VARS.values())
    with pytest.raises(ConfigurationError, match="unknown setting"):
        Settings.from_env({}).with_variables({"RAG_DEBUG": "1"})


# sha256 of repr(Settings.from_env(_ENV)) and of its groups' reprs, computed with main 39a8a34's config.py:
# the no-op check digests repr(settings), so the declarations must leave it as it was
_ENV = {"RAG_DATA_DIR": "/srv/rag", "RAG_STATE_DIR": "/srv/state", "RAG_CHUNK_MAX_TOKENS": "150",
        "RAG_CHUNK_OVERLAP_TOKENS": "10", "RAG_LANGUAGES": "en,es", "RAG_INCLUDE": "guides/**", "RAG_EMBEDDER": "openai",
        "OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://h/v1", "RAG_RRF_K": "30", "RAG_HEADING_WEIGHT": "0.2",
        "RAG_MAX_RESULTS_PER_PAGE": "0", "RAG_INGEST_LOCK_TIMEOUT": "5", "RAG_ALLOW_MASS_DELETE": "yes",
        "CHROMA_PORT": "9000", "RAG_MIN_RELEVANCE": "0.3", "RAG_EVAL_SYNTHETIC": "off", "RAG_CHAT_TEMPERATURE": "0.5",
        "RAG_FUSION": "rrf", "RAG_VERSIONS": "all"}
_DIGEST = "d7298a36d84a56193150155e23313a6af5dec518225c2b61f0b0a374f9d4e850"
_GROUPS_DIGEST = "81312b47eeb7c4fb69091d87fa957047e134f3f5a2e8b8c75a8ad00ceb8be07d"


def test_the_digest_of_the_same_settings_is_what_it_was_before_the_declarations():
    settings = Settings.from_env(_ENV)
    assert hashlib.sha256(repr(settings).encode()).hexdigest() == _DIGEST
    groups = "\n".join(f"{name} {getattr(settings, name)!r}" for name in
                       ("paths", "ingest", "chunking", "openai", "embedding", "retrieval", "answer", "evaluation"))
    assert hashlib.sha256(groups.encode()).hexdigest() == _GROUPS_DIGEST
