"""Offline questions: a passage's heading asked as a user would, its most salient sentence disturbed, or
a sentence with its answer span cut out; every one with novel words from outside the passage."""

from __future__ import annotations

import hashlib
import random

from rag_assets.evaluation.matching import normalize
from rag_assets.evaluation.synthetic.passages import Passage
from rag_assets.evaluation.synthetic.tuning import (
    DEFAULT_STYLE, INTENT_WORDS, KEEP_SHARE, MAX_QUESTION_WORDS, MAX_SENTENCE_WORDS, MIN_SENTENCE_WORDS, NOVEL_WORDS, STYLES, SYNONYM_SHARE)
from rag_assets.evaluation.synthetic.words import (
    _NUMBERING, _PIVOTS, _prose_like, _WORD, content_words, GENERIC_HEADINGS, IMPERATIVES, plain_text, sentences, STOPWORDS, SYNONYMS, words_of)
from rag_assets.vocabulary.markup import strip_heading_attributes


def _rng(seed: int | str, *parts: str) -> random.Random:
    digest = hashlib.sha256("\0".join([str(seed), *parts]).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _rank(seed: int | str, *parts: str) -> str:
    return hashlib.sha256("\0".join(["rank", str(seed), *parts]).encode("utf-8")).hexdigest()


def _lower_word(word: str) -> str:
    """Lower-case a word unless it looks like a name or identifier (inner capitals, digits, symbols)."""
    if word[1:] != word[1:].lower() or any(c.isdigit() for c in word) or not word.isalpha():
        return word
    return word.lower()


def _clean_heading(heading: str) -> str:
    text = plain_text(strip_heading_attributes(heading))
    text = _NUMBERING.sub("", text).strip().rstrip(":.")
    return text


def _base_form(gerund: str) -> str | None:
    g = gerund.lower()
    if not g.endswith("ing") or len(g) < 6:
        return None
    stem = g[:-3]
    for candidate in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else None):
        if candidate and candidate in IMPERATIVES:
            return candidate
    return None


def heading_question(passage: Passage, seed: int | str = 0, novel: bool = False) -> str:
    """The heading as a user would ask it (see the module docstring); ``novel``: with a word or two
    from outside the passage (NOVEL_WORDS), as users add."""
    rng = _rng(seed, "heading", passage.uid)
    if novel:
        asked = heading_question(passage, seed)
        extra = _add_novel([], passage, rng)
        if not extra:
            return asked
        return f"{asked.rstrip('?.')} ({' '.join(extra)})?" if rng.random() < 0.5 else \
            f"{' '.join(extra).capitalize()}: {asked[0].lower() + asked[1:] if asked[:2] != asked[:2].upper() else asked}"
    heading = _clean_heading(passage.section or passage.title) or passage.title
    if heading.endswith("?"):
        return heading
    words = heading.split()
    first = words[0].lower() if words else ""
    rest = " ".join(_lower_word(w) for w in words[1:])
    context = ""
    if all(w.lower() in GENERIC_HEADINGS for w in words) or len(content_words(heading)) <= 1:
        parents = [_clean_heading(h) for h in passage.breadcrumb[:-1] if _clean_heading(h)]
        parent = parents[-1] if parents else _clean_heading(passage.title)
        if parent and parent.casefold() != heading.casefold():
            context = f" for {parent}"
    if first in ("what", "how", "why", "when", "where", "which", "can", "should", "do", "does", "is", "are"):
        return heading + context + "?"
    if first in IMPERATIVES:
        return f"How do I {first} {rest}{context}?".replace("  ", " ").replace(" ?", "?")
    base = _base_form(first)
    if base:
        return f"How do I {base} {rest}{context}?".replace("  ", " ").replace(" ?", "?")
    phrase = " ".join(_lower_word(w) for w in words)
    if first == "about":  # "About our limits": "What should I know about our limits?"
        phrase = " ".join(_lower_word(w) for w in words[1:]) or phrase
        return f"What should I know about {phrase}{context}?"
    plural = words[-1].lower().endswith("s") and not words[-1].lower().endswith("ss")
    templates = [f"What {'are' if plural else 'is'} {phrase}{context}?", f"What should I know about {phrase}{context}?",
                 f"How does {phrase}{context} work?", f"Explain {phrase}{context}."]
    return templates[rng.randrange(len(templates))]


