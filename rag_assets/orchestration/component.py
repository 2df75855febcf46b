"""`rag_assets.MarkdownCorpus`: a corpus as a Dagster Component.

    dg scaffold defs rag_assets.MarkdownCorpus fastapi_docs

writes `rag_assets/corpora/fastapi_docs/defs.yaml`; set its `docs_dir` and the project has a second
corpus: its own asset group (`fastapi_docs/document_chunks`, ...), partitions, job, sensors, schedule,
collection and state (rag_assets.corpus). Values may use Dagster's templating, e.g.
`embedding_model: "{{ env.MY_MODEL }}"`; secrets (OPENAI_API_KEY) stay in the environment.

The project's own corpus is the component named `default` (rag_assets/corpora/default): its settings are
the environment's (rag_assets.config), so RAG_DOCS_DIR & co. work as they always have. The component is
an edge: building its definitions reads the environment once (build_defs); everything under it is
handed the settings.

The corpus's assets need the `embedder` and `vector_store` resources, which a project defines once
for all its corpora (rag_assets/corpora/resources.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

import click
import dagster as dg
import pydantic
from dagster.components.scaffold.scaffold import ScaffoldRequest, scaffold_with

from rag_assets.config import CORPUS_SETTINGS, SETTING_TYPES, Settings, declared_setting
from rag_assets.corpus import DEFAULT_CORPUS, Corpus, SettingsSource, resolve_settings, validate_name
from rag_assets.errors import ConfigurationError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)
# the Settings fields a component may set, besides its name and folder: those declared `corpus=True`
SETTINGS_FIELDS = CORPUS_SETTINGS
# each one an optional attribute of the component (None: as the base settings say), typed and described
# as its declaration says (rag_assets.config.settings)
_CorpusSettings = pydantic.create_model(
    "CorpusSettings", __base__=dg.Model,
    **{name: (SETTING_TYPES[name] | None, pydantic.Field(None, description=declared_setting(name).doc))
       for name in SETTINGS_FIELDS})


class MarkdownCorpusScaffolder(dg.Scaffolder):
    """defs.yaml with the one setting a corpus needs: its folder (data/<name> until you point it elsewhere).

    The folder is the corpus's name: a folder inside the project's defs folder, named as a new
    corpus may be named (rag_assets.corpus: lowercase, not reserved). Anything else is refused
    before a file is written, and the empty folder `dg` made for it is removed (`../evil` would
    otherwise land in rag_assets/evil, and `Upper Case` break every `rag` command)."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        target = Path(request.target_path)  # the defs folder / the path given, as given
        problem = None
        if ".." in target.parts:
            problem = "a corpus is a folder inside the project's defs folder (named as the corpus), not outside it"
        else:
            try:
                validate_name(target.name, new=True)
            except ConfigurationError as exc:
                problem = str(exc)
        if problem is not None:
            if target.is_dir() and not any(target.iterdir()):
                target.rmdir()  # what dg made for it: nothing of ours is left behind
            # a usage error: `dg` prints the one line (not a traceback) and exits 1
            raise click.UsageError(f"rag_assets.MarkdownCorpus {target.name!r}: {problem}; nothing written")
        dg.scaffold_component(request, {"docs_dir": f"data/{target.name}"})


@scaffold_with(MarkdownCorpusScaffolder)
class MarkdownCorpus(dg.Component, _CorpusSettings, dg.Resolvable):
    """A folder of markdown as an evaluated, always-current retrieval index: discovery, parsing,
    heading-aware chunks, embeddings, a Chroma collection and a keyword index of its own, a sensor
    that follows the folder, a nightly reconcile and an evaluation asset."""

    docs_dir: str | None = None  # the folder (relative to the project root); required but for `default`
    name: str | None = None  # the corpus name (asset key prefix, group); default: this component's folder name
    # and every setting a corpus may set (_CorpusSettings: SETTINGS_FIELDS), e.g. chunk_max_tokens, languages
    eval_dir: str | None = None  # its labelled eval sets (*.jsonl; relative to the project root); default: its own folder

    def corpus(self, component_path: Path, project_root: Path, base: SettingsSource) -> Corpus:
        """The corpus this component declares (component_path: its defs folder), over the base
        settings (the default corpus's: the environment's)."""
        name = self.name or Path(component_path).name
        chosen = {f: getattr(self, f) for f in SETTINGS_FIELDS if getattr(self, f) is not None}
        if name == DEFAULT_CORPUS:
            if self.docs_dir or self.eval_dir or chosen:
                raise dg.DagsterInvalidDefinitionError(
                    f"{component_path}: the default corpus takes its settings from the environment "
                    "(RAG_DOCS_DIR, ...); declare another corpus for a folder with settings of its own")
            return Corpus(base=base)
        if not self.docs_dir:
            raise dg.DagsterInvalidDefinitionError(f"{component_path}/defs.yaml: corpus {name} needs a docs_dir")
        docs_dir = Path(self.docs_dir).expanduser()
        docs_dir = docs_dir if docs_dir.is_absolute() else Path(project_root) / docs_dir
        if self.eval_dir:
            eval_dir = Path(self.eval_dir).expanduser()
            chosen["eval_dir"] = (eval_dir if eval_dir.is_absolute() else Path(project_root) / eval_dir).resolve()
        try:
            return Corpus.named(name, docs_dir, resolve_settings(base).corpora_dir, base=base, **chosen)
        except ConfigurationError as exc:
            raise dg.DagsterInvalidDefinitionError(f"{component_path}/defs.yaml: {exc}") from None

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        from rag_assets.orchestration.corpus_definitions import build_corpus_definitions

        # the edge: the component's corpus reads its settings (the environment's) through this reader,
        # as the code location does (rag_assets.orchestration.definitions)
        return build_corpus_definitions(self.corpus(context.path, context.project_root, Settings.from_env)).definitions()


def component_corpora(base: SettingsSource, project_root: Path = PROJECT_ROOT) -> list[Corpus]:
    """The corpora declared as `rag_assets.MarkdownCorpus` components in the project's defs folder,
    over the base settings (none when the package runs outside its project, e.g. installed from a
    wheel)."""
    if not (project_root / "pyproject.toml").is_file():
        return []
    from dagster.components.core.component_tree import ComponentTree

    from rag_assets.orchestration.internals.components import declared_components

    tree = ComponentTree.for_project(project_root)
    found = []
    for loc, component_type, folder in declared_components(tree):  # the component's folder is its name
        if isinstance(component_type, type) and issubclass(component_type, MarkdownCorpus):
            try:
                found.append(tree.load_component(loc).corpus(folder, project_root, base))
            except dg.DagsterInvalidDefinitionError as exc:
                # the others still work (`dagster dev` shows the broken one as its code location's error)
                log.warning("skipping a corpus: %s", exc)
    return found

