"""The checks settings must pass: each field's declared rule, then the rules over several fields
(each written here once; ChunkingConfig asks chunk_sizes_problem too)."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from rag_assets.config.declaration import declared, problem_message
from rag_assets.errors import ConfigurationError


def chunk_sizes_problem(min_tokens: int, target_tokens: int, max_tokens: int, overlap_tokens: int) -> str | None:
    """What is wrong with these chunk sizes, or None. The overlap stays under half the maximum: a chunk
    repeats less than half of the one before, so every chunk after the first brings more new text than
    it repeats (the packer budgets the overlap in each chunk's `max_tokens`)."""
    if not 0 < min_tokens <= target_tokens <= max_tokens:
        return ("chunk sizes must satisfy 0 < RAG_CHUNK_MIN_TOKENS <= RAG_CHUNK_TARGET_TOKENS <= RAG_CHUNK_MAX_TOKENS, "
                f"got {min_tokens} / {target_tokens} / {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens // 2:
        return ("RAG_CHUNK_OVERLAP_TOKENS must be between 0 and half of RAG_CHUNK_MAX_TOKENS, "
                f"got {overlap_tokens} (RAG_CHUNK_MAX_TOKENS {max_tokens})")
    return None


def validate(settings) -> None:
    """ConfigurationError naming the variable, unless every declared rule holds."""
    for f in fields(settings):
        spec = declared(f)
        value = getattr(settings, f.name)
        problem = spec.rule(value) if spec.rule is not None else None
        if problem:
            raise ConfigurationError(problem_message(spec.env, value, problem))
    problem = chunk_sizes_problem(settings.chunk_min_tokens, settings.chunk_target_tokens, settings.chunk_max_tokens,
                                  settings.chunk_overlap_tokens)
    if problem:
        raise ConfigurationError(problem)
    if settings.dense_weight + settings.keyword_weight == 0:
        raise ConfigurationError("RAG_DENSE_WEIGHT and RAG_KEYWORD_WEIGHT must be >= 0 and not both 0")
    _check_globs(settings)


def _check_globs(settings) -> None:
    import pathspec

    from rag_assets.config.reading import ENV_VARS
    from rag_assets.vocabulary.languages import split_list

    for name in ("include", "exclude"):
        for glob in split_list(getattr(settings, name), ";"):
            try:
                if "\n" in glob or glob.startswith("#"):
                    raise ValueError
                pathspec.GitIgnoreSpec.from_lines([glob])
            except ValueError:  # pathspec's GitIgnorePatternError is one
                raise ConfigurationError(f"{ENV_VARS[name]}: {glob!r} is not a glob in gitignore syntax "
                                         "(separate globs with ';')") from None
            outside = _outside_folder(glob, Path(settings.docs_dir))
            if outside:
                raise ConfigurationError(f"{ENV_VARS[name]} (--{name}): {glob!r} {outside}")


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
