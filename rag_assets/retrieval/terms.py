"""The search terms and keys of a stored chunk: what the search snapshot (snapshot.py) indexes and
the evaluation counts, the same for chunks and queries.

``tokenize``: casefold, words of two or more characters, snake_case/dotted identifiers also split into
their parts, English stopwords dropped, Snowball stemming in the chunk's language (English when it has
none or no stemmer; Chinese and Japanese cut into character pairs); a query is read as every language of
the index reads it (``query_terms``). ``chunk_index_text`` rebuilds the
text a chunk was embedded from out of its stored metadata (rag_assets.vocabulary.index_text), and
``chunk_headings_text`` its ``title > h1 > h2`` header alone. ``section_key`` and ``text_key`` name a
chunk's section and its normalised text (diversity, duplicates, context windows).
"""

from __future__ import annotations

import hashlib
import re

from rag_assets.vocabulary.index_text import build_index_text
from rag_assets.vocabulary.languages import primary

_WORD = re.compile(r"\w+", re.UNICODE)
_SUBWORD_SPLIT = re.compile(r"[_]+")
# bm25s' English list plus a few question words that carry no topic (what/how/...)
_STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there
    these they this to was will with what which who whom how why when where do does did can could
    i you your we our my me us its it's""".split()
)


# English words that name no topic though the keyword index keeps them (it drops only _STOPWORDS):
# relevance.py leaves them out of what a question asks about (SnapshotView.term_presence)
FUNCTION_WORDS = frozenset(
    """about above after again against all also am any because been before being below between both cannot
    did does doing done down during each either else even ever every few from further had has have having
    he her here hers him his however just least less let like may might more most much must neither nor
    now off often once only onto other otherwise over own per rather same shall she should since so some
    than those though through thus too under until up upon very via were whatever whether while whose
    within without would yet yours need want get""".split()
)


class _Stemmer:
    """A PyStemmer Snowball stemmer (English unless told) with a per-process word cache."""

    def __init__(self, algorithm: str = "english") -> None:
        import Stemmer

        self._stemmer = Stemmer.Stemmer(algorithm)
        self._stemmer.maxCacheSize = 100_000

    def __call__(self, words: list[str]) -> list[str]:
        return self._stemmer.stemWords(words)


# The Snowball stemmers PyStemmer ships, by language code; a language without one is stemmed as English
# (as every chunk was before chunks carried a language), Chinese and Japanese are cut into character pairs.
SNOWBALL = {"ar": "arabic", "ca": "catalan", "da": "danish", "de": "german", "el": "greek", "en": "english",
            "es": "spanish", "eu": "basque", "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi",
            "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian", "lt": "lithuanian",
            "nb": "norwegian", "ne": "nepali", "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
            "ru": "russian", "sr": "serbian", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish"}
CHARACTER_PAIRS = frozenset({"zh", "ja"})
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
_STEMMERS: dict[str, _Stemmer] = {}  # a process-wide cache: one stemmer per language, stateless once made


def family(language: str | None) -> str:
    """The tokenizer a language is read with: its code when it has a stemmer or is cut into pairs, else "en"."""
    code = primary(language or "")
    return code if code in SNOWBALL or code in CHARACTER_PAIRS else "en"


def tokenize(text: str, language: str | None = None) -> list[str]:
    """Text -> BM25 terms (see the module docstring). Deterministic; the same for chunks and queries.
    `language` (a chunk's, rag_assets.vocabulary.languages): its Snowball stemmer, or character pairs
    for Chinese and Japanese; none or one without a stemmer: English, as before chunks had one."""
    lang = family(language)
    stemmer = _STEMMERS.get(lang)
    if stemmer is None:
        stemmer = _STEMMERS[lang] = _Stemmer(SNOWBALL.get(lang, "english"))
    words: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if lang in CHARACTER_PAIRS and _CJK_RUN.search(word):
            words.extend(_character_pairs(word))
            continue
        parts = [p for p in _SUBWORD_SPLIT.split(word) if p]
        if len(parts) > 1:  # content_block_delta -> content_block_delta, content, block, delta
            words.append(word.strip("_"))
        words.extend(parts)
    words = [w for w in words if len(w) > 1 and w not in _STOPWORDS]
    return stemmer(words) if words else []


def _character_pairs(word: str) -> list[str]:
    """A word with Chinese or Japanese characters: each run of them as overlapping pairs, the rest as is."""
    out: list[str] = []
    last = 0
    for run in _CJK_RUN.finditer(word):
        if run.start() > last:
            out.append(word[last:run.start()])
        chars = run.group()
        out.extend(chars[i:i + 2] for i in range(len(chars) - 1))
        last = run.end()
    if last < len(word):
        out.append(word[last:])
    return out


def query_terms(query: str, languages) -> list[str]:
    """A query's terms for an index holding chunks of these languages (tokenizer families): its terms as
    each family reads them, the first family's in order, then the others' not already there."""
    families = sorted({family(lang) for lang in languages} or {"en"}, key=lambda f: (f != "en", f))
    terms = tokenize(query, families[0])
    if len(families) > 1:
        seen = set(terms)
        for fam in families[1:]:
            extra = [t for t in tokenize(query, fam) if t not in seen]
            seen.update(extra)
            terms += extra
    return terms


def _breadcrumb(metadata: dict) -> list[str]:
    crumb = str(metadata.get("heading_breadcrumb") or "")
    return [p for p in crumb.split(" > ") if p] if crumb else []


def chunk_index_text(text: str, metadata: dict) -> str:
    """The text a stored chunk was embedded from, rebuilt from its stored metadata."""
    return build_index_text(str(metadata.get("title") or ""), _breadcrumb(metadata), text or "")


def chunk_headings_text(metadata: dict) -> str:
    """A chunk's ``title > h1 > h2`` header alone (what the heading index holds)."""
    return build_index_text(str(metadata.get("title") or ""), _breadcrumb(metadata), "")


def text_key(text: str) -> str:
    """Equal for chunk texts that differ only in case and whitespace (duplicate detection)."""
    return hashlib.sha1(" ".join((text or "").split()).casefold().encode("utf-8")).hexdigest()[:16]


def section_key(metadata: dict) -> str:
    """One value per section of one page: doc_path + the heading path."""
    return f"{metadata.get('doc_path', '')}#{metadata.get('heading_breadcrumb', '')}"


_FUNCTION_TERMS: frozenset[str] | None = None


def function_terms() -> frozenset[str]:
    """FUNCTION_WORDS as the English tokenizer reads them (their stems: "during" -> "dure")."""
    global _FUNCTION_TERMS
    if _FUNCTION_TERMS is None:
        _FUNCTION_TERMS = frozenset(tokenize(" ".join(sorted(FUNCTION_WORDS)), "en"))
    return _FUNCTION_TERMS
