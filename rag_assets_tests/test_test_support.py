"""The test house itself: the tests' Dagster instance is the repository's dagster.yaml (only its paths
moved), and helpers come from rag_assets_tests/support, never from a conftest.py."""

import re
from pathlib import Path

import dagster as dg
import yaml

from rag_assets.orchestration.event_log import BatchingSqliteEventLogStorage
from rag_assets.orchestration.warm_launcher import WarmRunLauncher
from rag_assets_tests.support.dagster_instance import (POSTGRES_INSTANCE, PROJECT_INSTANCE, instance_config,
                                                       instance_yaml)

TESTS = Path(__file__).resolve().parent


def _base_dirs(node) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "base_dir"] + [d for v in node.values() for d in _base_dirs(v)]
    return [d for v in node for d in _base_dirs(v)] if isinstance(node, list) else []


def test_the_test_instance_is_the_repositorys_dagster_yaml_with_its_files_moved(tmp_path):
    text = PROJECT_INSTANCE.read_text(encoding="utf-8")
    assert "data/dagster" in text
    # what a user gets, with data/dagster replaced by the temporary folder: nothing else differs
    assert instance_config(tmp_path) == yaml.safe_load(text.replace("data/dagster", str(tmp_path)))
    assert all(d.startswith(f"{tmp_path}") for d in _base_dirs(instance_config(tmp_path)))
    # a deviation is named: a storage replaces the three, None leaves a key to Dagster's default
    other = instance_config(tmp_path, storage={"sqlite": {"base_dir": str(tmp_path / "s")}}, run_launcher=None)
    assert "run_launcher" not in other and "run_storage" not in other and "event_log_storage" not in other
    assert {k: v for k, v in other.items() if k != "storage"} == {
        k: v for k, v in instance_config(tmp_path).items()
        if k not in ("run_storage", "event_log_storage", "schedule_storage", "run_launcher")}


def test_the_test_instance_loads_with_the_projects_classes(tmp_path):
    (tmp_path / "dagster.yaml").write_text(instance_yaml(tmp_path))
    project = yaml.safe_load(PROJECT_INSTANCE.read_text(encoding="utf-8"))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.event_log_storage, BatchingSqliteEventLogStorage)
        assert isinstance(instance.run_launcher, WarmRunLauncher)
        coordinator = instance.run_coordinator
        assert coordinator.inst_data.config_dict == project["run_coordinator"]["config"]
    assert (tmp_path / "storage" / "history" / "runs").is_dir()


def test_the_postgresql_instance_is_the_documented_example(tmp_path):
    url = "postgresql+psycopg2://u@127.0.0.1:5432/dagster"
    config = instance_config(tmp_path, POSTGRES_INSTANCE, storage={"postgres": {"postgres_url": url}})
    example = yaml.safe_load(POSTGRES_INSTANCE.read_text(encoding="utf-8"))
    assert set(config) == set(example) and config["run_coordinator"] == example["run_coordinator"]
    assert config["storage"] == {"postgres": {"postgres_url": url}}
    assert _base_dirs(config) and all(d.startswith(f"{tmp_path}") for d in _base_dirs(config))


def test_no_test_imports_from_a_conftest():
    """Helpers shared by tests live in rag_assets_tests/support/; a conftest.py holds fixtures only."""
    bad = re.compile(r"^\s*(from\s+(rag_assets_tests\.(\w+\.)*conftest|\.+conftest|conftest)\s+import|import\s+.*\bconftest\b)",
                     re.M)
    offenders = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py") if bad.search(p.read_text(encoding="utf-8"))]
    assert offenders == [], f"import these helpers from rag_assets_tests.support instead: {offenders}"
