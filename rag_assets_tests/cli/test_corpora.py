"""A second folder after the first: `rag ingest --docs-dir` (or RAG_DOCS_DIR) on a folder no corpus
owns makes it a corpus of its own, and the first corpus's index is left exactly as it was (each of
those a `system` test: `rag` as a subprocess); `rag corpora --left-out` in process."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from rag_assets.config import Settings
from rag_assets_tests.support.corpus import write_corpus

OTHER_DOCS = {
    "rules/movement.md": "# Movement\n\n## Difficult terrain\n\nA unit moving through difficult terrain spends two "
                         "inches of movement for every inch it moves, and may not run or charge that turn.\n",
    "rules/shooting.md": "# Shooting\n\n## Line of sight\n\nA model can shoot a target only if it can draw an "
                         "unobstructed line from its eyes to any part of the target model's body.\n",
}


def rag(*args, env=None, codes=(0,)):
    proc = subprocess.run([sys.executable, "-m", "rag_assets", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=600)
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def as_json(proc):
    return json.loads(proc.stdout)


@pytest.mark.system
def test_a_second_folder_becomes_its_own_corpus_and_the_first_index_is_kept(env, monkeypatch, capsys):
    first = as_json(rag("ingest", "--json"))
    assert first["documents_processed"] == 3
    default_before = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}["default"]
    other = write_corpus(env / "Rule Book", OTHER_DOCS)

    made = rag("ingest", "--docs-dir", str(other), "--json")
    report = json.loads(made.stdout)
    assert report["documents_processed"] == 2 and report["documents_failed"] == 0
    assert "'rule_book'" in made.stderr and "left as it is" in made.stderr

    corpora = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}
    assert set(corpora) == {"default", "rule_book"}
    assert corpora["default"]["documents"] == 3 and corpora["default"]["chunks"] == default_before["chunks"] > 0
    assert corpora["rule_book"]["documents"] == 2 and corpora["rule_book"]["chunks"] > 0
    assert corpora["rule_book"]["docs_dir"] == str(other.resolve())
    assert corpora["rule_book"]["assets"] == "rule_book/vector_index" and corpora["rule_book"]["last_ingest"]

    # a query goes to one corpus only
    theirs = as_json(rag("--corpus", "rule_book", "query", "How far can a unit move in difficult terrain?", "--json"))
    assert theirs["results"] and {r["doc_path"] for r in theirs["results"]} <= set(OTHER_DOCS)
    ours = as_json(rag("query", "How far can a unit move in difficult terrain?", "--json"))
    assert not {r["doc_path"] for r in ours["results"]} & set(OTHER_DOCS)

    # both at once: one ranking, the corpus that answers first, each result naming its corpus
    both = as_json(rag("query", "--corpus", "default", "--corpus", "rule_book",
                       "How far can a unit move in difficult terrain?", "--json"))
    assert both["corpora"] == ["default", "rule_book"]
    assert both["results"][0]["corpus"] == "rule_book" and both["results"][0]["doc_path"] == "rules/movement.md"
    assert {r["corpus"] for r in both["results"]} <= {"default", "rule_book"}
    scores = [r["score"] for r in both["results"]]
    assert scores == sorted(scores, reverse=True)
    other_way = as_json(rag("query", "--corpus", "rule_book", "--corpus", "default",
                            "What HTTP status comes back when I exceed the requests per minute?", "--json"))
    assert other_way["results"][0]["corpus"] == "default" and other_way["results"][0]["doc_path"] == "rate-limits.md"

    # the corpora share the embedder settings, so the query process loads the model once, not per corpus
    from rag_assets.cli.main import main
    from rag_assets.embedding.local import MiniLMOnnxEmbedder

    loads = []
    real_load = MiniLMOnnxEmbedder._load_session
    monkeypatch.setattr(MiniLMOnnxEmbedder, "_load_session", lambda self: loads.append(self) or real_load(self))
    capsys.readouterr()
    assert main(["query", "--corpus", "default", "--corpus", "rule_book", "What can a model shoot at?", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["corpus"] == "rule_book"
    assert len(loads) == 1, f"the model was loaded {len(loads)} times for two corpora"

    # the folder keeps its corpus: RAG_DOCS_DIR pointing at it finds it, nothing to do
    again = as_json(rag("ingest", "--json", env={**os.environ, "RAG_DOCS_DIR": str(other)}))
    assert again["documents_unchanged"] == 2 and again["documents_processed"] == 0
    # and the default corpus is as it was: nothing to do either
    assert as_json(rag("ingest", "--json"))["documents_unchanged"] == 3


@pytest.mark.system
def test_each_corpus_is_guarded_against_its_own_folder_emptying(env):
    rag("ingest", "--json")
    other = write_corpus(env / "faq", {f"q{i}.md": f"# Question {i}\n\nAnswer number {i} explains topic {i} "
                                                   "in enough words to make a chunk." for i in range(3)})
    rag("ingest", "--docs-dir", str(other), "--json")
    for page in other.glob("*.md"):
        page.unlink()
    refused = rag("ingest", "--docs-dir", str(other), "--json", codes=(1,))
    assert "refusing" in refused.stderr
    corpora = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}
    assert corpora["faq"]["chunks"] > 0 and corpora["default"]["documents"] == 3


@pytest.mark.system
def test_a_first_folder_on_a_fresh_index_is_the_default_corpus(env):
    other = write_corpus(env / "mine", OTHER_DOCS)
    made = rag("ingest", "--docs-dir", str(other), "--json")
    assert json.loads(made.stdout)["documents_processed"] == 2 and "new corpus" not in made.stderr
    assert [c["name"] for c in as_json(rag("corpora", "--json"))["corpora"]] == ["default"]


@pytest.mark.system
def test_unknown_corpus_is_a_usage_error_naming_the_known_ones(env):
    proc = rag("--corpus", "nope", "query", "anything", codes=(2,))
    assert "no corpus named 'nope'" in proc.stderr and "default" in proc.stderr


@pytest.mark.system
def test_the_code_location_shows_a_registered_corpus_as_its_own_group(env):
    rag("ingest", "--json")
    other = write_corpus(env / "rules", OTHER_DOCS)
    rag("ingest", "--docs-dir", str(other), "--json")
    code = ("from rag_assets.orchestration.definitions import defs\n"
            "g = defs.resolve_asset_graph()\n"
            "keys = {k.to_user_string() for k in g.get_all_asset_keys()}\n"
            "assert {'vector_index', 'rules/vector_index', 'rules/retrieval_evaluation'} <= keys, keys\n"
            "assert g.get(__import__('dagster').AssetKey(['rules', 'vector_index'])).group_name == 'rules'\n"
            "names = {s.name for s in defs.sensors}\n"
            "assert {'docs_sensor', 'rules__docs_sensor', 'rules__evaluation_sensor'} <= names, names\n"
            "defs.resolve_job_def('rules__ingest_documents')\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy(), timeout=300)
    shutil.rmtree(Settings.from_env().corpora_dir / "rules")  # unregistered: gone from the location
    code = ("from rag_assets.orchestration.definitions import defs\n"
            "assert 'rules/vector_index' not in {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy(), timeout=300)


@pytest.mark.system
def test_the_environment_form_of_the_newcomer_sequence(env):
    rag("ingest", "--json")
    other = write_corpus(env / "my-docs", OTHER_DOCS)
    theirs = {**os.environ, "RAG_DOCS_DIR": str(other)}
    made = rag("ingest", "--json", env=theirs)
    assert json.loads(made.stdout)["documents_processed"] == 2 and "'my_docs'" in made.stderr
    # with the variable still set, queries go to that folder's corpus; without it, to the demo's
    hit = as_json(rag("query", "What can a model shoot at?", "--json", env=theirs))["results"][0]
    assert hit["doc_path"] == "rules/shooting.md"
    corpora = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}
    assert corpora["default"]["documents"] == 3 and corpora["my_docs"]["documents"] == 2


@pytest.mark.system
def test_corpus_names_never_collide_with_the_default_corpus(env):
    """Issue 36 item 3: a folder named `rag` (or `RAG`) became corpus `rag`, collection `rag_chunks`, the
    default corpus's: results leaked both ways and `--allow-mass-delete` on it wiped the default's vectors.
    Names are normalised or refused now, and nothing done to such a corpus touches the default one."""
    rag("ingest", "--json")
    before = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}["default"]
    corpora_dir = Settings.from_env().corpora_dir

    # names given by hand that are not names, or are reserved: refused at once, nothing written
    folder = write_corpus(env / "RAG", OTHER_DOCS)
    for name, why in (("Upper Case", "`upper_case` would do"), ("rag", "reserved"), ("default", "project's own corpus"),
                      ("../evil", "lowercase letters")):
        refused = rag("ingest", "--docs-dir", str(folder), "--name", name, codes=(2,))
        assert why in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    assert not corpora_dir.exists() and not (env / "evil").exists()

    # the folder named RAG becomes a corpus of its own, named apart from the default corpus
    made = rag("ingest", "--docs-dir", str(folder), "--json")
    corpora = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}
    (name,) = set(corpora) - {"default"}
    assert name.startswith("rag_") and f"'{name}'" in made.stderr
    assert corpora[name]["collection"] != corpora["default"]["collection"]
    assert corpora[name]["store"] != corpora["default"]["store"]
    assert corpora["default"]["chunks"] == before["chunks"] and corpora[name]["indexed"] == 2
    ours = as_json(rag("query", "How far can a unit move in difficult terrain?", "--json"))
    assert not {r["doc_path"] for r in ours["results"]} & set(OTHER_DOCS)  # nothing leaks into the default corpus
    theirs = as_json(rag("--corpus", name, "query", "What HTTP status comes back when I exceed the requests per minute?",
                         "--json"))
    assert {r["doc_path"] for r in theirs["results"]} <= set(OTHER_DOCS)  # nor out of it

    # emptying it with --allow-mass-delete removes its own documents only
    for page in folder.rglob("*.md"):
        page.unlink()
    rag("ingest", "--docs-dir", str(folder), "--allow-mass-delete", "--json")
    corpora = {c["name"]: c for c in as_json(rag("corpora", "--json"))["corpora"]}
    assert corpora[name]["chunks"] == 0 and corpora["default"]["chunks"] == before["chunks"]
    assert as_json(rag("ingest", "--json"))["documents_unchanged"] == 3


@pytest.mark.system
def test_rag_ingest_name_names_a_new_corpus(env):
    """A Starlight site became `docs` (its folder's name): `--name` says what to call it."""
    site = write_corpus(env / "site" / "docs", OTHER_DOCS)
    made = rag("ingest", "--docs-dir", str(site), "--name", "rule_book", "--json")  # on a fresh index too
    assert "'rule_book'" in made.stderr and as_json(made)["documents_processed"] == 2
    assert [c["name"] for c in as_json(rag("corpora", "--json"))["corpora"]] == ["default", "rule_book"]
    again = rag("ingest", "--docs-dir", str(site), "--name", "rule_book", "--json")  # the same corpus, nothing to do
    assert as_json(again)["documents_unchanged"] == 2 and "new corpus" not in again.stderr
    taken = rag("ingest", "--docs-dir", str(site), "--name", "other_name", codes=(2,))
    assert "corpus rule_book's folder already" in taken.stderr
    elsewhere = write_corpus(env / "elsewhere", OTHER_DOCS)
    clash = rag("ingest", "--docs-dir", str(elsewhere), "--name", "rule_book", codes=(2,))
    assert "rule_book indexes" in clash.stderr
    hit = as_json(rag("--corpus", "rule_book", "query", "What can a model shoot at?", "--json"))["results"][0]
    assert hit["doc_path"] == "rules/shooting.md"


SPANISH = {
    "es/guide/evaluation.md": "# Herramienta de evaluación\n\nLa herramienta de evaluación le permite comparar las "
                              "respuestas del modelo con los resultados esperados. Cree casos de prueba nuevos desde la "
                              "consola, añada las variables de cada caso y ejecute la evaluación completa para ver qué "
                              "respuestas cumplen los criterios que ha definido para su aplicación.\n",
    "upcoming.md": "---\ndraft: true\n---\n# Upcoming\n\nNot announced yet.\n",
}


def test_left_out_lists_each_page_and_why_from_the_state_the_last_look_recorded(rag_env, capsys):
    """Issue 42 item 6: which pages were left out took a SQL query; `rag corpora --left-out NAME`
    lists them with their reason (a translation with its language) from the recorded state."""
    from rag_assets.cli.main import main
    from rag_assets.index.stage_store import StageStore
    from rag_assets.ingest.discovery import discover_for

    write_corpus(rag_env / "docs", SPANISH)
    assert main(["corpora", "--left-out", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["looked"] is False
    settings = Settings.from_env()
    StageStore.for_settings(settings.paths).write_catalog(discover_for(settings))  # what a catalog run records
    shutil.rmtree(rag_env / "docs" / "es")  # the listing reads the recorded state: the folder is not walked again

    assert main(["corpora", "--left-out", "default", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["corpus"] == "default" and listed["looked"] is True and listed["default_language"] == "en"
    assert listed["pages"] == [{"doc_path": "es/guide/evaluation.md", "reason": "translation", "language": "es"},
                               {"doc_path": "upcoming.md", "reason": "draft"}]
    assert listed["left_out"] == 2 and listed["left_out_by_reason"] == {"translation": 1, "draft": 1}

    assert main(["--corpus", "default", "corpora", "--left-out"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "corpus default: 2 page(s) left out of scope: 1 translation, 1 draft (the corpus's language: en)"
    assert lines[1].split() == ["es/guide/evaluation.md", "translation", "(es)"] and lines[2].split() == ["upcoming.md", "draft"]
    assert main(["corpora", "--left-out", "nosuch"]) == 2
    assert "no corpus named 'nosuch'" in capsys.readouterr().err
