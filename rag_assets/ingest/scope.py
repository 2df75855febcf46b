"""A corpus's scope: which of the pages found are indexed, and why the others are left out.

Two steps. The walk (rag_assets.ingest.discovery) asks the path rules (rag_assets.ingest.site_rules:
ignore files, the generator's rules, RAG_INCLUDE / RAG_EXCLUDE) and never reads a file they leave out.
Then, over the pages read, `apply` leaves out those whose frontmatter says so (``draft``, ``noindex``,
``hidden``: RAG_SKIP_FRONTMATTER_KEYS) and the translations (pages whose language is not the
corpus's default, rag_assets.ingest.languages) unless RAG_LANGUAGES asks for them, and gives every
page kept its language. Documents ingested from code are never left out.

What a page says of itself is read when it is fingerprinted (`facts_of`, from the first MiB that
discovery reads anyway) and kept in the catalog beside its hash, so a page whose stats did not move is
not read again to decide its scope: ``v1|lang=es|text=es|flags=draft,noindex``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Sequence

from rag_assets.ingest import languages
from rag_assets.models import DocumentRef
from rag_assets.vocabulary.languages import ALL_LANGUAGES, DEFAULT_LANGUAGE, parse_languages, split_list  # noqa: F401

FACTS_VERSION = "v1"
DEFAULT_SKIP_KEYS = ("draft", "noindex", "hidden")
TRANSLATION = "translation"
# frontmatter keys whose truth a page's facts record (a setting may name any of them)
_MAX_FLAGS = 20


@dataclass(frozen=True)
class ScopeSettings:
    """The scope settings of a corpus (from the settings' ingest group, rag_assets.config.IngestSettings,
    resolved once at the edge)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    ignore_files: bool = True  # read .gitignore/.mintignore/.ragignore and apply the generator's rules
    skip_keys: tuple[str, ...] = DEFAULT_SKIP_KEYS
    languages: tuple[str, ...] = (DEFAULT_LANGUAGE,)  # ("default",) | ("all",) | codes
    default_language: str = ""  # "" = the generator's, else the most common
    keep: tuple[str, ...] = ()  # folders never left out (documents ingested from code)

    @classmethod
    def from_settings(cls, ingest) -> "ScopeSettings":
        return cls(
            include=split_list(ingest.include, ";"),
            exclude=split_list(ingest.exclude, ";"),
            ignore_files=ingest.ignore_files,
            skip_keys=tuple(k.lower() for k in split_list(ingest.skip_frontmatter_keys, ",")),
            languages=parse_languages(ingest.languages),
            default_language=languages.normalise(ingest.default_language) if ingest.default_language else "",
            keep=(ingest.code_documents_folder,) if ingest.code_documents_folder else (),
        )

    @property
    def all_languages(self) -> bool:
        return ALL_LANGUAGES in self.languages

    def keeps(self, doc_path: str) -> bool:
        return any(doc_path == k or doc_path.startswith(k.rstrip("/") + "/") for k in self.keep)


# ----------------------------------------------------------------------------------------------
# what a page says of itself


@dataclass(frozen=True)
class PageFacts:
    declared: str = ""  # the frontmatter's lang / locale / language
    detected: str = ""  # the text's, when py3langid is sure
    flags: tuple[str, ...] = ()  # frontmatter keys that are true (lower case); "noindex" also from robots

    def format(self) -> str:
        return f"{FACTS_VERSION}|lang={self.declared}|text={self.detected}|flags={','.join(self.flags)}"

    @classmethod
    def parse(cls, raw: str) -> "PageFacts":
        parts = dict(p.split("=", 1) for p in (raw or "").split("|")[1:] if "=" in p)
        return cls(parts.get("lang", ""), parts.get("text", ""), tuple(f for f in parts.get("flags", "").split(",") if f))


_TRUE = {"true", "yes", "on", "1"}


