"""A corpus's scope through real ingests (real Dagster instance, Chroma, model): what is left out is
counted by reason in the summary and the state, a page leaving the scope is removed from the index
like a deleted file, a page coming back is indexed again, translations come in on request with
their language on every chunk."""

from __future__ import annotations

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.index.stage_store import StageStore
from rag_assets.orchestration.noop_check import quick_noop
from rag_assets.indexing.service import ingest

SPANISH = {
    "es/guide/evaluation.md": "# Herramienta de evaluación\n\nLa herramienta de evaluación le permite comparar las "
                              "respuestas del modelo con los resultados esperados. Cree casos de prueba nuevos desde la "
                              "consola, añada las variables de cada caso y ejecute la evaluación completa para ver qué "
                              "respuestas cumplen los criterios que ha definido para su aplicación.\n",
    "es/guide/streaming.md": "# Respuestas en streaming\n\nCon el streaming, la respuesta llega por partes mientras el "
                             "modelo la genera, de modo que su aplicación puede mostrar el texto enseguida. Active la "
                             "opción en la petición y lea los eventos que envía el servidor hasta el mensaje final.\n",
    "es/rate-limits.md": "# Límites de uso\n\nCada organización tiene límites de peticiones por minuto y de tokens por "
                         "minuto. Si los supera, el servidor responde con un error y debe esperar antes de volver a "
                         "intentarlo; los encabezados de la respuesta indican cuánto tiempo debe esperar.\n",
}


def chunk_languages(settings: Settings) -> dict[str, set[str]]:
    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    out: dict[str, set[str]] = {}
    for _, _, meta in store.iter_all():
        out.setdefault(meta["doc_path"], set()).add(meta.get("language"))
    return out


@pytest.fixture
def site(rag_env, dagster_home):
    docs = rag_env / "docs"
    for rel, text in SPANISH.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text, encoding="utf-8")
    (docs / "upcoming.md").write_text("---\ndraft: true\n---\n# Upcoming\n\nNot announced yet.\n", encoding="utf-8")
    (docs / "internal").mkdir()
    (docs / "internal" / "runbook.md").write_text("# Runbook\n\nOn-call notes.\n", encoding="utf-8")
    (docs / ".ragignore").write_text("internal/\n", encoding="utf-8")
    return docs


def test_left_out_pages_are_counted_removed_when_they_leave_and_indexed_when_they_return(site):
    summary = ingest()
    assert summary.documents_processed == 3 and not summary.errors
    assert summary.left_out == {"translation": 3, "draft": 1, "ragignore": 1} and summary.default_language == "en"
    settings = Settings.from_env()
    assert StageStore.for_settings(settings.paths).read_scope()["left_out"] == summary.left_out
    assert chunk_languages(settings).keys() == {"guide/evaluation.md", "guide/streaming.md", "rate-limits.md"}
    assert all(langs == {"en"} for langs in chunk_languages(settings).values())
    # where the languages came from, and the translations named (they are few)
    assert summary.languages_from == "the pages' text (default en); es/ by its pages' text"
    assert summary.translations_left_out == sorted(SPANISH)
    noop = quick_noop(settings)  # nothing moved: the no-op answer says what is left out too
    assert noop is not None and noop.left_out == summary.left_out
    assert (noop.languages_from, noop.translations_left_out) == (summary.languages_from, sorted(SPANISH))
    import dagster as dg
    from rag_assets.orchestration.instance import get_instance

    meta = get_instance().get_latest_materialization_event(dg.AssetKey("document_catalog")).asset_materialization.metadata
    assert meta["documents_left_out"].value == 5 and meta["left_out"].value == summary.left_out
    assert meta["default_language"].value == "en"
    # each page and why, as a table (issue 42 item 6): a translation with its language
    table = meta["left_out_pages"]
    assert [c.name for c in table.schema.columns] == ["page", "reason", "language"]
    assert [r.data for r in table.records] == [
        {"page": "es/guide/evaluation.md", "reason": "translation", "language": "es"},
        {"page": "es/guide/streaming.md", "reason": "translation", "language": "es"},
        {"page": "es/rate-limits.md", "reason": "translation", "language": "es"},
        {"page": "internal/runbook.md", "reason": "ragignore", "language": ""},
        {"page": "upcoming.md", "reason": "draft", "language": ""}]
    assert meta["left_out_pages_shown"].value == "5 of 5"

    page = site / "rate-limits.md"
    page.write_text("---\nnoindex: true\n---\n" + page.read_text(encoding="utf-8"), encoding="utf-8")
    summary = ingest()
    assert summary.documents_deleted == 1 and summary.left_out["noindex"] == 1
    assert "rate-limits.md" not in chunk_languages(settings)

    page.write_text(page.read_text(encoding="utf-8").replace("noindex: true", "noindex: false"), encoding="utf-8")
    summary = ingest()
    assert summary.documents_processed == 1 and "noindex" not in summary.left_out
    assert "rate-limits.md" in chunk_languages(settings)


def test_translations_on_request_carry_their_language(site, monkeypatch):
    ingest()
    monkeypatch.setenv("RAG_LANGUAGES", "all")
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "all-MiniLM-L6-v2")  # the collection's model (multilingual is opt-in here)
    summary = ingest()
    assert summary.documents_processed == 3 and summary.left_out == {"draft": 1, "ragignore": 1}
    languages = chunk_languages(Settings.from_env())
    assert {path: langs for path, langs in languages.items() if path.startswith("es/")} == {
        path: {"es"} for path in SPANISH}
    monkeypatch.setenv("RAG_LANGUAGES", "default")
    summary = ingest()
    assert summary.documents_deleted == 3 and summary.left_out["translation"] == 3


def test_a_folder_with_translations_still_answers_a_noop_from_stats_alone(site, monkeypatch):
    """The pages read and left out are remembered with their stats: the next look reads none of them."""
    from rag_assets.ingest import discovery

    ingest()
    settings = Settings.from_env()
    assert StageStore.for_settings(settings.paths).read_catalog().left_out_read == sorted(["upcoming.md", *SPANISH])
    opened = []
    real = discovery._fingerprint
    monkeypatch.setattr(discovery, "_fingerprint", lambda *a, **k: opened.append(a[1]) or real(*a, **k))
    noop = quick_noop(settings)
    assert noop is not None and noop.left_out == {"translation": 3, "draft": 1, "ragignore": 1} and opened == []
    assert (noop.documents_discovered, noop.documents_unchanged) == (3, 3)  # the pages left out are not documents
    (site / "es" / "rate-limits.md").write_text((site / "es" / "rate-limits.md").read_text() + "\nMás.\n")
    again = quick_noop(settings)  # a translation moved: read to decide, still left out, nothing to do
    assert again is not None and again.left_out["translation"] == 3 and opened == ["es/rate-limits.md"]
    assert quick_noop(settings) is not None and opened == ["es/rate-limits.md"]  # its new stat remembered
    (site / "upcoming.md").write_text("# Upcoming\n\nAnnounced today.\n")
    assert quick_noop(settings) is None  # a draft no more: an ingest has work
