"""The component declarations of a Dagster project, with their folders (a corpus component's folder
is its default name: rag_assets.orchestration.component)."""

from __future__ import annotations

from pathlib import Path


def declared_components(tree) -> list[tuple[object, type | object, Path | None]]:
    """(path key, component type, folder) of every declaration under the project's defs folder, from a
    ComponentTree (Dagster's _component_decl_tree(): declarations, before loading); the folder is None
    for the tree's root (not a component's folder)."""
    found = []
    for loc, decl in tree._component_decl_tree().items():  # noqa: SLF001 - there is no public walk of declarations
        folder = getattr(loc, "file_path_posix", None)
        found.append((loc, decl.component_type, Path(folder) if folder is not None else None))
    return found
