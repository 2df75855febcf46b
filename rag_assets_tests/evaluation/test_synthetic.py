"""Synthetic eval sets generated from the corpus: plain Python, offline, and the LLM path against a real
OpenAI-compatible HTTP server on 127.0.0.1 (rag_assets_tests/support/openai_server.py)."""

from __future__ import annotations

import json

import pytest

from rag_assets.answer.generation import ChatLLM
from rag_assets.evaluation.evalset import load_eval_set
from rag_assets.evaluation.matching import normalize
from rag_assets.evaluation.synthetic.build import DocumentSource, build_synthetic_set
from rag_assets.evaluation.synthetic.folder import load_synthetic_set
from rag_assets.evaluation.synthetic.llm import parse_llm_reply
from rag_assets.evaluation.synthetic.offline import heading_question, offline_question, sentence_question, span_question
from rag_assets.evaluation.synthetic.passages import Passage, document_passages
from rag_assets.evaluation.synthetic.tuning import LLM_GENERATOR, MANIFEST_FILE, OFFLINE_GENERATOR, SET_FILE
from rag_assets.evaluation.synthetic.words import content_words
from rag_assets.ingest.markdown import split_markdown
from rag_assets_tests.support.openai_server import OpenAIStubServer

RETRIES = """# Client

## Configure retries

The client retries a request that failed with a server error or a timeout. Set max_retries on the client
to change how many attempts it makes; the default is three attempts with exponential backoff and jitter.

## Parameters

The constructor accepts an api_key and a base_url pointing at another compatible server. The constructor
also takes a timeout in seconds for every request, and max_retries for failed requests that should be tried again.

## Tiny

Too short to ask about.
"""

PAPER = """Estimating the reproduction number from observed deaths

The basic reproduction number of the virus was estimated at 2.4 across the eleven countries in March.
Our model calculates backwards from the deaths observed over time to estimate transmission that occurred
several weeks earlier, allowing for the time lag between infection and death in every country studied.

Lockdowns were followed by a fall in transmission. The effective reproduction number dropped to close to
one around the time of the national lockdown in Italy, although with a high level of uncertainty.
"""


def _source(doc_path: str, text: str, content_hash: str | None = None, reads: list | None = None) -> DocumentSource:
    def read():
        if reads is not None:
            reads.append(doc_path)
        title = next((line[2:] for line in text.splitlines() if line.startswith("# ")), doc_path.rsplit(".", 1)[0])
        return title, split_markdown(text)
    return DocumentSource(doc_path, content_hash or f"hash-of-{hash(text)}", read)


def _corpus(n_docs: int = 6, sections: int = 4) -> dict[str, str]:
    topics = ["pumps", "valves", "seals", "boilers", "filters", "meters", "gauges", "hoses"]
    docs = {}
    for d in range(n_docs):
        body = [f"# {topics[d].title()} manual"]
        for s in range(sections):
            body.append(f"## Replace the {topics[d]} part {s}")
            body.append(f"Replacing part {s} of the {topics[d]} takes about {s + 2} minutes with a torque wrench; "
                        f"drain the {topics[d]} first. Loosen the {s + 4} bolts of the {topics[d]} and keep the gasket of part {s} "
                        "clean, then tighten the bolts crosswise and check the seal for leaks under pressure.")
        docs[f"{topics[d]}.md"] = "\n\n".join(body) + "\n"
    return docs


def test_heading_questions_read_like_a_user_asking():
    retries = Passage("client.md", "Client > Configure retries", "Configure retries", ("Client", "Configure retries"),
                      "Client", "…", True)
    assert heading_question(retries) == "How do I configure retries?"
    gerund = Passage("client.md", "k", "Configuring timeouts { #timeouts }", ("Client", "Configuring timeouts"),
                     "Client", "…", True)
    assert heading_question(gerund) == "How do I configure timeouts?"
    generic = Passage("client.md", "k", "Parameters", ("Messages API", "Parameters"), "Client", "…", True)
    question = heading_question(generic)
    assert "parameters" in question.lower() and "for Messages API" in question and question.endswith("?")
    asked = Passage("client.md", "k", "Why let Claude think?", ("Why let Claude think?",), "Client", "…", True)
    assert heading_question(asked) == "Why let Claude think?"


