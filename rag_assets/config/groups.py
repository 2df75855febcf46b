"""The settings' groups: frozen views of Settings (`settings.paths`, `.ingest`, `.chunking`, `.openai`,
`.embedding`, `.retrieval`, `.answer`, `.evaluation`), each field under its own name, derived from the
declarations (each field's `group`). A group may also carry values derived from other groups under
names of their own (the embedding group's resolved `model_name` and `tiktoken_dir`, the chunking group's
`tiktoken_dir`, the OpenAI endpoint as `.openai`).

Why views and flat storage: the no-op check digests repr(settings); the views are cached_property values
(in the instance's __dict__), outside the dataclass fields, so not in the repr, the equality, the hash or
`replace`. Code that needs one group takes that group; the edges and code that needs several take the
whole Settings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

from rag_assets.config.declaration import declared
from rag_assets.config.settings import (ANSWER, CHUNKING, EMBEDDING, EVALUATION, INGEST, OPENAI, PATHS, RETRIEVAL,
                                        Settings)


class _OpenAIUser:
    """A group that talks to the OpenAI-compatible endpoint reads its key and URL through `openai`."""

    openai: "OpenAIEndpoint"

    @property
    def openai_api_key(self) -> str | None:
        return self.openai.openai_api_key

    @property
    def openai_base_url(self) -> str | None:
        return self.openai.openai_base_url


def _tiktoken_dir(settings: Settings) -> Path:
    return settings.cache_dir / "tiktoken"


# group -> (class name, docstring, base classes, values derived from other groups: name -> (type, how))
_SPECS: dict[str, tuple[str, str, tuple[type, ...], dict[str, tuple[str, Callable[[Settings], Any]]]]] = {
    PATHS: ("PathSettings", "Where things live: the folders, the state database, the vector store.", (), {}),
    INGEST: ("IngestSettings", "What is read and how ingest runs: discovery, parsing, scope, languages, metadata, "
             "runs, the deletion guard and the automation under `dagster dev`.", (), {}),
    CHUNKING: ("ChunkingSettings", "How documents are cut (tiktoken tokens); `tiktoken_dir` holds the encodings.", (),
               {"tiktoken_dir": ("Path", _tiktoken_dir)}),
    OPENAI: ("OpenAIEndpoint", "The OpenAI-compatible endpoint the embedder, chat model and judge share.", (), {}),
    EMBEDDING: ("EmbeddingSettings", "The embedder: which one, its model (`model_name`: resolved, with the "
                "languages' default) and, for OpenAI, its requests.", (_OpenAIUser,),
                {"openai": ("OpenAIEndpoint", lambda s: s.openai), "model_name": ("str", lambda s: s.model_name),
                 "tiktoken_dir": ("Path", _tiktoken_dir)}),
    RETRIEVAL: ("RetrievalSettings", "How a question is answered with chunks: mode, fusion, ranking, context, "
                "limits, the query cache.", (), {}),
    ANSWER: ("AnswerSettings", "The chat model that writes answers (rag_assets.answer.generation).", (_OpenAIUser,),
             {"openai": ("OpenAIEndpoint", lambda s: s.openai)}),
    EVALUATION: ("EvaluationSettings", "Evaluation: top k, the recall check's threshold and severity, extra corpora, "
                 "synthetic sets, the judge.", (_OpenAIUser,), {"openai": ("OpenAIEndpoint", lambda s: s.openai)}),
}


def _group_class(group: str) -> type:
    name, doc, bases, derived = _SPECS[group]
    own = [(f.name, f.type, dataclasses.field(repr=f.repr)) for f in fields(Settings) if declared(f).group == group]
    cls = dataclasses.make_dataclass(name, [*own, *((n, kind) for n, (kind, _) in derived.items())], bases=bases,
                                     frozen=True)
    cls.__module__, cls.__doc__ = __name__, doc  # make_dataclass's own `module=` is Python 3.12's
    return cls


# group name (a Settings attribute) -> its class; every Settings field is in exactly one of them
GROUPS: dict[str, type] = {group: _group_class(group) for group in _SPECS}
PathSettings = GROUPS[PATHS]
IngestSettings = GROUPS[INGEST]
ChunkingSettings = GROUPS[CHUNKING]
OpenAIEndpoint = GROUPS[OPENAI]
EmbeddingSettings = GROUPS[EMBEDDING]
RetrievalSettings = GROUPS[RETRIEVAL]
AnswerSettings = GROUPS[ANSWER]
EvaluationSettings = GROUPS[EVALUATION]
_OWN = {group: tuple(f.name for f in fields(Settings) if declared(f).group == group) for group in GROUPS}


def view(group: str, settings: Settings):
    """The group `group` of these settings (what Settings' group properties return, once each)."""
    derived = {name: how(settings) for name, (_, how) in _SPECS[group][3].items()}
    return GROUPS[group](**{name: getattr(settings, name) for name in _OWN[group]}, **derived)