def salient_sentence(passage: Passage) -> str | None:
    """The passage's sentence that says most about it: content words shared with its heading, distinct
    content words, an early position; lead-ins (ending in ':') and sentences of code are passed over."""
    heading_words = {w.casefold() for w in content_words(" ".join(passage.breadcrumb) or passage.title)}
    best, best_score = None, float("-inf")
    for position, sentence in enumerate(sentences(plain_text(passage.text))):
        n = len(words_of(sentence))
        if not MIN_SENTENCE_WORDS <= n <= MAX_SENTENCE_WORDS or sentence.rstrip().endswith(":"):
            continue
        distinct = {w.casefold() for w in content_words(sentence)}
        if len(distinct) < 4 or not _prose_like(sentence):
            continue
        symbols = sum(1 for c in sentence if c in "{}()[]=<>;$\\|")
        score = 2.0 * len(distinct & heading_words) + min(len(distinct), 12) - 0.5 * symbols - 0.3 * position
        if score > best_score:
            best, best_score = sentence, score
    return best


def disturb(text: str, rng: random.Random, *, keep: float = KEEP_SHARE, synonyms: float = SYNONYM_SHARE,
            max_words: int = MAX_QUESTION_WORDS) -> list[str]:
    """Content words of ``text``, about a third dropped, some replaced by a synonym, reordered."""
    words = [w.strip(".'’") for w in content_words(text)]
    words = list({w.casefold(): w for w in reversed(words) if w}.values())[::-1]  # first spelling, once
    if not words:
        return []
    kept = [w for w in words if rng.random() < keep]
    missing = [w for w in words if w not in kept]
    rng.shuffle(missing)
    while len(kept) < min(3, len(words)):
        w = missing.pop()
        kept.insert(min(words.index(w), len(kept)), w)
    while len(kept) > max_words:
        kept.pop(rng.randrange(len(kept)))
    out = []
    for w in kept:
        synonym = SYNONYMS.get(w.lower())
        out.append(synonym if synonym and rng.random() < synonyms else _lower_word(w))
    if len(out) > 3 and rng.random() < 0.6:  # reorder: the question starts somewhere in the middle
        cut = rng.randrange(1, len(out))
        out = out[cut:] + out[:cut]
    if len(out) > 2:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _add_novel(words: list[str], passage: Passage, rng: random.Random, most: int | None = None) -> list[str]:
    """``words`` with NOVEL_WORDS words from outside the passage inserted: the document's vocabulary
    (its frequent words the passage does not use) or, less often, an intent word."""
    low, high = NOVEL_WORDS
    count = rng.randint(low, high if most is None else min(high, most))
    pool = list(passage.context[:12])
    out = list(words)
    for _ in range(count):
        if pool and rng.random() < 0.6:
            word = pool.pop(rng.randrange(len(pool)))
        else:
            word = INTENT_WORDS[rng.randrange(len(INTENT_WORDS))]
        if word not in out:
            out.insert(rng.randrange(len(out) + 1), word)
    return out


_OPENERS = ("How do I", "What about", "What is", "Why", "How does", "")


def sentence_question(passage: Passage, seed: int | str = 0, verbatim: bool = False, novel: bool = True) -> str | None:
    """The passage's salient sentence, disturbed (``verbatim``: as written, a baseline for benchmarks)."""
    sentence = salient_sentence(passage)
    if sentence is None:
        return None
    if verbatim:
        return sentence.rstrip(".!") + "?"
    rng = _rng(seed, "sentence", passage.uid)
    words = disturb(sentence, rng)
    if len(words) < 3:
        return None
    if novel:
        words = _add_novel(words, passage, rng)
    opener = _OPENERS[rng.randrange(len(_OPENERS))]
    return f"{opener} {' '.join(words)}?".strip()


