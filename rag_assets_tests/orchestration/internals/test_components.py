"""The assumption about walking a project's component declarations."""

from pathlib import Path

from rag_assets.orchestration.component import PROJECT_ROOT, MarkdownCorpus
from rag_assets.orchestration.internals import components as internals
from rag_assets_tests.support.dagster_assumptions import assumption


def test_declared_components_name_each_component_type_and_folder():
    with assumption("components.declared_components"):
        from dagster.components.core.component_tree import ComponentTree

        tree = ComponentTree.for_project(PROJECT_ROOT)
        found = {folder.name: (loc, kind) for loc, kind, folder in internals.declared_components(tree) if folder}
        assert "default" in found, found
        loc, kind = found["default"]
        assert kind is MarkdownCorpus
        assert isinstance(tree.load_component(loc), MarkdownCorpus)
        assert all(isinstance(folder, Path) for _, kind, folder in internals.declared_components(tree)
                   if kind is MarkdownCorpus)
