"""Eval-set loading: bad lines become errors with file name + line number, good lines still load."""

import json
from pathlib import Path

from rag_assets.evaluation.evalset import ExpectedSource, load_eval_set, load_eval_sets

REPO_EVAL = Path(__file__).resolve().parents[2] / "data" / "eval" / "claude-docs.jsonl"


def good(qid, **extra):
    return json.dumps({"id": qid, "question": f"question {qid}?", "expected": [{"doc_path": "a.md"}], **extra})


def write(path: Path, lines: list[str | bytes]) -> Path:
    data = b"".join((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n" for line in lines)
    path.write_bytes(data)
    return path


def test_bad_lines_reported_with_line_numbers_and_good_lines_kept(tmp_path):
    path = write(
        tmp_path / "set.jsonl",
        [
            good("q1", reference_answer="yes", reference_contexts=["ctx"]),  # 1
            "",  # 2: blank, skipped silently
            "{not json",  # 3
            json.dumps({"id": "q4", "question": "?"}),  # 4: missing expected
            json.dumps({"id": "q5", "question": "?", "expected": []}),  # 5
            json.dumps({"id": "q6", "question": "?", "expected": [{"title": "x"}]}),  # 6
            json.dumps({"id": 7, "question": "?", "expected": [{"doc_path": "a.md"}]}),  # 7
            json.dumps({"id": "q8", "question": "  ", "expected": [{"doc_path": "a.md"}]}),  # 8
            good("q1"),  # 9: duplicate
            "[1, 2]",  # 10
            json.dumps({"id": "q11", "question": "?", "expected": [{"section": 3}]}),  # 11
            b'{"id": "q12", "question": "\xff", "expected": []}',  # 12: not UTF-8
            json.dumps({"id": "q13", "question": "?", "expected": ["a.md"]}),  # 13
            json.dumps({"id": "q14", "question": "?", "expected": [{"text": "t"}], "reference_contexts": 5}),  # 14
            good("q15"),  # 15
        ],
    )
    load = load_eval_set(path)
    assert [q.id for q in load.questions] == ["q1", "q15"]
    assert [q.line for q in load.questions] == [1, 15]
    by_line = {e.line: e.reason for e in load.errors}
    assert sorted(by_line) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert "invalid JSON" in by_line[3]
    assert "missing key 'expected'" in by_line[4]
    assert "expected must not be empty" in by_line[5]
    assert "none of doc_path/section/text" in by_line[6]
    assert "id must be a string" in by_line[7]
    assert "question must not be empty" in by_line[8]
    assert "duplicate id 'q1'" in by_line[9] and "line 1" in by_line[9]
    assert "JSON object" in by_line[10]
    assert "expected[0].section must be a string" in by_line[11]
    assert "UTF-8" in by_line[12]
    assert "expected[0] must be an object" in by_line[13]
    assert "reference_contexts" in by_line[14]
    assert str(load.errors[0]).startswith("set.jsonl:3: ")
    assert [e.id for e in load.duplicates] == ["q1"]
    assert not load.ok
    q1 = load.questions[0]
    assert q1.reference_answer == "yes" and q1.reference_contexts == ("ctx",)
    assert q1.expected == (ExpectedSource(doc_path="a.md"),)


def test_entry_keys_and_path_normalisation(tmp_path):
    line = json.dumps(
        {"id": "x", "question": "q", "expected": [{"doc_path": ".\\dir\\a.md", "section": "S", "text": "t"}], "tag": 1}
    )
    load = load_eval_set(write(tmp_path / "s.jsonl", [line]))
    assert load.ok
    (q,) = load.questions
    assert q.expected[0] == ExpectedSource(doc_path="dir/a.md", section="S", text="t")
    assert q.metadata == {"tag": 1}


def test_missing_file_is_an_error_not_an_exception(tmp_path):
    load = load_eval_set(tmp_path / "nope.jsonl")
    assert load.questions == [] and load.errors[0].line == 0 and "cannot read" in load.errors[0].reason


def test_several_files_namespace_colliding_ids(tmp_path):
    a = write(tmp_path / "alpha.jsonl", [good("q1"), good("q2")])
    b = write(tmp_path / "beta.jsonl", [good("q1"), good("q3"), "oops"])
    load = load_eval_sets([a, b])
    assert [q.id for q in load.questions] == ["alpha/q1", "q2", "beta/q1", "q3"]
    assert load.questions[2].metadata["original_id"] == "q1"
    assert [(e.line, "invalid JSON" in e.reason) for e in load.errors] == [(3, True)]


def test_bundled_eval_set_loads_cleanly():
    load = load_eval_set(REPO_EVAL)
    assert load.ok, [str(e) for e in load.errors[:5]]
    assert len(load.questions) == 100
    assert all(e.doc_path for q in load.questions for e in q.expected)
    # a section for every label but the 7 whose heading has no text of its own on the page (the page is the label)
    assert sum(e.section is None for q in load.questions for e in q.expected) == 7


def test_every_bundled_label_resolves_in_the_bundled_corpus(tmp_path):
    """README command 1 must not print `eval_labels_resolve: FAILED`: every expected (doc_path, section)
    of data/eval is a section that holds text in data/docs, as the chunker cuts it."""
    from rag_assets.config import Settings
    from rag_assets.evaluation.matching import unresolved_labels
    from rag_assets.ingest.chunking import ChunkingConfig, chunk_document
    from rag_assets.ingest.discovery import discover
    from rag_assets.ingest.frontmatter import read_document
    from rag_assets.ingest.markdown import split_markdown
    from rag_assets.ingest.tokens import TokenCounter

    settings = Settings.from_env({})
    counter = TokenCounter.for_name(settings.tiktoken_encoding, tmp_path / "tiktoken")
    units = []
    for ref in discover(REPO_EVAL.parents[1] / "docs").documents:
        doc = read_document(ref)
        for chunk in chunk_document(doc, split_markdown(doc.body), counter, ChunkingConfig.from_settings(settings.chunking)):
            units.append((chunk.doc_path, chunk.section, " > ".join(chunk.heading_breadcrumb)))
    unresolved = unresolved_labels(load_eval_set(REPO_EVAL).questions, units)
    assert unresolved == [], [f"{u.question_id}: {u.reason}" for u in unresolved]
