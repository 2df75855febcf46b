"""The generator's names and numbers: its kind and versions, set size, passage and question lengths,
the question styles and how many novel words a question brings, the set's file names."""

from __future__ import annotations


KIND = "synthetic"
OFFLINE_GENERATOR = "offline-v3"  # bump when the offline questions change: every document is asked again
LLM_GENERATOR = "llm-v1"  # bump when LLM_PROMPT changes
DEFAULT_SIZE = 100
MIN_WORDS = 20  # prose words a passage needs to be asked about
MIN_SENTENCE_WORDS, MAX_SENTENCE_WORDS = 8, 40
HEADING_SHARE = 0.5  # of the passages of documents with headings: heading questions (the rest: sentences)
# Words a user brings that the passage does not have. The labelled questions of the development corpora
# (benchmarks/synthetic_eval.md) have 40-50 % of their terms outside the section they target; questions
# made of the passage's words alone had 10-15 %, and let keyword matching win where it does not on real
# questions. So each question gets NOVEL_WORDS words from outside its passage: the document's own
# vocabulary (Passage.context) or the intent words users type.
NOVEL_WORDS = (1, 3)
INTENT_WORDS = ("best way", "example", "difference", "need", "want", "work", "possible", "recommended", "happens",
                "correctly", "problem", "help", "usage", "typical", "common", "right", "advice", "when",
                "should", "able")
# offline question styles -> (share of heading questions, novel words added, verbatim sentences);
# "verbatim" is a benchmark baseline, "plain" the questions without novel words
# "heading" is the product's: it ranked modes as the labelled sets do more often than the others
# (benchmarks/synthetic_eval.md)
STYLES = {"heading": (1.0, True, False), "mixed": (HEADING_SHARE, True, False), "sentence": (0.0, True, False),
          "plain": (HEADING_SHARE, False, False), "verbatim": (0.0, False, True)}
DEFAULT_STYLE = "heading"
KEEP_SHARE = 0.65  # content words of a sentence kept in its question
SYNONYM_SHARE = 0.5  # kept words that have a common synonym and get it
MAX_QUESTION_WORDS = 9
LLM_PASSAGE_CHARS = 2000
LLM_MAX_FAILURES = 3  # consecutive failed chat calls after which the rest fall back to offline questions
SET_FILE, MANIFEST_FILE, CACHE_FILE = "eval_set.jsonl", "manifest.json", "cache.json"