def test_questions_bring_words_from_outside_their_passage():
    passages = document_passages("client.md", "Client", split_markdown(RETRIES))
    retries = next(p for p in passages if p.section == "Configure retries")
    # the document's vocabulary this section does not use (the other section's words)
    assert "constructor" in retries.context and "retries" not in retries.context
    for seed in range(10):
        plain = heading_question(retries, seed)
        asked = heading_question(retries, seed, novel=True)
        assert plain.rstrip("?").lower() in asked.lower() and len(asked) > len(plain)
        own = {w.casefold() for w in content_words(retries.text + " Configure retries")}
        assert {w.casefold() for w in content_words(asked)} - own  # at least one word from outside


def test_sentence_questions_are_disturbed_not_verbatim_copies():
    (retries, *_rest) = [p for p in document_passages("client.md", "Client", split_markdown(RETRIES))
                         if p.section == "Configure retries"]
    for seed in range(20):
        question = sentence_question(retries, seed)
        assert question and question.endswith("?")
        body = normalize(retries.text)
        assert normalize(question).rstrip("?") not in body  # never a verbatim piece of the passage
        words = {w.casefold() for w in content_words(question)}
        source = {w.casefold() for w in content_words(retries.text)}
        assert len(words & source) >= 2  # still about the passage
        assert len(content_words(question)) <= 9 + 3  # MAX_QUESTION_WORDS, plus NOVEL_WORDS from outside
    # the wording differs from seed to seed, and the same seed gives the same question
    assert len({sentence_question(retries, seed) for seed in range(20)}) > 10
    assert sentence_question(retries, 7) == sentence_question(retries, 7)


def test_documents_without_headings_get_answer_spans():
    passages = document_passages("paper-1.md", "paper-1", split_markdown(PAPER))
    assert passages and all(p.section is None for p in passages)
    for seed in range(10):
        for passage in passages:
            made = span_question(passage, seed)
            if made is None:
                continue
            question, answer = made
            assert normalize(answer) in normalize(passage.text)  # verbatim: a chunk holding it matches
            assert len(answer) >= 12 and normalize(answer) not in normalize(question)
            record = offline_question(passage, seed)
            assert record["expected"] == [{"doc_path": "paper-1.md", "text": record["expected"][0]["text"]}]
            assert record["kind"] == "span"


def test_tiny_sections_and_code_only_sections_are_skipped():
    text = RETRIES + "\n## Example\n\n```python\nclient = Client(max_retries=5, timeout=10, base_url='http://x')\n```\n"
    sections = [p.section for p in document_passages("client.md", "Client", split_markdown(text))]
    assert sections == ["Configure retries", "Parameters"]  # not "Tiny" (5 words) nor "Example" (only code)


def test_the_set_is_deterministic_spread_over_documents_and_capped(tmp_path):
    docs = _corpus(6, 4)
    first = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path / "a", size=10, seed=3)
    again = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path / "b", size=10, seed=3)
    assert (tmp_path / "a" / SET_FILE).read_text() == (tmp_path / "b" / SET_FILE).read_text()
    assert first.version == again.version and len(first.questions) == 10
    per_doc = {}
    for q in first.questions:
        per_doc[q.expected[0].doc_path] = per_doc.get(q.expected[0].doc_path, 0) + 1
    assert len(per_doc) == 6 and max(per_doc.values()) <= 2  # spread: every document before any gets a third
    other = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path / "c", size=10, seed=4)
    assert other.version != first.version  # another seed, another sample
    # the file is an eval set of the documented format, labelled synthetic and versioned on every line
    lines = [json.loads(line) for line in (tmp_path / "a" / SET_FILE).read_text().splitlines()]
    assert all(line["synthetic"]["set_version"] == first.version for line in lines)
    assert all(line["synthetic"]["generator"] == OFFLINE_GENERATOR for line in lines)
    assert len(load_eval_set(tmp_path / "a" / SET_FILE).questions) == 10
    manifest = json.loads((tmp_path / "a" / MANIFEST_FILE).read_text())
    assert manifest["kind"] == "synthetic" and manifest["version"] == first.version
    assert first.describe()["kind"] == "synthetic"
    assert load_synthetic_set(tmp_path / "a").version == first.version


