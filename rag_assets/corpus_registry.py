"""The corpus registry: every named corpus a project knows, for the read side (`rag query --corpus`,
`rag serve`, `RAGPipeline.from_settings(corpus=...)`) and `rag corpora`.

The corpora are the project's `rag_assets.MarkdownCorpus` components, then the folders registered by
`rag ingest --docs-dir` (rag_assets.corpus.registered). The components are read by Dagster's loader
(it resolves their defs.yaml templating), so the read side reaches the Dagster layer only when the
project's defs folder declares a corpus besides the default one: a project that declares none (the
default one is the base settings' own, not read from its defs.yaml) answers without importing Dagster.
"""

from __future__ import annotations

from pathlib import Path

from rag_assets.corpus import DEFAULT_CORPUS, Corpus, SettingsSource, registered, resolve_settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFS_FOLDER = "rag_assets/corpora"  # pyproject.toml's [tool.dg.project] defs_module, as a folder
# what the defs folder holds besides component declarations: its package file and the shared resources
_NOT_COMPONENTS = {"__init__.py", "resources.py"}


def known_corpora(base: SettingsSource, project_root: Path = PROJECT_ROOT) -> list[Corpus]:
    """Every named corpus, over the base settings: the project's components, then the folders
    registered by `rag ingest --docs-dir` (under base.corpora_dir)."""
    corpora_dir = resolve_settings(base).corpora_dir
    components: list[Corpus] = []
    if not _only_the_default_declared(project_root / DEFS_FOLDER):
        from rag_assets.orchestration.component import component_corpora

        components = component_corpora(base, project_root)
    return [c for c in [*components, *registered(corpora_dir, base)] if not c.is_default]


def _only_the_default_declared(defs: Path) -> bool:
    """The defs folder declares the default corpus and nothing else (each defs.yaml a MarkdownCorpus named
    `default` with no other attribute, no Python file but the package's and the resources): Dagster's
    loader would find no corpus to list. Anything else, or anything unreadable: False, the loader decides."""
    import yaml

    try:
        files = [p for p in defs.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        for path in files:
            if path.suffix == ".py" and path.parent == defs and path.name in _NOT_COMPONENTS:
                continue
            if path.name != "defs.yaml":
                return False
            for declared in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if declared is None:
                    continue
                if not isinstance(declared, dict) or set(declared) - {"type", "attributes"}:
                    return False
                if declared.get("type") != "rag_assets.MarkdownCorpus" or declared.get("attributes") != {"name": DEFAULT_CORPUS}:
                    return False
    except (OSError, ValueError, yaml.YAMLError):
        return False
    return True
