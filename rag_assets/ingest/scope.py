"""A corpus's scope: which of the pages found are indexed, and why the others are left out.

Two steps. The walk (rag_assets.ingest.discovery) asks the path rules (rag_assets.ingest.site_rules:
ignore files, the generator's rules, RAG_INCLUDE / RAG_EXCLUDE) and never reads a file they leave out.
Then, over the pages read, `apply` leaves out those whose frontmatter says so: the keys of
RAG_SKIP_FRONTMATTER_KEYS set true (``draft``, ``noindex``, ``hidden``), then what the page's generator
does not publish or its site's search leaves out (``unlisted``, ``pagefind: false``, Hugo's
``build``/``headless``/dates: rag_assets.ingest.page_facts, with the generator's rules, RAG_IGNORE_FILES);
and the translations (pages whose language is not the corpus's default, rag_assets.ingest.languages)
unless RAG_LANGUAGES asks for them; it gives every page kept its language. Documents ingested from code
are never left out.

What a page says of itself is read when it is fingerprinted (rag_assets.ingest.page_facts, from the first
MiB that discovery reads anyway) and kept in the catalog beside its hash, so a page whose stats did not
move is not read again to decide its scope.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Sequence

from rag_assets.ingest import languages, page_facts
from rag_assets.ingest.page_facts import PageFacts, facts_of  # noqa: F401 - discovery reads them from here
from rag_assets.ingest.versions import parse_versions
from rag_assets.models import FACTS_VERSION, DocumentRef  # noqa: F401
from rag_assets.vocabulary.languages import ALL_LANGUAGES, DEFAULT_LANGUAGE, parse_languages, split_list  # noqa: F401

DEFAULT_SKIP_KEYS = ("draft", "noindex", "hidden")
TRANSLATION = "translation"
# translations left out are named in the summary up to this many (counted beyond)
NAMED_TRANSLATIONS = 10


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
    versions: tuple[str, ...] = ("current",)  # a versioned site's versions indexed (rag_assets.ingest.versions)

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
            versions=parse_versions(ingest.versions),
        )

    @property
    def all_languages(self) -> bool:
        return ALL_LANGUAGES in self.languages

    def keeps(self, doc_path: str) -> bool:
        return any(doc_path == k or doc_path.startswith(k.rstrip("/") + "/") for k in self.keep)


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
    languages_from: str = ""  # where the languages came from, for the summary


def apply(refs: Sequence[DocumentRef], layout: languages.Layout, scope: ScopeSettings,
          now: dt.datetime | None = None) -> Scoped:
    """Leave out the pages whose frontmatter or language puts them out of scope; give the others their language."""
    facts = {r.doc_path: PageFacts.parse(r.facts) for r in refs}
    default = scope.default_language or layout.declared_default or _majority(refs, facts, layout)
    out = Scoped([], default_language=default or languages.UNDETERMINED)
    out.languages_from = _languages_from(layout, scope, out.default_language)
    skip = set(scope.skip_keys)
    wanted = set() if scope.all_languages else (
        {out.default_language} if scope.languages == (DEFAULT_LANGUAGE,) else set(scope.languages))
    wanted.discard(languages.UNDETERMINED)  # nothing is known of the corpus's language: nothing to leave out
    for ref in refs:
        fact = facts[ref.doc_path]
        named = fact.named if fact.named and layout.lists(fact.named) else ""
        # where a configuration declares the languages or the layout has locale folders, a page outside
        # them is of the default language: its text does not decide
        language = (layout.language_of(ref.doc_path) or fact.declared or named
                    or (out.default_language if layout.fixes_default else fact.detected) or out.default_language)
        out.languages[language] += 1
        if ref.language != language:
            ref = replace(ref, language=language)
        if scope.keeps(ref.doc_path):
            out.documents.append(ref)
            continue
        reason = next((f for f in scope.skip_keys if f in fact.flags), None) if skip else None
        if reason is None and scope.ignore_files:  # the generator's rules
            site = layout.site_of(ref.doc_path)
            reason = page_facts.exclusion(fact, site.generator if site else "", now, site.templates if site else None)
        if reason:
            out.left_out[ref.doc_path] = reason
        elif wanted and language != languages.UNDETERMINED and not any(languages.same_language(language, w) for w in wanted):
            out.left_out[ref.doc_path] = TRANSLATION
            out.left_out_languages[ref.doc_path] = language
        else:
            out.documents.append(ref)
    return out


def _languages_from(layout: languages.Layout, scope: ScopeSettings, default: str) -> str:
    if scope.default_language:
        return f"RAG_DEFAULT_LANGUAGE ({default})" + (f"; {layout.how}" if layout.how else "")
    if layout.declared_default:
        return layout.how
    if default == languages.UNDETERMINED:
        return "nothing: no configuration declares them and no page's text is sure"
    return f"the pages' text (default {default})" + (f"; {layout.how}" if layout.how else "")


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


def named_translations(left_out: dict[str, str], at_most: int = NAMED_TRANSLATIONS) -> list[str]:
    """The pages left out as translations, when there are at most `at_most` of them (else none: counted)."""
    pages = sorted(p for p, reason in left_out.items() if reason == TRANSLATION)
    return pages if len(pages) <= at_most else []
