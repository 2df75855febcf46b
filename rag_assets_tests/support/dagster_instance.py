"""The Dagster instance a test runs on, generated from the repository's own `dagster.yaml` with every path
moved under a temporary folder, so the tests' instance and the project's cannot drift apart.

A test that needs something else says so by name: `storage=` replaces the three storages with one
`storage:` block (PostgreSQL, or Dagster's stock SQLite to compare with), and a top-level key given as
None is left out (Dagster's default, e.g. `run_launcher=None`: a subprocess per run). The PostgreSQL
instance comes the same way from docs/postgres-dagster.yaml (`source=POSTGRES_INSTANCE`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
PROJECT_INSTANCE = REPO / "dagster.yaml"
POSTGRES_INSTANCE = REPO / "docs" / "postgres-dagster.yaml"
STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")


def instance_config(root: Path, source: Path = PROJECT_INSTANCE, *, storage: dict | None = None,
                    **overrides: Any) -> dict:
    """`source` (parsed) with its files under root: every path below the folder holding them all
    (data/dagster in the repository's file) moved to the same place below root."""
    config = yaml.safe_load(source.read_text(encoding="utf-8"))
    config = _moved(config, data_folder(config), str(root))
    if storage is not None:
        for key in STORAGE_KEYS:
            config.pop(key, None)
        config["storage"] = storage
    for key, value in overrides.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def instance_yaml(root: Path, source: Path = PROJECT_INSTANCE, *, storage: dict | None = None, **overrides: Any) -> str:
    """instance_config as the text of a dagster.yaml."""
    return yaml.safe_dump(instance_config(root, source, storage=storage, **overrides), sort_keys=False)


def data_folder(config: dict) -> str:
    """The folder every `base_dir` of a dagster.yaml lies under (the deepest one common to them all)."""
    return os.path.commonpath(list(_base_dirs(config)))


def _base_dirs(node: Any):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "base_dir" and isinstance(value, str):
                yield value
            else:
                yield from _base_dirs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _base_dirs(value)


def _moved(node: Any, old: str, new: str) -> Any:
    if isinstance(node, dict):
        return {key: _moved(value, old, new) for key, value in node.items()}
    if isinstance(node, list):
        return [_moved(value, old, new) for value in node]
    if isinstance(node, str) and (node == old or node.startswith(old + "/")):
        return new + node[len(old):]
    return node
