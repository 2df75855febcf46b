"""The plain stage runners (rag_assets.ingest.stages) under plain pytest: real files, the real tokenizer
and model where a stage needs them, a real embedded Chroma, the real state database."""

import numpy as np
import pytest

from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.discovery import discover
from rag_assets.embedding import MiniLMOnnxEmbedder, OpenAIEmbedder
from rag_assets.index.embedding_cache import EmbeddingCache
from rag_assets.ingest.stages import (
    REPLACING,
    Fingerprints,
    chunking_fingerprint,
    delete_orphans,
    find_orphans,
    run_chunk,
    run_embed,
    run_index,
    run_parse,
    run_split,
    stale_documents,
    store_fingerprint,
)
from rag_assets.progress import ProgressEvent
from rag_assets.index.stage_store import CHUNKS, EMBEDDED, INDEXED, PARSED, StageStore
from rag_assets.index.chroma_store import ChromaStore
from rag_assets.ingest.tokens import TokenCounter
from rag_assets_tests.support.corpus import write_corpus
from rag_assets_tests.support.openai_server import Fault, OpenAIStubServer

CONFIG = ChunkingConfig()


@pytest.fixture
def corpus(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    for i in range(8):
        (docs / f"page-{i}.md").write_text(f"# Page {i}\n\n## Topic {i}\n\nPage {i} explains topic number {i} in one line.\n")
    return tmp_path, discover(docs).documents


@pytest.fixture(scope="module")
def local_embedder():
    return MiniLMOnnxEmbedder()


def _chunk_all(refs, stages, tmp_path, embedder):
    counter = TokenCounter.for_name("cl100k_base", tmp_path / "tiktoken")
    fingerprint = chunking_fingerprint(CONFIG, "cl100k_base", embedder.model_name, embedder.max_input_tokens)
    run_parse(refs, stages)
    run_split(refs, stages)
    run_chunk(refs, stages, counter, CONFIG, embedder.fits, fingerprint)
    return fingerprint


def test_stale_documents_says_why_and_reads_no_payload(corpus, local_embedder):
    tmp_path, refs = corpus
    stages = StageStore(tmp_path / "state")
    fingerprints = Fingerprints(chunks="c1", embedded="m", indexed="ix")
    assert set(stale_documents(refs, stages, fingerprints).values()) == {"new"}
    for ref in refs:
        for stage, fp in ((PARSED, fingerprints.of(PARSED)), ("blocks", fingerprints.of("blocks")), (CHUNKS, "c1"), (EMBEDDED, "m"), (INDEXED, "ix")):
            stages.write(stage, ref.doc_path, ref.content_hash, {"big": "payload"}, fp)
    assert stale_documents(refs, stages, fingerprints) == {}
    a, b, c, d = refs[:4]
    stages.write(PARSED, a.doc_path, "an older hash", {}, fingerprints.of(PARSED))
    stages.mark(INDEXED, [b.doc_path], REPLACING)
    stages.record_failure(c.doc_path, c.content_hash, EMBEDDED, "boom")
    assert stale_documents(refs, stages, Fingerprints("c2", "m", "ix"))[d.doc_path] == "chunks: settings changed"
    stale = stale_documents(refs, stages, fingerprints)
    assert stale == {a.doc_path: "file changed", b.doc_path: "interrupted replace", c.doc_path: "failed at embedded: retried"}


def test_stages_run_in_windows_and_report_progress(corpus, local_embedder, monkeypatch):
    import rag_assets.ingest.stage_windows as stage_windows

    monkeypatch.setattr(stage_windows, "WINDOW_DOCS", 3)  # several windows over 11 documents
    tmp_path, refs = corpus
    stages = StageStore(tmp_path / "state")
    events: list[ProgressEvent] = []
    report = run_parse(refs, stages, events.append)
    assert len(report.processed) == len(refs) == 11
    assert [e.done for e in events] == [3, 6, 9, 11] and {e.total for e in events} == {11}
    again = run_parse(refs, stages)
    assert again.processed == [] and len(again.unchanged) == 11


def test_a_dead_embedding_service_fails_the_rest_of_the_run_at_once(corpus, local_embedder, monkeypatch):
    import rag_assets.ingest.embed_stage as embed_stage

    monkeypatch.setattr(embed_stage, "EMBED_GROUP_CHUNKS", 1)  # one document per group: many calls would be made
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    tmp_path, refs = corpus
    stages = StageStore(tmp_path / "state")
    with OpenAIStubServer(api_key="sk-test-000000") as server:
        server.always(Fault.status(500))
        embedder = OpenAIEmbedder("sk-test-000000", base_url=server.base_url, max_retries=2, backoff_base=0.001,
                                  backoff_max=0.002, breaker_failures=2, tiktoken_cache_dir=tmp_path / "tiktoken")
        fingerprint = _chunk_all(refs, stages, tmp_path, embedder)
        report = run_embed(refs, stages, embedder, EmbeddingCache(stages.db), fingerprint)
        sent = len(server.embedding_requests)
    assert len(report.failed) == len(refs) and not report.processed
    reasons = [report.failed[r.doc_path] for r in refs]
    assert "HTTP 500" in reasons[0]  # the first failure is the endpoint's own error...
    assert all("embedding service unavailable" in reason and "127.0.0.1" in reason for reason in reasons[1:])
    assert sent <= 2 * 2, f"{sent} requests: the breaker should have stopped the run after two failed requests"
    assert len(stages.failures()) == len(refs)


def test_index_writes_many_documents_per_store_call_and_isolates_a_refused_one(corpus, local_embedder):
    tmp_path, refs = corpus
    stages = StageStore(tmp_path / "state")
    cache = EmbeddingCache(stages.db)
    fingerprint = _chunk_all(refs, stages, tmp_path, local_embedder)
    bad = refs[0]
    bad_hashes = [c["content_hash"] for c in stages.read(CHUNKS, bad.doc_path)["payload"]]
    cache.put_many(local_embedder.model_name, bad_hashes, np.ones((len(bad_hashes), 3), dtype=np.float32))  # wrong size
    assert not run_embed(refs, stages, local_embedder, cache, fingerprint).failed
    store = ChromaStore(path=tmp_path / "chroma", embedding_model=local_embedder.model_name, dimension=384)
    report = run_index(refs, stages, store, cache, fingerprint)
    assert set(report.failed) == {bad.doc_path} and len(report.processed) == len(refs) - 1
    assert store.doc_paths() == {r.doc_path for r in refs[1:]}
    record = stages.read(INDEXED, refs[1].doc_path)
    assert record["fingerprint"] == store_fingerprint(store)
    assert set(record["payload"]["chunk_ids"]) == store.ids_of([refs[1].doc_path])[refs[1].doc_path]


def test_orphans_are_found_from_ids_and_named(corpus, local_embedder):
    tmp_path, refs = corpus
    stages = StageStore(tmp_path / "state")
    cache = EmbeddingCache(stages.db)
    fingerprint = _chunk_all(refs, stages, tmp_path, local_embedder)
    run_embed(refs, stages, local_embedder, cache, fingerprint)
    store = ChromaStore(path=tmp_path / "chroma", embedding_model=local_embedder.model_name, dimension=384)
    run_index(refs, stages, store, cache, fingerprint)
    keep = [r.doc_path for r in refs if r.doc_path != "rate-limits.md"]
    orphans = find_orphans(store, keep)
    assert list(orphans.ids_by_document) == ["rate-limits.md"] and orphans.documents_in_store == len(refs)
    assert delete_orphans(store, orphans, stages) == orphans.vectors > 0
    assert store.doc_paths() == set(keep) and stages.read(INDEXED, "rate-limits.md") is None
    assert find_orphans(store, keep).vectors == 0


class _DiskFullSnapshot:
    """A snapshot writer whose commits fail as on a full disk, after the store was written."""

    def __init__(self, writer):
        self.writer = writer

    def replace(self, documents):
        raise OSError(28, "No space left on device")

    def remove(self, doc_paths):
        return self.writer.remove(doc_paths)


def test_index_commits_the_search_snapshot_and_a_failed_commit_is_redone(corpus, local_embedder, tmp_path):
    """The crash window between the store write and the snapshot: the document is not recorded indexed,
    a reader answers its previous version (whole, never mixed with the new one), the next run commits it."""
    from rag_assets.config import Settings
    from rag_assets.index.generation import read_generation
    from rag_assets.retrieval.snapshot import SearchSnapshot
    from rag_assets.retrieval.snapshot_writer import SnapshotWriter

    root, refs = corpus
    settings = Settings.from_env({}, state_dir=root / "state", chroma_path=root / "chroma", docs_dir=root / "docs")
    stages = StageStore.for_settings(settings.paths)
    cache = EmbeddingCache(stages.db)
    fingerprint = _chunk_all(refs, stages, tmp_path, local_embedder)
    run_embed(refs, stages, local_embedder, cache, fingerprint)
    store = ChromaStore.for_settings(settings.paths, local_embedder)
    writer = SnapshotWriter(settings, store, stages.db)
    assert not run_index(refs, stages, store, cache, fingerprint, snapshot=writer).failed
    reader = SearchSnapshot(settings)
    view = reader.view()
    assert view.generation == read_generation(settings) and len(view) == store.count()

    page = root / "docs" / "page-3.md"
    page.write_text("# Page 3\n\n## Topic 3\n\nPage 3 now explains the brass valve ZK-4411 instead.\n")
    edited = [r for r in discover(root / "docs").documents if r.doc_path == "page-3.md"]
    _chunk_all(edited, stages, tmp_path, local_embedder)
    run_embed(edited, stages, local_embedder, cache, fingerprint)
    report = run_index(edited, stages, store, cache, fingerprint, snapshot=_DiskFullSnapshot(writer))
    assert report.failed == {"page-3.md": "page-3.md: the search snapshot could not be written: "
                                          "[Errno 28] No space left on device"}
    assert any("ZK-4411" in text for _, text, meta in store.iter_all() if meta["doc_path"] == "page-3.md")
    texts = [reader.view().text(r) for r in range(len(reader.view())) if reader.view().table(r).doc_path == "page-3.md"]
    assert texts and all("topic number 3" in t for t in texts)  # the previous version, whole
    assert "page-3.md" in stale_documents(edited, stages, Fingerprints(chunks=fingerprint, embedded=local_embedder.model_name,
                                                                       indexed=store_fingerprint(store)))
    assert run_index(edited, stages, store, cache, fingerprint, snapshot=writer).processed == ["page-3.md"]
    texts = [reader.view().text(r) for r in range(len(reader.view())) if reader.view().table(r).doc_path == "page-3.md"]
    assert texts and all("ZK-4411" in t for t in texts)


def test_frontmatter_keys_the_store_refuses_are_dropped_by_name_before_embedding(tmp_path, local_embedder, caplog):
    """Issue 36, item 9: a key "$or" or "" failed the document after it was embedded, with "Invalid metadata
    at index 0" naming no key. Now the key is dropped with a warning naming file and key; the page is indexed."""
    docs = write_corpus(tmp_path / "docs", {
        "keys.md": '---\n"$or": x\n"": empty\n"#tag": y\nchroma:document: z\nkept: fog\n---\n# Keys\n\nThe lighthouse keeper logs fog.\n',
        "plain.md": "# Plain\n\nNothing odd here.\n",
    })
    refs = discover(docs).documents
    stages = StageStore(tmp_path / "state")
    cache = EmbeddingCache(stages.db)
    with caplog.at_level("WARNING"):
        fingerprint = _chunk_all(refs, stages, tmp_path, local_embedder)
    dropped = [r.getMessage() for r in caplog.records if "frontmatter key" in r.getMessage()]
    assert sorted(dropped) == sorted(f"keys.md: frontmatter key {key!r} dropped: the vector store refuses keys that are "
                                     "empty or start with '$' or '#'" for key in ("$or", "", "#tag", "chroma:document"))
    assert not run_embed(refs, stages, local_embedder, cache, fingerprint).failed
    store = ChromaStore(path=tmp_path / "chroma", embedding_model=local_embedder.model_name, dimension=384)
    report = run_index(refs, stages, store, cache, fingerprint)
    assert not report.failed and store.doc_paths() == {"keys.md", "plain.md"}
    hit = store.get(sorted(store.ids_of(["keys.md"])["keys.md"]))[0]
    assert hit.metadata["kept"] == "fog" and not any(k.startswith(("$", "#")) or not k for k in hit.metadata)


def test_every_step_of_a_page_is_linear_in_its_size(tmp_path):
    """Issue 36, item 6: a step quadratic in a page's size (4.8 MB on one line never finished; one 1 MB
    section took 80 s to chunk). Each hostile shape goes through the whole per-page path (read,
    frontmatter, MDX, snippets, split, chunk, ids, metadata, index text) at n and 4n bytes: the CPU time
    (best of two, this process only, so other load on the machine hardly counts) grows ~4x when every
    step is linear and ~16x when one is quadratic; the bound, 9x, leaves room for noise and n log n."""
    from rag_assets_tests.support.hostile_pages import LINEARITY_SHAPES, page_path_cpu_seconds

    ratios = {}
    for name, (make, n) in LINEARITY_SHAPES.items():
        small = page_path_cpu_seconds(tmp_path / f"{name}-n", make(n))
        large = page_path_cpu_seconds(tmp_path / f"{name}-4n", make(4 * n))
        ratios[name] = round(large / max(small, 1e-3), 1)
    assert all(r < 9 for r in ratios.values()), ratios


def test_the_parse_stage_counts_components_whose_text_comes_from_the_sites_code(tmp_path, capsys):
    """Issue 42, item 2: a data-driven component (a showcase, a "since" badge) was dropped or indexed as
    code silently; now each is counted by name, up to the ingest's summary."""
    from rag_assets.cli.ingest import print_unrendered
    from rag_assets.ingest.stages import run_parse
    from rag_assets.models import IngestSummary

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.mdx").write_text("import sites from './sites.json';\n\n# A\n\n<Since v=\"4.0\" />\n\nText.\n\n"
                                "<Showcase sites={sites} />\n\n<Since v=\"4.1\" />\n")
    (docs / "b.mdx").write_text("# B\n\n<Since v=\"5.0\" />\n\nText with {props.name}.\n")
    (docs / "c.md").write_text("# C\n\nPlain {braces}.\n")
    report = run_parse(discover(docs).documents, StageStore(tmp_path / "state"))
    assert report.stats["unrendered_components"] == 5
    assert report.stats["unrendered_by_name"] == {"Since": 3, "Showcase": 1, "{expression}": 1}
    assert report.per_document["c.md"]["unrendered_components"] == 0
    summary = IngestSummary()
    summary.count_unrendered(report.stats["unrendered_by_name"])
    summary.count_unrendered({"Showcase": 2})
    assert summary.unrendered_components == {"Since": 3, "Showcase": 3, "{expression}": 1}
    print_unrendered(summary)
    assert capsys.readouterr().out == ("7 component(s) show text from the site's own code, which is not in the index: "
                                       "Since 3, Showcase 3, {expression} 1\n")
