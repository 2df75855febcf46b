"""The readiness rule every stage uses (rag_assets.ingest.stage_windows), on the real state database
through the real stage runners."""

from rag_assets.ingest.chunking import ChunkingConfig
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.stages import chunking_fingerprint, run_chunk, run_parse, run_split
from rag_assets.ingest.tokens import TokenCounter
from rag_assets.index.stage_store import BLOCKS, StageStore
from rag_assets_tests.support.corpus import write_corpus


def test_a_stage_whose_upstream_is_not_current_is_skipped_even_when_its_own_record_is(tmp_path):
    """The chunks fingerprint does not carry the splitter's: chunks made from blocks that are no longer
    current are not "unchanged" (the chunk stage said so while the embed stage said "skipped")."""
    refs = discover(write_corpus(tmp_path / "docs")).documents
    stages = StageStore(tmp_path / "state")
    config = ChunkingConfig()
    counter = TokenCounter.for_name("cl100k_base", tmp_path / "tiktoken")
    fingerprint = chunking_fingerprint(config, "cl100k_base", "model", 512)
    run_parse(refs, stages)
    run_split(refs, stages)
    assert len(run_chunk(refs, stages, counter, config, None, fingerprint).processed) == len(refs)
    assert len(run_chunk(refs, stages, counter, config, None, fingerprint).unchanged) == len(refs)
    doc = refs[0].doc_path
    stages.mark(BLOCKS, [doc], "a splitter that is not this one")
    stages.record_failure(doc, refs[0].content_hash, BLOCKS, "the split broke")
    report = run_chunk(refs, stages, counter, config, None, fingerprint)
    assert report.skipped == {doc: "blocks failed: the split broke"}
    assert doc not in report.unchanged and len(report.unchanged) == len(refs) - 1
