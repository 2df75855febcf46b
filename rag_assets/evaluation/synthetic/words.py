"""Words and sentences of markdown prose as the generator sees them: plain text, content words, stopwords
and imperatives, sentence splitting."""

from __future__ import annotations

import re

from rag_assets.vocabulary.markup import drop_include_directives


STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can cannot could did do does doing done down during each either else etc even ever every few for from
further had has have having he her here hers herself him himself his how however i if in into is it its itself
just least less let like may me might more most much must my myself neither no nor not now of off often on once
one only onto or other otherwise our ours ourselves out over own per rather same shall she should since so some
such than that the their theirs them themselves then there therefore these they this those though through thus
to too under until up upon us use used uses using very via was we well were what whatever when where whether
which while who whom whose why will with within without would yet you your yours yourself yourselves e.g i.e
""".split())
# common words of technical writing and a plain alternative a user might type instead
SYNONYMS: dict[str, str] = {
    "create": "make", "creates": "makes", "creating": "making", "created": "made",
    "remove": "delete", "removes": "deletes", "removing": "deleting", "removed": "deleted",
    "delete": "remove", "deletes": "removes", "deleting": "removing", "deleted": "removed",
    "configure": "set up", "configuring": "setting up", "configured": "set up", "configuration": "setup",
    "settings": "options", "setting": "option", "option": "setting", "options": "settings",
    "parameter": "argument", "parameters": "arguments", "argument": "parameter", "arguments": "parameters",
    "return": "give back", "returns": "gives back", "returned": "given back",
    "receive": "get", "receives": "gets", "receiving": "getting", "received": "got",
    "obtain": "get", "retrieve": "fetch", "retrieves": "fetches", "retrieving": "fetching",
    "specify": "set", "specifies": "sets", "specified": "given", "specifying": "setting",
    "provide": "give", "provides": "gives", "provided": "given", "providing": "giving",
    "require": "need", "requires": "needs", "required": "needed", "requirement": "need",
    "allow": "let", "allows": "lets", "allowed": "permitted", "enable": "turn on", "enables": "turns on",
    "disable": "turn off", "disables": "turns off", "enabled": "turned on", "disabled": "turned off",
    "error": "failure", "errors": "failures", "fail": "break", "fails": "breaks", "failed": "broken",
    "issue": "problem", "issues": "problems", "problem": "issue", "problems": "issues",
    "install": "set up", "installed": "set up", "installation": "setup",
    "modify": "change", "modifies": "changes", "update": "change", "updates": "changes", "updated": "changed",
    "change": "modify", "changes": "modifies", "changed": "modified",
    "display": "show", "displays": "shows", "displayed": "shown", "show": "display", "shows": "displays",
    "start": "begin", "starts": "begins", "begin": "start", "stop": "halt", "stops": "halts",
    "large": "big", "small": "little", "big": "large", "quickly": "fast", "fast": "quick",
    "method": "way", "methods": "ways", "approach": "way", "technique": "method", "techniques": "methods",
    "example": "sample", "examples": "samples", "instance": "example",
    "important": "key", "key": "important", "main": "primary", "primary": "main",
    "multiple": "several", "several": "multiple", "many": "lots of", "various": "different",
    "different": "various", "similar": "alike", "specific": "particular", "particular": "specific",
    "information": "details", "details": "information", "data": "information",
    "response": "reply", "responses": "replies", "reply": "response", "request": "call", "requests": "calls",
    "send": "submit", "sends": "submits", "sent": "submitted", "submit": "send",
    "check": "verify", "checks": "verifies", "verify": "check", "validate": "check", "validation": "checking",
    "build": "construct", "builds": "constructs", "built": "constructed",
    "write": "author", "writes": "authors", "written": "authored", "read": "load", "reads": "loads",
    "run": "execute", "runs": "executes", "running": "executing", "execute": "run", "executes": "runs",
    "improve": "boost", "improves": "boosts", "improved": "better", "increase": "raise", "increases": "raises",
    "reduce": "lower", "reduces": "lowers", "reduced": "lower", "decrease": "reduce",
    "limit": "cap", "limits": "caps", "maximum": "max", "minimum": "min",
    "support": "handle", "supports": "handles", "supported": "handled", "handle": "deal with",
    "help": "assist", "helps": "assists", "ensure": "make sure", "ensures": "makes sure",
    "define": "declare", "defines": "declares", "defined": "declared", "declare": "define",
    "contain": "include", "contains": "includes", "containing": "including", "include": "contain",
    "includes": "contains", "including": "containing",
    "describe": "explain", "describes": "explains", "explain": "describe",
    "generate": "produce", "generates": "produces", "generated": "produced", "produce": "generate",
    "select": "choose", "selects": "chooses", "choose": "pick", "selected": "chosen",
    "user": "person", "users": "people", "customer": "client", "customers": "clients",
    "document": "file", "documents": "files", "file": "document", "files": "documents",
    "function": "routine", "functions": "routines", "result": "outcome", "results": "outcomes",
    "output": "result", "outputs": "results", "input": "entry", "inputs": "entries",
    "model": "system", "models": "systems", "task": "job", "tasks": "jobs",
    "patients": "people", "patient": "person", "disease": "illness", "infection": "illness",
    "infections": "illnesses", "virus": "pathogen", "viruses": "pathogens", "study": "research",
    "studies": "research", "reported": "described", "observed": "seen", "identified": "found",
    "significant": "notable", "associated": "linked", "levels": "amounts", "rate": "ratio",
    "robot": "machine", "robots": "machines", "sensor": "detector", "sensors": "detectors",
    "simulation": "sim", "environment": "setting", "movement": "motion", "control": "steering",
}
IMPERATIVES = frozenset("""
access add adjust allow analyze ask be break chain give leverage let prefill apply authenticate avoid build call cancel change check choose clean compare
compute configure connect control convert copy count create customize debug declare define delete deploy
design detect disable display download edit embed enable evaluate export extend extract fetch filter find fix
format generate get handle implement import improve include initialize install integrate interpret invoke
keep launch limit list load log manage map measure migrate mitigate monitor move optimize organize override
parse pass pick plan prepare prevent process protect provide publish query read receive reduce refresh
register reload remove rename render replace request reset restart retrieve return reuse run save scale
search secure select send serve set setup share show simulate specify split start stop store stream structure
submit switch test track train transform translate troubleshoot tune turn understand update upgrade upload
use validate verify view visualize wait work write
""".split())
GENERIC_HEADINGS = frozenset("""
overview introduction intro example examples usage parameters parameter arguments options notes note summary
recap conclusion conclusions background details reference references setup requirements prerequisites
limitations troubleshooting faq next steps key concepts concepts description returns response request
results discussion methods method getting started basics advanced tips best practices more info
""".split())
_WORD = re.compile(r"[A-Za-z0-9][\w'’.\-/+#]*[\w+#]|[A-Za-z0-9]")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>\n]{1,200}>")
_URL = re.compile(r"https?://\S+")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE)
_ADMONITION_MARK = re.compile(r"^\s*(?:!!!|\?\?\?\+?|:::+|///|>\s*\[!\w+\]|>)\s*\S*.*$|^\s*(?::::+|///)\s*$", re.MULTILINE)
_NUMBERING = re.compile(r"^(?:step\s+)?\d+(?:\.\d+)*[.:)]?\s+", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_BOILERPLATE = re.compile(r"\bdoi\b|\b10\.\d{4,}/|copyright|©|licen[cs]e|creative commons|preprint|et al\.,", re.IGNORECASE)
_PIVOTS = ("is", "are", "was", "were", "include", "includes", "included", "including", "such as", "called",
           "known as", "by", "about", "approximately", "than", "of")


def words_of(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    return [w for w in words_of(text) if w.casefold() not in STOPWORDS and any(c.isalpha() for c in w)]


def plain_text(markdown: str) -> str:
    """Prose of a markdown block as a reader sees it: links to their text, no tags, URLs, list marks,
    admonition markers or emphasis markers."""
    text = drop_include_directives(markdown)
    text = _ADMONITION_MARK.sub(lambda m: _admonition_rest(m.group(0)), text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    text = _URL.sub(" ", text)
    text = _LIST_MARK.sub("", text)
    text = text.replace("**", "").replace("__", "").replace("`", "")
    return " ".join(text.split())


def _admonition_rest(line: str) -> str:
    # "!!! note "Title"" / ":::tip" / "> [!NOTE]": the marker goes; "> text" keeps its text
    stripped = line.strip()
    if stripped.startswith(">") and not re.match(r">\s*\[!\w+\]", stripped):
        return stripped.lstrip("> ")
    return ""


def _prose_like(text: str) -> bool:
    """Running prose, not a list of names, references or metadata: function words make up a fair share
    of it, and it has no DOI or licence boilerplate."""
    words = words_of(text)
    if not words:
        return False
    function = sum(1 for w in words if w.casefold() in STOPWORDS)
    return function / len(words) >= 0.2 and not _BOILERPLATE.search(text)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
