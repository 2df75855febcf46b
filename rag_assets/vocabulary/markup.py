"""Markup that is not prose: heading attributes and include directives.

Documentation generators add syntax that a reader never sees but a retriever would index:

- heading attributes, a trailing ``{ #id }`` / ``{#id}`` (MkDocs, Docusaurus) or ``{: #id .class }``
  (kramdown / Pandoc, also ``{#id .class key=value}``): an anchor slug repeats the heading's words
  (``use-staticfiles``) and adds tokens no question contains. They are stripped from section names,
  breadcrumbs and the indexed text.
- include directives, lines such as ``{* ../../docs_src/x.py hl[3] *}`` (FastAPI's MkDocs macro) or
  ``{! ../../docs_src/x.py !}`` (markdown-include): a path to code that is not in the corpus. They are
  dropped from the indexed text and kept in the stored chunk (a reader may want to follow them).

Only a brace group made of ``#id`` / ``.class`` / ``key=value`` items counts as attributes, so
``Path parameters {item_id}`` keeps its ``{item_id}``.
"""

from __future__ import annotations

import re

_ITEM = r"""(?:[#.][\w:.\-]+|[\w\-]+=(?:"[^"]*"|'[^']*'|[^\s}]+))"""
# a trailing attribute block: optional ':' after the brace, one or more items, nothing after it
_HEADING_ATTRIBUTES = re.compile(r"\s*\{:?\s*" + _ITEM + r"(?:\s+" + _ITEM + r")*\s*\}\s*$")
_INCLUDE_DIRECTIVE = re.compile(r"^[ \t]*(?:\{\*.*\*\}|\{!.*!\})[ \t]*$\n?", re.MULTILINE)
_ATX_HEADING = re.compile(r"^( {0,3}#{1,6}[ \t]+)(.*?)$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


def strip_heading_attributes(heading: str) -> str:
    """``Use StaticFiles { #use-staticfiles }`` -> ``Use StaticFiles``; other text unchanged."""
    return _HEADING_ATTRIBUTES.sub("", heading).rstrip() if "{" in heading else heading


def push_heading(path: list[tuple[int, str]], level: int, heading: str) -> str:
    """Enter a heading: `path` (the (level, title) headings above the current text, top first) loses
    the headings at this level and below, and gains this one; returns its title without attributes."""
    title = strip_heading_attributes(heading)
    while path and path[-1][0] >= level:
        path.pop()
    path.append((level, title))
    return title


def may_hold_include_directive(text: str, start: int = 0, end: int | None = None) -> bool:
    """A cheap look before the regex: no `{*` or `{!` in text[start:end], no include directive there."""
    end = len(text) if end is None else end
    return text.find("{*", start, end) >= 0 or text.find("{!", start, end) >= 0


def drop_include_directives(text: str) -> str:
    """The text without include-directive lines (a directive inside a sentence is left alone)."""
    if not may_hold_include_directive(text):
        return text
    return _INCLUDE_DIRECTIVE.sub("", text)


def clean_heading_lines(text: str) -> str:
    """Heading attributes removed from every ATX heading line outside fenced code."""
    if "{" not in text:
        return text
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence = opener.group(1)[0] * len(opener.group(1))
        elif fence is not None and opener and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            heading = _ATX_HEADING.fullmatch(line)
            if heading:
                line = heading.group(1) + strip_heading_attributes(heading.group(2))
        out.append(line)
    return "\n".join(out)


def indexable_text(text: str) -> str:
    """What of a stored chunk's text is embedded and keyword-indexed (unchanged when it has no such markup)."""
    dropped = drop_include_directives(text)
    if dropped != text:  # close the gap a dropped line leaves
        dropped = _BLANK_RUN.sub("\n\n", dropped).strip()
    return clean_heading_lines(dropped)