def test_only_changed_documents_are_read_and_asked_again(tmp_path):
    docs = _corpus(5, 3)
    reads: list[str] = []
    first = build_synthetic_set([_source(p, t, reads=reads) for p, t in docs.items()], tmp_path, size=15)
    assert sorted(reads) == sorted(docs) and len(first.documents_regenerated) == 5
    reads.clear()
    same = build_synthetic_set([_source(p, t, reads=reads) for p, t in docs.items()], tmp_path, size=15)
    assert reads == [] and same.documents_reused == 5 and same.version == first.version

    docs["valves.md"] = docs["valves.md"].replace("Replace the valves part 1", "Service the valves part 1")
    changed = build_synthetic_set([_source(p, t, reads=reads) for p, t in docs.items()], tmp_path, size=15)
    assert reads == ["valves.md"] and changed.documents_regenerated == ["valves.md"]
    assert changed.version != first.version

    def of(result, doc):
        return {q.id: (q.question, q.expected) for q in result.questions if q.expected[0].doc_path == doc}
    for doc in docs:
        if doc != "valves.md":
            assert of(changed, doc) == of(first, doc)  # the other documents' questions are reused as they were
    assert any("Service the valves part 1" == q.expected[0].section for q in changed.questions)

    del docs["pumps.md"]  # a deleted document's questions leave the set
    gone = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path, size=15)
    assert not any(q.expected[0].doc_path == "pumps.md" for q in gone.questions)


# -- the LLM path, against a real HTTP server ----------------------------------------------------------
def _llm_reply(body: dict) -> str:
    user = body["messages"][-1]["content"]
    passage = user.split("<passage>\n", 1)[1].split("\n</passage>", 1)[0]
    words = passage.split()
    if "Heading: (none)" in user or "copied character for character" in body["messages"][0]["content"]:
        return json.dumps({"question": "How many bolts hold it according to the model paper?",
                           "answer": " ".join(words[3:9])})
    return "Here you go: " + json.dumps({"question": f"What should I watch out for with {words[2]}?", "answer": "x"})


@pytest.fixture
def server():
    with OpenAIStubServer() as srv:
        yield srv


def _llm(server) -> ChatLLM:
    return ChatLLM("sk-test", "gen-model", base_url=server.base_url, temperature=0.0, max_tokens=300,
                   max_retries=1, timeout_seconds=10)


def test_llm_questions_come_from_the_chat_model_and_are_reused(server, tmp_path):
    docs = _corpus(4, 2)
    for _ in range(100):
        server.reply(_llm_reply)
    built = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path, size=6, llm=_llm(server))
    assert len(server.chat_requests) == 6 and built.llm_calls == 6 and built.llm_fallbacks == 0
    assert all(q.question.startswith("What should I watch out for") for q in built.questions)
    assert all(q.metadata["synthetic"]["generator"] == f"{LLM_GENERATOR}:gen-model" for q in built.questions)
    assert built.manifest["generator"] == f"{LLM_GENERATOR}:gen-model"
    request = server.chat_requests[0].json
    assert request["model"] == "gen-model" and request["temperature"] == 0.0
    assert "<passage>" in request["messages"][1]["content"] and "JSON" in request["messages"][0]["content"]
    # each question still expects its section
    assert all(q.expected[0].section and q.expected[0].doc_path in docs for q in built.questions)

    again = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path, size=6, llm=_llm(server))
    assert len(server.chat_requests) == 6 and again.version == built.version  # nothing asked twice

    docs["seals.md"] = docs["seals.md"].replace("torque wrench", "hex key")
    changed = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path, size=6, llm=_llm(server))
    asked_again = len(server.chat_requests) - 6
    assert asked_again == sum(1 for q in changed.questions if q.expected[0].doc_path == "seals.md") >= 1


