"""The language of a page's text, when its text can tell.

py3langid (a model it ships: no download) reads a page's first 1,200 characters of prose (code, tags, links
and URLs removed). It is believed only when it is sure (probability >= 0.9 over at least 200 letters) and
the text is not mixed: names and quotations of another language (an English menu of Italian dishes, a
Spanish page quoting English UI labels) swing a character model, never a text's grammar. So the function
words of seven common languages are counted too; when another of them makes up 3 % or more of the words
(real Italian prose has next to no "the", "with", "your"; an English menu has plenty), the text is mixed and
says nothing. The likeliest language is kept as a hint, sure or not, for a folder's pages to vote with
(rag_assets.ingest.languages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.vocabulary.languages import ISO_639_1, primary

MIN_LETTERS = 200
MIN_PROBABILITY = 0.9
MIN_HINT_LETTERS = 20
# a text in which another language's function words make up this share of the words is mixed
MIXED_SHARE = 0.03
# what of a page's prose the text is identified from: plenty for py3langid (it costs ~2 ms per 1,000
# characters in pure Python, paid when a page is read)
PROSE_CHARS = 1200
_NOT_LETTERS = re.compile(r"[\W\d_]+")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_FENCE = re.compile(r"^ {0,3}(```|~~~)[\s\S]*?^ {0,3}\1", re.MULTILINE)
_NOISE = re.compile(r"`[^`\n]*`|<[^>\n]*>|\{[^}\n]*\}|https?://\S+|\]\([^)]*\)|^\s*(import|export)\s.*$", re.MULTILINE)

# Words that carry a language's grammar and are (nearly) never words of the six others: articles,
# pronouns, auxiliaries, conjunctions. Not "a", "in", "con", "di", "alla", "la", "de": shared, or what
# dish names and place names are made of.
FUNCTION_WORDS = {
    "en": "the and this that with you your are from have has which when what they their these there would "
          "should been into than about only each were can does how",
    "es": "el los las pero también cuando muy hay puede usted ustedes esto estos sus cómo qué tiene aquí "
          "mediante",
    "fr": "les des est une pour dans avec vous votre sont cette aux nous peut être sur pas ces leur sera fait",
    "de": "der das und ist nicht mit sie ein eine den dem auf für sich auch werden wird oder kann wenn "
          "sind zum zur",
    "it": "della che sono questo questa anche nel degli delle gli è essere hanno più perché quando sulla "
          "nella dei può viene",
    "pt": "não você são também pelo pela seu sua ao isso essa uma às foi já muito pode",
    "nl": "het een van zijn niet voor met op dat ook maar worden wordt deze bij naar kunt uw wij",
}
_WORDS = {code: frozenset(words.split()) for code, words in FUNCTION_WORDS.items()}

_IDENTIFIER = None


def _identifier():
    global _IDENTIFIER
    if _IDENTIFIER is None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _IDENTIFIER


@dataclass(frozen=True)
class TextLanguage:
    sure: str = ""  # the text's language when py3langid is sure and the text is not mixed
    hint: str = ""  # the likeliest language, sure or not ("" under MIN_HINT_LETTERS letters or mixed)
    letters: int = 0


def prose(body: str, limit: int = PROSE_CHARS) -> str:
    """The prose of a markdown body: code, tags, links and URLs removed."""
    text = _NOISE.sub(" ", _FENCE.sub(" ", body[: limit * 4]))
    return text[:limit]


def function_word_shares(text: str) -> dict[str, float]:
    """Each table language's function words as a share of the text's words."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return {}
    return {code: sum(w in table for w in words) / len(words) for code, table in _WORDS.items()}


def read(body: str) -> TextLanguage:
    """What a page's text says of its language."""
    text = prose(body)
    letters = len(_NOT_LETTERS.sub("", text))
    if letters < MIN_HINT_LETTERS:
        return TextLanguage(letters=letters)
    code, probability = _identifier().classify(text)
    if code not in ISO_639_1:
        return TextLanguage(letters=letters)
    shares = function_word_shares(text)
    if any(share >= MIXED_SHARE for other, share in shares.items() if other != primary(code)):
        return TextLanguage(letters=letters)  # mixed: its own grammar says another language is there too
    sure = code if letters >= MIN_LETTERS and probability >= MIN_PROBABILITY else ""
    return TextLanguage(sure, code, letters)


def detect(body: str) -> str:
    """The language of a page's text when it can tell, else ""."""
    return read(body).sure
