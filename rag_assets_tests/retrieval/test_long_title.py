"""A page under a 1,200-character H1 stays findable by its own paragraphs (real model, real Chroma)."""

from rag_assets.config import Settings
from rag_assets.pipeline import RAGPipeline
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index

H1 = ("Operating and maintaining the reactor coolant pumps safely under every plant condition, "
      "including startup, shutdown and emergency procedures " * 10)[:1200]
PARAGRAPHS = [
    "Before starting a coolant pump, confirm that the seal injection flow is within its normal band "
    "and that the oil lift pump has been running for at least two minutes.",
    "If the pump vibration exceeds the alarm setpoint, reduce the load, record the readings every ten "
    "minutes, and call the maintenance engineer before the trip limit is reached.",
    "Seal leak-off temperature above ninety degrees means the number one seal is degrading; schedule a "
    "seal replacement at the next outage and increase monitoring meanwhile.",
]
OTHER = {
    "garden.md": "# Garden\n\n## Watering\n\nWater tomatoes in the morning so the leaves dry before evening.\n",
    "kitchen.md": "# Kitchen\n\n## Bread\n\nKnead the dough for ten minutes until it springs back when pressed.\n",
}


def test_a_long_title_leaves_the_paragraphs_findable_by_their_own_text(tmp_path):
    docs = {"pumps.md": f"# {H1}\n\n" + "\n\n".join(PARAGRAPHS) + "\n", **OTHER}
    write_corpus(tmp_path / "docs", docs)
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    build_index(settings.docs_dir, settings)
    pipeline = RAGPipeline.from_settings(settings)
    for paragraph in PARAGRAPHS:
        for mode in ("vector", "hybrid"):
            top = pipeline.search(paragraph, mode, 3)[0]
            assert top.doc_path == "pumps.md" and paragraph in top.text, (mode, paragraph[:40], top.text[:80])
            assert top.relevance is not None and top.relevance > 0.5  # not the "out" fragment at cos 0.11
