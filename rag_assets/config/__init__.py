"""The one home of configuration: every setting declared once (rag_assets.config.settings), defaults
there, environment variables override.

Relative paths are resolved against the current working directory when the settings are loaded (the
repo root for `rag`, `dagster dev` and `dagster asset materialize`). Settings are read once at an edge
(the CLI, the code location and its component, the resources, the Python API's constructors) and handed
down, whole or as their group (rag_assets.config.groups).

The modules: `declaration` (how a setting is declared, and the rules), `settings` (the declarations:
`Settings` and the process-level SWITCHES), `reading` (from the environment: ENV_VARS), `rules` (the
checks), `groups` (the grouped views), `docs_table` (docs/configuration.md's table:
`python -m rag_assets.config.docs_table --write`).
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

from rag_assets.config.declaration import Declared, Switch, declared, switch_value
from rag_assets.config.groups import (GROUPS, AnswerSettings, ChunkingSettings, EmbeddingSettings, EvaluationSettings,
                                      IngestSettings, OpenAIEndpoint, PathSettings, RetrievalSettings)
from rag_assets.config.reading import DEFAULTS, ENV_VARS
from rag_assets.config.rules import chunk_sizes_problem
from rag_assets.config.settings import (DATA_FOLDERS, DEFAULT_LOCAL_MODEL, DEFAULT_OPENAI_MODEL, LOCAL_EMBEDDER,
                                        MULTILINGUAL_LOCAL_MODEL, OPENAI_EMBEDDER, SWITCHES, Settings,
                                        multilingual_model_installed)

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


_FIELDS = {f.name: f for f in fields(Settings)}
# the settings a corpus may set (a MarkdownCorpus component's attributes), and those a run launched in
# another process is handed (rag_assets.orchestration.resources.run_settings_config)
CORPUS_SETTINGS: tuple[str, ...] = tuple(name for name, f in _FIELDS.items() if declared(f).corpus)
LAUNCHED_SETTINGS: tuple[str, ...] = tuple(name for name, f in _FIELDS.items() if declared(f).launched)
# each setting's Python type (the declarations' annotations are text: `from __future__ import annotations`)
SETTING_TYPES: dict[str, type] = {name: {"int": int, "float": float, "bool": bool, "str": str, "Path": Path}.get(
    f.type, str) for name, f in _FIELDS.items()}


def declared_setting(name: str) -> Declared:
    """What the declaration of setting `name` (a Settings field) says about it."""
    return declared(_FIELDS[name])


def switch(name: str, env=None) -> "str | bool":
    """A process-level switch's value (SWITCHES), from `env` (default: this process's environment)."""
    return switch_value(SWITCHES[name], os.environ if env is None else env)


__all__ = [
    "AnswerSettings", "CORPUS_SETTINGS", "ChunkingSettings", "Declared", "LAUNCHED_SETTINGS", "SETTING_TYPES", "DATA_FOLDERS", "DEFAULTS", "DEFAULT_LOCAL_MODEL", "DEFAULT_OPENAI_MODEL",
    "ENV_VARS", "EmbeddingSettings", "EvaluationSettings", "GROUPS", "IngestSettings", "LOCAL_EMBEDDER",
    "MULTILINGUAL_LOCAL_MODEL", "OFFLINE_ENV", "OPENAI_EMBEDDER", "OpenAIEndpoint", "PathSettings",
    "RetrievalSettings", "SWITCHES", "Settings", "Switch", "apply_offline_defaults", "chunk_sizes_problem", "declared", "declared_setting",
    "multilingual_model_installed", "switch",
]
