"""`rag_assets.MarkdownCorpus` as any Dagster user meets it: `dg scaffold defs` in a project of their
own, a docs folder set in defs.yaml, `dg check defs`, then the corpus's assets materialized on a real
instance and its index queried."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag_assets.config import Settings
from rag_assets.corpus import Corpus
from rag_assets.errors import ConfigurationError
import dagster as dg
from rag_assets.orchestration.component import MarkdownCorpus
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.environment import subprocess_env

DG = str(Path(sys.executable).parent / "dg")
DOCS = {"rules/movement.md": "# Movement\n\n## Difficult terrain\n\nA unit that crosses difficult terrain spends two "
                             "inches of movement for every inch it moves, and may not run or charge that turn.\n",
        "rules/morale.md": "# Morale\n\n## Breaking\n\nA unit that loses half its models in one turn takes a morale "
                           "test; if it fails, it flees toward the nearest table edge.\n"}


def user_project(root: Path) -> Path:
    """A Dagster project with a defs folder, as `create-dagster project` lays it out."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(textwrap.dedent("""
        [project]
        name = "userproj"
        version = "0.0.1"

        [tool.dg]
        directory_type = "project"

        [tool.dg.project]
        root_module = "userproj"
        defs_module = "userproj.defs"
    """))
    (root / "userproj" / "defs").mkdir(parents=True)
    (root / "userproj" / "__init__.py").write_text("")
    (root / "userproj" / "defs" / "__init__.py").write_text("")
    (root / "userproj" / "definitions.py").write_text(textwrap.dedent("""
        from pathlib import Path
        import dagster as dg

        @dg.definitions
        def defs():
            return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
    """))
    # the resources every corpus's assets use, defined once (as rag_assets/corpora/resources.py does)
    (root / "userproj" / "defs" / "resources.py").write_text(textwrap.dedent("""
        import dagster as dg
        from rag_assets.orchestration.resources import project_resources

        @dg.definitions
        def resources():
            return dg.Definitions(resources=project_resources(), executor=dg.in_process_executor)
    """))
    write_corpus(root / "handbook_docs", DOCS)
    return root


def run(args, cwd, env, timeout=300):
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.system
def test_scaffolded_corpus_component_loads_materializes_and_answers(tmp_path):
    project = user_project(tmp_path / "proj")
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = subprocess_env(tmp_path, PYTHONPATH=str(project), DAGSTER_HOME=str(home))

    run([DG, "scaffold", "defs", "rag_assets.MarkdownCorpus", "handbook"], project, env)
    defs_yaml = project / "userproj" / "defs" / "handbook" / "defs.yaml"
    text = defs_yaml.read_text()
    assert "type: rag_assets.MarkdownCorpus" in text and "docs_dir: data/handbook" in text
    defs_yaml.write_text(text.replace("docs_dir: data/handbook", "docs_dir: handbook_docs\n  chunk_target_tokens: 120"))
    assert "All definitions loaded successfully" in run([DG, "check", "defs"], project, env).stdout

    script = textwrap.dedent("""
        import json
        from pathlib import Path
        import dagster as dg
        from rag_assets.config import Settings
        from rag_assets.orchestration.component import MarkdownCorpus
        from rag_assets.pipeline import RAGPipeline

        root = Path.cwd()
        defs = dg.load_from_defs_folder(project_root=root)
        graph = defs.resolve_asset_graph()
        keys = sorted(k.to_user_string() for k in graph.get_all_asset_keys())
        assert graph.get(dg.AssetKey(["handbook", "vector_index"])).group_name == "handbook"
        job = defs.resolve_implicit_global_asset_job_def()
        instance = dg.DagsterInstance.get()
        assert job.execute_in_process(instance=instance,
                                      asset_selection=[dg.AssetKey(["handbook", "document_catalog"])]).success
        per_document = [dg.AssetKey(["handbook", n]) for n in
                        ("parsed_documents", "markdown_blocks", "document_chunks", "chunk_embeddings", "vector_index")]
        for key in instance.get_dynamic_partitions("handbook__documents"):
            assert job.execute_in_process(instance=instance, asset_selection=per_document, partition_key=key).success
        component = dg.ComponentTree.for_project(root).load_component("handbook")
        settings = component.corpus(root / "userproj/defs/handbook", root, Settings.from_env()).settings()
        hits = RAGPipeline.from_settings(settings).search("What happens in difficult terrain?", top_k=3)
        print(json.dumps({"keys": keys, "collection": settings.collection, "target": settings.chunk_target_tokens,
                          "docs_dir": str(settings.docs_dir), "top": hits[0].doc_path,
                          "sensors": sorted(s.name for s in defs.sensors)}))
    """)
    out = run([sys.executable, "-c", script], project, env, timeout=600).stdout
    import json

    got = json.loads(out.strip().splitlines()[-1])
    assert {"handbook/document_catalog", "handbook/vector_index", "handbook/retrieval_evaluation"} <= set(got["keys"])
    assert got["collection"] == "handbook_chunks" and got["target"] == 120
    assert got["docs_dir"] == str((project / "handbook_docs").resolve())
    assert got["top"] == "rules/movement.md"
    assert got["sensors"] == ["handbook__docs_sensor", "handbook__evaluation_sensor"]


@pytest.mark.system
def test_scaffolding_a_corpus_whose_name_is_not_one_writes_nothing(tmp_path):
    """`dg scaffold defs rag_assets.MarkdownCorpus NAME` with a name a corpus may not have: refused at
    once with the reason (a usage error, no traceback), the folder dg made removed, and the
    project's corpora as they were (issue 36: `Upper Case` broke every `rag` command, `../evil`
    wrote outside the defs folder)."""
    project = user_project(tmp_path / "proj")
    (project / "userproj" / "defs" / "default").mkdir()
    (project / "userproj" / "defs" / "default" / "defs.yaml").write_text(
        "type: rag_assets.MarkdownCorpus\n\nattributes:\n  name: default\n")
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    env = subprocess_env(tmp_path, PYTHONPATH=str(project), DAGSTER_HOME=str(tmp_path))
    for name, why in (("Upper Case", "`upper_case` would do"), ("rag", "reserved"), ("default", "already exists"),
                      ("../evil", "not outside it")):
        proc = subprocess.run([DG, "scaffold", "defs", "rag_assets.MarkdownCorpus", name], cwd=project, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0 and why in proc.stdout + proc.stderr, (name, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert "name: default" in (project / "userproj" / "defs" / "default" / "defs.yaml").read_text()


def test_the_project_declares_its_own_corpus_as_the_default_component():
    from rag_assets.orchestration.component import component_corpora

    assert Corpus() in component_corpora(Settings.from_env)


def test_component_settings_and_their_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CORPORA_DIR", str(tmp_path / "corpora"))
    monkeypatch.setenv("RAG_CHUNK_TARGET_TOKENS", "90")
    corpus = MarkdownCorpus(docs_dir="docs/faq", chunk_max_tokens=180, eval_dir="evals/faq",
                            reconcile_cron="30 4 * * *").corpus(tmp_path / "defs" / "faq", tmp_path, Settings.from_env)
    settings = corpus.settings()
    assert settings.eval_dir == (tmp_path / "evals" / "faq").resolve() and settings.reconcile_cron == "30 4 * * *"
    from rag_assets.orchestration.corpus_definitions import build_corpus_definitions

    assert build_corpus_definitions(corpus).schedule.cron_schedule == "30 4 * * *"
    assert corpus.name == "faq" and settings.docs_dir == (tmp_path / "docs" / "faq").resolve()
    assert settings.chunk_max_tokens == 180 and settings.chunk_target_tokens == 90  # the environment fills the rest
    assert settings.state_dir == (tmp_path / "corpora" / "faq" / "state")
    with pytest.raises(Exception, match="needs a docs_dir"):
        MarkdownCorpus().corpus(tmp_path / "defs" / "faq", tmp_path, Settings.from_env)
    with pytest.raises(Exception, match="from the environment"):
        MarkdownCorpus(docs_dir="x").corpus(tmp_path / "defs" / "default", tmp_path, Settings.from_env)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=r"defs/x/defs.yaml: corpus name 'Bad-Name'.*`bad_name`"):
        MarkdownCorpus(docs_dir="x", name="Bad-Name").corpus(tmp_path / "defs" / "x", tmp_path, Settings.from_env)


def test_component_scope_attributes_reach_the_corpus_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CORPORA_DIR", str(tmp_path / "corpora"))
    corpus = MarkdownCorpus(docs_dir="site", exclude="blog/**;*.draft.md", include="docs/**", ignore_files=False,
                            skip_frontmatter_keys="draft", languages="en,es", default_language="en", versions="all"
                            ).corpus(tmp_path / "defs" / "site", tmp_path, Settings.from_env)
    settings = corpus.settings()
    assert settings.versions == "all"
    assert (settings.exclude, settings.include, settings.ignore_files) == ("blog/**;*.draft.md", "docs/**", False)
    assert (settings.skip_frontmatter_keys, settings.languages, settings.default_language) == ("draft", "en,es", "en")
    with pytest.raises(ConfigurationError, match="RAG_LANGUAGES"):
        MarkdownCorpus(docs_dir="site", languages="spanish").corpus(tmp_path / "defs" / "bad", tmp_path,
                                                                     Settings.from_env).settings()
