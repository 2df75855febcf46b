"""Synthetic eval sets: known-item questions generated from the corpus itself, for a corpus with no
labelled eval set. Plain Python (no Dagster): the ``synthetic_eval_set`` asset and ``rag evaluate``
call :func:`build.build_synthetic_set`.

Modules, in the order a set is made: tuning (names and numbers), words, passages, offline (offline
questions), llm (LLM-written ones), build (the set), folder (a docs folder as its documents: from
the ingest stages' records where they exist, else from the files by the ingestion's own road).

What a question is
------------------
The documents are read as the ingestion read them (its parsed and blocks records; a folder never
ingested by rag_assets.ingest.document: frontmatter, MDX, ``split_markdown``) and cut
into *passages*: a section of a document with headings (the intro before the first heading is the
section named after the page title, as in chunking), or a paragraph of a document without headings.
Passages with fewer than :data:`MIN_WORDS` words of prose (code and tables do not count) are skipped.
Each passage gets one question:

- ``heading`` (documents with headings): the heading as a user would ask it — "Configure retries" →
  "How do I configure retries?", a generic heading ("Parameters") with its parent or the page title;
- ``sentence`` (documents with headings, the "mixed"/"sentence" styles only): the passage's most salient
  sentence with its wording disturbed — about a third of its content words dropped, some replaced by a
  common synonym, the rest reordered — so the question is not a verbatim copy;
- ``span`` (documents without headings): a sentence's answer span (a few words after "is", "are",
  "such as"…, else its end) is cut out; the disturbed rest is the question and the span, verbatim,
  the expected ``text``.

Every question also gets one to three words from outside its passage (:data:`NOVEL_WORDS`): words of
the same document the passage does not use, or intent words ("example", "best way"…). Real questions
bring such words (40-50 % of their terms on the development sets); without them a synthetic set
rewards keyword matching far more than real questions do.

A heading or sentence question expects its section (``doc_path`` + ``section``); a span question
expects ``doc_path`` + ``text``. The style (:data:`STYLES`) decides the kinds: "heading" is the
product's (it ranked retrieval modes as the labelled sets do most often, benchmarks/synthetic_eval.md);
"mixed" asks :data:`HEADING_SHARE` of the sections by heading and the rest by sentence (a hash of
the seed and the passage decides). With a chat model configured
(``OPENAI_API_KEY`` and ``RAG_CHAT_MODEL`` or ``OPENAI_BASE_URL``), the selected passages get an
LLM-written question instead (:data:`LLM_PROMPT`), same expected source; a reply that cannot be used
falls back to the offline question of that passage.

Sampling and reuse
------------------
Candidates are ordered within each document by a seeded hash, and documents likewise; the set takes
each document's first candidate, then every document's second, … up to ``size`` questions (100), so
the questions are spread over the documents. Everything is a pure function of the seed and the
documents' contents. A per-document cache (``cache.json`` beside the set) keeps each document's
passages and questions under its content hash: only a changed document is read and asked about
again; the others' questions are reused as they were (LLM questions included).

The set is written as ``eval_set.jsonl`` (the eval-set format of docs/evaluation.md; each line also
carries ``"synthetic": {kind, generator, doc_hash, set_version}``) and ``manifest.json`` (``kind:
"synthetic"``, version, generator, seed, counts). The version is a hash of the questions and their
expected sources: it changes exactly when the set does.
"""
