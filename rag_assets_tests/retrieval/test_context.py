"""Each result's context: the matched chunk with its neighbours in its section, up to the budget
(RAG_CONTEXT_TOKENS), through the real local model, an embedded Chroma and the search snapshot."""

import dataclasses
import re

import pytest

from rag_assets.config import Settings
from rag_assets.errors import ConfigurationError
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.index.generation import bump_generation
from rag_assets.pipeline import RAGPipeline
from rag_assets.retrieval.context import RetrieveRequest
from rag_assets.retrieval.retriever import Retriever
from rag_assets.retrieval.windows import GAP, grow, window_tokens
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.index_builder import build_index

ANIMALS = ["walrus", "heron", "badger", "otter", "lynx", "marmot", "ibex", "puffin", "bison", "gecko",
           "tapir", "okapi", "narwhal", "quokka", "dingo", "ocelot", "kiwi", "yak", "zebu", "vole"]


def paragraph(i: int, animal: str) -> str:
    return (f"Note P{i:02d}: the {animal} keeps to its own valley and feeds there at dawn; the rangers "
            f"counted the {animal} herds twice this season and wrote the numbers into the ledger.")


STEPS = [paragraph(i, a) for i, a in enumerate(ANIMALS)]
PLAIN = [paragraph(i + 40, a + "fish") for i, a in enumerate(ANIMALS)]
DOCS = {
    "field/guide.md": "# Field guide\n\nHow the survey is run.\n\n## Herds\n\n" + "\n\n".join(STEPS)
    + "\n\n## Weather\n\nThe weather station logs rain, wind and frost every hour from the hut roof.\n",
    "notes.md": "\n\n".join(PLAIN) + "\n",  # no headings: the whole document is one section
    "small.md": "# Small\n\n## Tiny\n\nThe lighthouse keeper rings the brass bell at noon.\n\n"
    "The bell rope was replaced in spring.\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("context")
    write_corpus(root / "docs", DOCS)
    settings = Settings.from_env({}, docs_dir=root / "docs", chroma_path=root / "chroma", state_dir=root / "state",
                                 cache_dir=root / "cache", context_tokens=250, context_passages=1)
    build_index(settings.docs_dir, settings)
    return settings  # one window a result (other hits of a section: test_another_hit_...)


@pytest.fixture
def retriever(index):
    return Retriever.from_settings(index)


def markers(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"Note P(\d\d)", text)]


def chunks_of(settings, doc_path):
    store = ChromaStore.for_settings(settings.paths, Retriever.from_settings(settings).embedder)
    rows = [(meta["chunk_index"], cid, text, meta) for cid, text, meta in store.iter_all() if meta["doc_path"] == doc_path]
    return sorted(rows, key=lambda r: r[0])


def test_context_holds_the_neighbours_within_the_budget_and_its_section(retriever):
    for mode in ("keyword", "vector", "hybrid"):
        top = retriever.search("Where does the tapir feed and who counted the tapir herds?", mode, 3)[0]
        assert top.doc_path == "field/guide.md" and "tapir" in top.text, mode
        own = markers(top.text)
        found = markers(top.context)
        assert set(own) < set(found), (mode, own, found)  # more than the chunk: its neighbours
        assert found == sorted(found) == list(range(found[0], found[-1] + 1))  # in document order, no hole
        assert top.text in top.context
        assert 0 < top.context_tokens <= 250
        assert "weather station" not in top.context and "How the survey is run" not in top.context
        assert top.as_dict()["context"] == top.context and top.as_dict()["context_tokens"] == top.context_tokens


def test_context_is_the_window_of_the_stored_chunks_joined_as_the_original(retriever, index):
    top = retriever.search("Where does the tapir feed?", "keyword", 1)[0]
    herds = [(text, meta["token_count"]) for _, _, text, meta in chunks_of(index, "field/guide.md")
             if meta["section"] == "Herds"]
    at = [text for text, _ in herds].index(top.text)
    start, end = grow([t for _, t in herds], at, 250)
    assert end - start > 1
    assert top.context == "\n\n".join(text for text, _ in herds[start:end])
    assert top.context_tokens == window_tokens([t for _, t in herds[start:end]])


def test_a_section_within_the_budget_comes_back_whole_with_its_heading_once(retriever, index):
    top = retriever.search("When does the lighthouse keeper ring the bell?", "hybrid", 1, context_tokens=400)[0]
    assert top.doc_path == "small.md"
    whole = "\n\n".join(text for _, _, text, _ in chunks_of(index, "small.md"))
    assert top.context == whole and top.context.count("## Tiny") == 1
    herds = [text for _, _, text, meta in chunks_of(index, "field/guide.md") if meta["section"] == "Herds"]
    top = retriever.search("Where does the tapir feed?", "keyword", 1, context_tokens=10_000)[0]
    assert top.context == "\n\n".join(herds) and top.context.count("## Herds") == 1


def test_a_document_without_headings_is_one_section_the_budget_its_only_limit(retriever):
    top = retriever.search("Where does the tapirfish feed?", "keyword", 1)[0]
    assert top.doc_path == "notes.md"
    assert len(markers(top.context)) > len(markers(top.text)) and top.context_tokens <= 250
    whole = retriever.search("Where does the tapirfish feed?", "keyword", 1, context_tokens=10_000)[0]
    assert markers(whole.context) == list(range(40, 60))