def answer_span(sentence: str) -> tuple[int, int] | None:
    """(start, end) of a short answer inside ``sentence``: the words after a pivot ("is", "such as", …)
    up to the next punctuation, 3-8 words and at least 12 characters; else the sentence's last words."""
    spans = [(m.start(), m.end()) for m in _WORD.finditer(sentence)]
    if len(spans) < 6:
        return None
    lowered = [sentence[s:e].casefold() for s, e in spans]
    for i in range(2, len(spans) - 3):
        for pivot in _PIVOTS:
            parts = pivot.split()
            if lowered[i:i + len(parts)] != parts:
                continue
            start = i + len(parts)
            end = start
            while end < len(spans) and end - start < 8:
                gap = sentence[spans[end - 1][1]:spans[end][0]] if end > start else ""
                if any(c in gap for c in ",;:()"):
                    break
                end += 1
            found = _trimmed(sentence, spans, lowered, start, end)
            if found:
                return found
    return _trimmed(sentence, spans, lowered, max(len(spans) - 6, 3), len(spans))


def _trimmed(sentence: str, spans, lowered, start: int, end: int) -> tuple[int, int] | None:
    """The words start..end-1 without function words at either end, if 2+ content words and 12+
    characters remain."""
    while start < end and lowered[start] in STOPWORDS:
        start += 1
    while end > start and lowered[end - 1] in STOPWORDS:
        end -= 1
    if sum(1 for w in lowered[start:end] if w not in STOPWORDS) < 2:
        return None
    if spans[end - 1][1] - spans[start][0] < 12:
        return None
    return spans[start][0], spans[end - 1][1]


def span_question(passage: Passage, seed: int | str = 0, verbatim: bool = False,
                  novel: bool = True) -> tuple[str, str] | None:
    """(question, answer span) for a paragraph of a document without headings. The span is verbatim
    from the passage's own text (so a chunk holding it matches), the question is the rest, disturbed."""
    rng = _rng(seed, "span", passage.uid)
    raw_sentences = sentences(passage.text)
    chosen = salient_sentence(Passage(passage.doc_path, passage.key, None, (), passage.title,
                                      "\n".join(raw_sentences), False))
    if chosen is None:
        return None
    # the same sentence in the raw text (plain_text only collapses markup this prose rarely has)
    raw = next((s for s in raw_sentences if " ".join(plain_text(s).split()) == chosen), None)
    if raw is None:
        return None
    span = answer_span(raw)
    if span is None:
        return None
    answer = raw[span[0]:span[1]]
    rest = raw[:span[0]] + " " + raw[span[1]:]
    words = [" ".join(plain_text(rest).split()).rstrip(".!")] if verbatim else disturb(rest, rng)
    if len(content_words(" ".join(words))) < 3 or normalize(answer) not in normalize(passage.text):
        return None
    if verbatim:
        return f"{words[0]}?", answer
    if novel:
        words = _add_novel(words, passage, rng, most=1)
    opener = ("What is", "What", "Which", "How")[rng.randrange(4)]
    return f"{opener} {' '.join(words)}?", answer


def offline_question(passage: Passage, seed: int | str = 0, style: str = DEFAULT_STYLE) -> dict | None:
    """A question record (without id) for the passage, or None when it has nothing to ask about.
    ``style`` (STYLES): "heading" (the product's), "mixed" (half heading, half sentence questions),
    "sentence", "plain" (mixed without novel words) or "verbatim" sentences (the last four for benchmarks)."""
    verbatim = style == "verbatim"
    if passage.section is None:
        made = span_question(passage, seed, verbatim, STYLES[style][1])
        if made is None:
            return None
        question, answer = made
        return {"question": question, "expected": [{"doc_path": passage.doc_path, "text": answer}],
                "reference_answer": answer, "kind": "span"}
    expected = [{"doc_path": passage.doc_path, "section": passage.section}]
    share, novel, _ = STYLES[style]
    use_heading = _rng(seed, "kind", passage.uid).random() < share
    question = heading_question(passage, seed, novel) if use_heading else sentence_question(passage, seed, verbatim, novel)
    kind = "heading" if use_heading else "sentence"
    if question is None:  # no sentence worth asking about: the heading still is
        question, kind = heading_question(passage, seed, novel), "heading"
    return {"question": question, "expected": expected, "kind": kind}
