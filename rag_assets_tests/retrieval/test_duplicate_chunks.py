"""A page of 200 identical paragraphs must not hide the other pages from vector search.

Through the real ingestion (`rag ingest`: Dagster, the local model, Chroma's HNSW index): before
duplicate chunks were dropped, the page's identical chunks filled the neighbourhood of every query
and `--mode vector` returned only that page.
"""

import json
import os
import subprocess
import sys

import pytest

from rag_assets.config import Settings
from rag_assets.embedding import load_embedder
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.pipeline import RAGPipeline
from rag_assets_tests.support.corpus import write_corpus

pytestmark = pytest.mark.system

PARAGRAPH = ("Remember to submit your weekly timesheet before Friday noon so that payroll can process it "
             "in time for the monthly salary run.")
OTHERS = {
    "garden.md": "# Garden\n\n## Watering\n\nWater tomatoes in the morning so the leaves dry before evening.\n",
    "kitchen.md": "# Kitchen\n\n## Bread\n\nKnead the dough for ten minutes until it springs back when pressed.\n",
    "bikes.md": "# Bikes\n\n## Chains\n\nClean and oil the bicycle chain every two hundred kilometres.\n",
    "boats.md": "# Boats\n\n## Knots\n\nA bowline makes a fixed loop at the end of a rope that will not slip.\n",
}
QUESTIONS = {
    "garden.md": "When should I water the tomatoes?",
    "kitchen.md": "How long do I knead bread dough?",
    "bikes.md": "How often should the bicycle chain be oiled?",
    "boats.md": "Which knot makes a loop that does not slip?",
}


def test_identical_paragraphs_are_stored_once_and_do_not_crowd_out_other_pages(rag_env, dagster_home):
    write_corpus(rag_env / "docs", {"reminders.md": "# Reminders\n\n" + "\n\n".join([PARAGRAPH] * 200) + "\n",
                                    **OTHERS})
    proc = subprocess.run([sys.executable, "-m", "rag_assets", "ingest", "--json"], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["documents_failed"] == 0

    settings = Settings.from_env()
    store = ChromaStore.for_settings(settings.paths, load_embedder(settings.embedding))
    reminders = [text for _, text, meta in store.iter_all() if meta["doc_path"] == "reminders.md"]
    assert 0 < len(reminders) == len(set(reminders))  # one vector per distinct text
    pipeline = RAGPipeline.from_settings(settings)
    for doc_path, question in QUESTIONS.items():
        results = pipeline.search(question, "vector", 5)
        assert doc_path in [r.doc_path for r in results], (question, [r.doc_path for r in results])