def test_budget_zero_is_the_chunk_alone_as_before(retriever):
    for r in retriever.search("Where does the tapir feed?", "hybrid", 3, context_tokens=0):
        assert r.context == "" and r.context_tokens == 0
        assert "context" not in r.as_dict() and "context_tokens" not in r.as_dict()
    with pytest.raises(ValueError):
        retriever.search("Where does the tapir feed?", "hybrid", 3, context_tokens=-1)


def test_the_budget_is_a_setting(index):
    retriever = Retriever.from_settings(dataclasses.replace(index, context_tokens=0))
    assert retriever.search("Where does the tapir feed?", "keyword", 1)[0].context == ""
    assert Settings.from_env({"RAG_CONTEXT_TOKENS": "300"}).context_tokens == 300
    assert Settings.from_env({}).context_tokens > 0
    with pytest.raises(ConfigurationError):
        Settings.from_env({"RAG_CONTEXT_TOKENS": "-1"})
    with pytest.raises(ConfigurationError):
        Settings.from_env({"RAG_CONTEXT_PASSAGES": "0"})


def test_a_gap_in_chunk_index_does_not_end_the_section(tmp_path):
    write_corpus(tmp_path / "docs", {"field/guide.md": DOCS["field/guide.md"]})
    settings = Settings.from_env({}, docs_dir=tmp_path / "docs", chroma_path=tmp_path / "chroma",
                                 state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", context_tokens=300)
    build_index(settings.docs_dir, settings)
    retriever = Retriever.from_settings(settings)
    top = retriever.search("Where does the tapir feed?", "keyword", 1)[0]
    chunks = [c for c in chunks_of(settings, "field/guide.md") if c[3]["section"] == "Herds"]
    at = [c[1] for c in chunks].index(top.chunk_id)
    assert at + 2 < len(chunks)
    retriever.store.delete_ids([chunks[at + 1][1]])  # the following chunk goes: chunk_index has a hole
    bump_generation(settings)  # changed without a commit: the reader builds the snapshot from the store
    top = retriever.search("Where does the tapir feed?", "keyword", 1)[0]
    assert chunks[at + 1][2] not in top.context
    assert chunks[at + 2][2] in top.context  # the window went on past the hole


def test_another_hit_of_the_section_apart_is_a_second_passage(index):
    retriever = Retriever.from_settings(dataclasses.replace(index, context_passages=2))
    herds = [(cid, text) for _, cid, text, meta in chunks_of(index, "field/guide.md") if meta["section"] == "Herds"]
    top = retriever.search("Where does the walrus feed?", "keyword", 1, context_tokens=0)[0]
    assert top.chunk_id == herds[0][0]
    far = herds[-1]
    top.section_hits = [far[0]]  # as if the ranking had found the section's last chunk too
    retriever.add_context([top], 250)
    first, second = top.context.split(f"\n\n{GAP}\n\n")
    assert first.startswith("## Herds") and top.text in first and far[1] in second
    assert top.context_tokens <= 250
    one = dataclasses.replace(top, context="", section_hits=[far[0]])
    Retriever.from_settings(index).add_context([one], 250)
    assert GAP not in one.context and far[1] not in one.context  # RAG_CONTEXT_PASSAGES=1: one window


def test_the_pipeline_hands_on_the_context(index):
    pipeline = RAGPipeline.from_settings(index)
    ctx = pipeline.retrieve(RetrieveRequest("Where does the tapir feed and who counted the tapir herds?",
                                            max_chunks=2, min_relevance=0.0))
    assert pipeline.retriever.search("Where does the tapir feed?", "hybrid", 1)[0].section_hits
    chunk = ctx.document_chunks[0]
    assert chunk.text in chunk.context and 0 < chunk.context_tokens <= 250
    assert ctx.as_dict()["document_chunks"][0]["context"] == chunk.context
    out = pipeline.query("Where does the tapir feed and who counted the tapir herds?", top_k=2, min_relevance=0.0,
                         generate_answer=False)
    assert out["contexts"][0] == chunk.context


def test_the_relevance_gate_reads_the_best_results_and_its_threshold_is_checked_once():
    from rag_assets.retrieval.context import relevance_gate, validate_min_relevance
    from rag_assets.retrieval.retriever import SearchResult

    def ranking(*relevance):
        return [SearchResult(f"c{i}", "a.md", "", "", "text", 1.0, relevance=r) for i, r in enumerate(relevance)]

    # one relevant chunk among unrelated ones meets it: the mean of those that qualify, not of all five
    assert relevance_gate(ranking(0.9, 0.1, 0.05, 0.02, 0.01), 0.5) == (0.9, True)
    assert relevance_gate(ranking(0.9, 0.7, 0.1), 0.5) == (pytest.approx(0.8), True)
    assert relevance_gate(ranking(0.4, 0.3), 0.5) == (0.4, False)  # none qualifies: the best one's
    assert relevance_gate(ranking(0.6, None), 0.5) == (0.6, True)  # a result without a relevance counts 0
    assert relevance_gate([], 0.0) == (0.0, False)  # nothing found never meets it
    assert validate_min_relevance(None, 0.25) == 0.25 and validate_min_relevance(1) == 1.0
    for bad in (True, "0.3", 1.5, -0.1):
        with pytest.raises(ValueError, match="min_relevance is a relevance between 0 and 1"):
            validate_min_relevance(bad)