def facts_of(head: str) -> PageFacts:
    """The facts of a page from its start (the frontmatter and the first KB of its text)."""
    from rag_assets.errors import DocumentError
    from rag_assets.ingest import frontmatter

    try:
        header, body, _ = frontmatter._split_header(head.replace("\r\n", "\n"), "")  # noqa: SLF001 - one parser
        meta = frontmatter._load_yaml(header, "") if header is not None else {}  # noqa: SLF001
    except DocumentError:  # the parse stage reports it by name; nothing is decided from it here
        header, body, meta = None, head, {}
    flags = []
    for key, value in meta.items():
        if len(flags) >= _MAX_FLAGS:
            break
        if value is True or (isinstance(value, str) and value.strip().lower() in _TRUE):
            flags.append(str(key).lower())
    robots = meta.get("robots")
    if isinstance(robots, str) and "noindex" in robots.lower() and "noindex" not in flags:
        flags.append("noindex")
    declared = ""
    for key in ("lang", "locale", "language"):
        declared = languages.normalise(meta.get(key))
        if declared:
            break
    return PageFacts(declared, languages.detect(body), tuple(sorted(set(flags))))


# ----------------------------------------------------------------------------------------------
# the decision over the pages read


@dataclass
class Scoped:
    documents: list[DocumentRef]  # in scope, each with its language
    left_out: dict[str, str] = field(default_factory=dict)  # doc path -> reason (content decisions)
    # doc path -> its language, for the pages left out as translations (what `rag corpora --left-out` shows)
    left_out_languages: dict[str, str] = field(default_factory=dict)
    default_language: str = ""
    languages: Counter = field(default_factory=Counter)  # pages found per language (before the language rule)


def apply(refs: Sequence[DocumentRef], layout: languages.Layout, scope: ScopeSettings) -> Scoped:
    """Leave out the pages whose frontmatter or language puts them out of scope; give the others their language."""
    facts = {r.doc_path: PageFacts.parse(r.facts) for r in refs}
    default = scope.default_language or layout.declared_default or _majority(refs, facts, layout)
    out = Scoped([], default_language=default or languages.UNDETERMINED)
    skip = set(scope.skip_keys)
    wanted = set() if scope.all_languages else (
        {out.default_language} if scope.languages == (DEFAULT_LANGUAGE,) else set(scope.languages))
    wanted.discard(languages.UNDETERMINED)  # nothing is known of the corpus's language: nothing to leave out
    for ref in refs:
        fact = facts[ref.doc_path]
        # where the layout has locale folders, a page outside them is of the default language
        language = (layout.language_of(ref.doc_path) or fact.declared
                    or (out.default_language if layout.languages else fact.detected) or out.default_language)
        out.languages[language] += 1
        if ref.language != language:
            ref = replace(ref, language=language)
        if scope.keeps(ref.doc_path):
            out.documents.append(ref)
            continue
        flagged = next((f for f in scope.skip_keys if f in fact.flags), None) if skip else None
        if flagged:
            out.left_out[ref.doc_path] = flagged
        elif wanted and language != languages.UNDETERMINED and not any(languages.same_language(language, w) for w in wanted):
            out.left_out[ref.doc_path] = TRANSLATION
            out.left_out_languages[ref.doc_path] = language
        else:
            out.documents.append(ref)
    return out


def _majority(refs: Sequence[DocumentRef], facts: dict[str, PageFacts], layout: languages.Layout) -> str:
    """The most common language of the pages outside locale folders, else of all pages."""
    outside = Counter(f.declared or f.detected for p, f in facts.items()
                      if not layout.language_of(p) and (f.declared or f.detected))
    if outside:
        return languages.choose_default(outside)
    everything = Counter(layout.language_of(r.doc_path) or facts[r.doc_path].declared or facts[r.doc_path].detected
                         for r in refs)
    everything.pop("", None)
    return languages.choose_default(everything)


def left_out_counts(left_out: dict[str, str]) -> dict[str, int]:
    """reason -> pages, largest first."""
    return dict(Counter(left_out.values()).most_common())