def test_llm_span_answers_must_be_in_the_passage_and_bad_replies_fall_back(server, tmp_path):
    source = _source("paper-1.md", PAPER)
    server.reply(_llm_reply, _llm_reply, _llm_reply, _llm_reply)
    built = build_synthetic_set([source], tmp_path / "ok", size=2, llm=_llm(server))
    assert built.llm_fallbacks == 0
    for q in built.questions:
        (entry,) = q.expected
        assert entry.section is None and normalize(entry.text) in normalize(PAPER)

    server.reset()
    server.reply(json.dumps({"question": "What?", "answer": "words that are not in the paper at all"}),
                 json.dumps({"question": "Which figure did they estimate for it?", "answer": "not in the paper"}))
    fallback = build_synthetic_set([source], tmp_path / "bad", size=2, llm=_llm(server))
    assert fallback.llm_fallbacks == 2 and len(fallback.questions) == 2
    assert all(q.metadata["synthetic"]["generator"] == OFFLINE_GENERATOR for q in fallback.questions)
    assert any("no LLM question" in w for w in fallback.warnings)


def test_a_failing_chat_model_stops_being_asked_and_offline_questions_stand_in(server, tmp_path):
    from rag_assets_tests.support.openai_server import Fault

    server.always(Fault.status(401))
    docs = _corpus(5, 2)
    built = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path, size=10, llm=_llm(server),
                                concurrency=1)
    assert len(built.questions) == 10 and built.llm_fallbacks == 10
    assert len(server.chat_requests) == 3  # LLM_MAX_FAILURES in a row, then no more calls
    assert any("failed 3 times in a row" in w for w in built.warnings)


def test_parse_llm_reply_rejects_copies_of_the_heading():
    passage = Passage("a.md", "k", "Configure retries", ("Configure retries",), "A", "Set max_retries.", True)
    assert parse_llm_reply('{"question": "Configure retries?"}', passage) is None
    assert parse_llm_reply("not json at all", passage) is None
    record = parse_llm_reply("How many times does the client try a failed call again?", passage)
    assert record["question"].startswith("How many") and record["expected"][0]["section"] == "Configure retries"


def test_styles_for_benchmarks_one_kind_only_or_verbatim(tmp_path):
    docs = _corpus(3, 2)
    heading = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path / "h", size=6)
    assert heading.manifest["kinds"] == {"heading": 6} and heading.manifest["generator"] == OFFLINE_GENERATOR
    mixed = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path / "m", size=6, style="mixed")
    assert set(mixed.manifest["kinds"]) == {"heading", "sentence"}
    assert mixed.manifest["generator"] == f"{OFFLINE_GENERATOR}/mixed"
    verbatim = build_synthetic_set([_source(p, t) for p, t in docs.items()], tmp_path / "v", size=6, style="verbatim")
    assert verbatim.manifest["kinds"] == {"sentence": 6}
    assert all(normalize(q.question).rstrip("?") in normalize(docs[q.expected[0].doc_path]) for q in verbatim.questions)
    with pytest.raises(ValueError):
        build_synthetic_set([], tmp_path / "x", style="poetry")


def test_a_document_in_another_language_is_asked_about_by_its_headings_as_written(tmp_path):
    """No English template around Spanish words ("Usuarios right generar: what should I know about …")."""
    spanish = ("# Usuarios\n\n## Generar una clave de acceso\n\nCada usuario puede generar una clave de acceso desde su "
               "perfil. La clave permite llamar a la interfaz sin contraseña y se puede revocar en cualquier momento "
               "desde la misma página de configuración de la cuenta.\n\n## Uso\n\nLa clave se envía en la cabecera de "
               "cada petición; el servidor la comprueba y responde con un error si ha caducado o ha sido revocada.\n")
    built = build_synthetic_set([_source("es/usuarios.md", spanish)], tmp_path / "es", size=10, seed=0)
    assert sorted(q.question for q in built.questions) == ["Generar una clave de acceso", "Usuarios: Uso"]
    english = build_synthetic_set([_source("retries.md", RETRIES)], tmp_path / "en", size=10, seed=0)
    assert all(q.question.endswith(("?", ".")) for q in english.questions)  # English keeps its templates
