"""Settings from the environment (or configuration variables by name), as the declarations say:
each field's variable (ENV_VARS), its type, the data folder's default places."""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Mapping

from rag_assets.config.declaration import declared
from rag_assets.config.settings import DATA_FOLDERS, Settings
from rag_assets.errors import ConfigurationError

# field name -> environment variable
ENV_VARS: dict[str, str] = {f.name: declared(f).env for f in fields(Settings)}
_TYPES = {f.name: f.type for f in fields(Settings)}
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Settings)}


def from_env(cls: type[Settings], env: Mapping[str, str] | None, overrides: dict) -> Settings:
    env = os.environ if env is None else env
    values: dict = {}
    for name, var in ENV_VARS.items():
        if env.get(var) not in (None, ""):
            values[name] = coerce(name, var, env[var])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return cls(**_under_data_dir(values)).resolved().validated()


def with_variables(settings: Settings, variables: Mapping[str, str]) -> Settings:
    by_var = {var: name for name, var in ENV_VARS.items()}
    unknown = sorted(set(variables) - set(by_var))
    if unknown:
        raise ConfigurationError(f"unknown setting(s) {', '.join(unknown)} (docs/configuration.md lists them)")
    chosen = {by_var[v]: coerce(by_var[v], v, raw) for v, raw in variables.items() if raw not in (None, "")}
    return replace(settings, **_under_data_dir(chosen)).resolved().validated() if chosen else settings


def resolved(settings: Settings) -> Settings:
    cwd = Path.cwd()
    paths = {f.name: (cwd / getattr(settings, f.name)).resolve()
             for f in fields(settings) if isinstance(getattr(settings, f.name), Path)}
    return replace(settings, **paths)


def _under_data_dir(values: dict) -> dict:
    """values with each data folder not given placed under the data folder, when that is given
    (RAG_DATA_DIR=/srv/rag: /srv/rag/docs, /srv/rag/chroma, ...; RAG_STATE_DIR still wins for the state)."""
    root = values.get("data_dir")
    if root is None:
        return values
    return {**{name: Path(root) / folder for name, folder in DATA_FOLDERS.items()}, **values}


def coerce(name: str, var: str, raw: str):
    """The variable's text as the field's type (ConfigurationError naming the variable)."""
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
