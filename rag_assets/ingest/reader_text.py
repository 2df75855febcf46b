"""The text a reader of the rendered page reads, block by block, once rag_assets.ingest.markdown has found
the structure (so nothing done here can make a line a heading, a list or a table that was not one).

Every generator renders these the same way, so every page gets them (the split stage):

- HTML character references (``&lt;``, ``&amp;``, ``&#x27;``, ``&nbsp;``) read as the characters they
  stand for, and a markdown backslash escape (``\\*``, ``\\_``, ``\\<``) as the character escaped, in
  prose, headings, tables and admonitions; never inside a code span, fenced or indented code, where
  they are literal (CommonMark; MDX, Python-Markdown and goldmark agree). A no-break space reads as a
  space, a zero-width one as nothing. In a table, an escaped or encoded ``|`` stays ``\\|`` (a cell's
  text, not a column).
- A heading's attribute block (``{ #anchor }``, ``{: .class}``) is not seen: it goes from the heading;
  so does an attribute list attached to an element or on a line of its own (``[Go](#){ .md-button }``,
  ``{ .annotate }``: Python-Markdown's attr_list, kramdown), never ``{item_id}``.
- A markdown image (``![alt](src)``, ``![alt][ref]``) is a picture: its alt text is read only when
  it fails to load, so it is not text (a figure's caption is: it stays). A paragraph that only held
  pictures goes.
- An admonition reads as its title, then its body: the opening marker becomes the title the site
  shows, its custom one (``:::note[My title]``, ``:::tip My title``, ``!!! note "My title"``,
  ``/// note | My title``) or else its type (``Note``); ``!!! note ""`` shows none. Closing markers
  (``:::``, ``///``) go, and the body of an indented one (``!!!``, ``???``, ``=== "Tab"``) loses the
  four columns of its marker. A GitHub alert (``> [!NOTE]``) reads ``> Note``. The block keeps its
  ``label`` (the type), so nothing is lost for the chunker.

Emoji shortcodes depend on the generator: `emojize` (the parse stage, which knows the site) turns
``:tada:`` into 🎉 where the site renders them: GitHub-style (the `emoji` package's aliases) on
VitePress, on MkDocs with ``pymdownx.emoji`` (whose ``:material-…:`` / ``:octicons-…:`` icons are
pictures: they go), on Hugo with ``enableEmoji``, on Docusaurus with ``remark-emoji`` named in its
configuration, and on a folder no generator claims (read on GitHub); never inside code.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import replace

from markdown_it import MarkdownIt

# the admonition markers rag_assets.ingest.markdown finds blocks by: here, their titles are read
from rag_assets.ingest.markdown import (
    _ADMONITION_CLOSE, _ADMONITION_OPEN, _ALERT_OPEN, _BLOCKS_CLOSE, _BLOCKS_OPEN, _MKDOCS_OPEN, _TAB_OPEN)
from rag_assets.ingest.mdx_esm import fence_step
from rag_assets.ingest.mdx_lexer import CodeSpans
from rag_assets.models import Block, BlockType
from rag_assets.vocabulary.markup import _ITEM, strip_heading_attributes

# Markdown images (inline, reference, shortcut reference) and an attribute list attached to one: a
# picture, its alt text only read when it fails to load
_IMAGE = re.compile(r"!\[(?:[^\[\]\n]|\[[^\]\n]*\])*\](?:\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
                    r"|\[[^\]\n]*\])?(?:\{[^{}\n]*\})?")
# an attribute list (Python-Markdown attr_list, kramdown): attached to what precedes it, or a line of its own
_ATTRIBUTE_LIST = re.compile(r"(?:(?<=[^\s{])|^[ \t]*)\{:?[ \t]*" + _ITEM + r"(?:[ \t]+" + _ITEM + r")*[ \t]*\}(?=[ \t]*$|[^}])",
                             re.MULTILINE)
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE = re.compile(r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
_BACKTICKS = re.compile(r"`+")
_BLANK_EDGES = re.compile(r"^(?:[ \t]*\n)+|(?:\n[ \t]*)+$")
_MAY_CHANGE = re.compile(r"[&\\\u00a0\u200b{]|!\[")  # a cheap look first: most text has none of these
_INVISIBLE = {"\u200b": "", "\u200c": "", "\u200d": "", "\ufeff": "", "\u00a0": " ", "\u202f": " "}
_ATTRIBUTES = re.compile(r"\{[^{}]*\}\s*$")
# `:::` types that are admonitions (Docusaurus, Starlight, VitePress): another type is a container
# whose name no reader sees (VitePress' ``::: code-group``)
_DIRECTIVE_TYPES = frozenset({"note", "tip", "info", "warning", "danger", "caution", "important", "success",
                              "secondary", "details"})
# pymdownx blocks that show no title of their own unless given one
_UNTITLED_BLOCKS = frozenset({"tab", "html", "define", "caption", "figure-caption", "table-caption"})


def readable_blocks(blocks: list[Block]) -> list[Block]:
    """The blocks as a reader of the page reads them (the module docstring); code blocks unchanged."""
    out = []
    for block in blocks:
        if block.type is BlockType.CODE:
            out.append(block)
            continue
        text = block.text
        if block.type is BlockType.HEADING:
            text = strip_heading_attributes(_readable(text))
        elif block.type is BlockType.ADMONITION:
            text = _readable_lines(_titled(text), table=False)
        else:
            text = _readable_lines(text, table=block.type is BlockType.TABLE)
        if text == block.text:
            out.append(block)
        elif text.strip():  # a paragraph that only held a picture reads as nothing
            out.append(replace(block, text=_BLANK_EDGES.sub("", text)))
    return out


def _readable_lines(text: str, table: bool) -> str:
    """Entities, escapes, images and attribute lists read, outside fenced and indented code."""
    if not _MAY_CHANGE.search(text):
        return text
    lines = text.split("\n")
    code = _code_lines(lines)
    out: list[str] = []
    run: list[str] = []  # consecutive lines of text: code spans may run across them

    def flush() -> None:
        if run:
            out.extend(_readable("\n".join(run), table).split("\n"))
            run.clear()

    for i, line in enumerate(lines):
        if i in code:
            flush()
            out.append(line)
        else:
            run.append(line)
    flush()
    return "\n".join(out)


def _code_lines(lines: list[str]) -> set[int]:
    """Lines of fenced or indented code in a block's text."""
    found: set[int] = set()
    fence = None
    for i, line in enumerate(lines):
        fence, is_code = fence_step(fence, line)
        if is_code:
            found.add(i)
    if any(line.startswith(("    ", "\t")) for line in lines):
        for token in _block_parser().parse("\n".join(lines)):
            if token.type == "code_block" and token.map:
                found.update(range(*token.map))
    return found


@functools.lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    return MarkdownIt("commonmark").disable("inline")


def _readable(text: str, table: bool = False) -> str:
    """Entities, escapes, images and attribute lists of inline text read, outside its code spans."""
    if not _MAY_CHANGE.search(text):
        return text
    return _outside_code_spans(text, lambda part: _decoded(part, table))


def _decoded(text: str, table: bool) -> str:
    if "![" in text:
        text = _IMAGE.sub("", text)
    if "{" in text:
        text = _ATTRIBUTE_LIST.sub("", text)
    def entity(m: re.Match) -> str:
        char = html.unescape(m.group(0))
        if char == m.group(0):
            return char  # not a character reference html knows: literal text
        char = "".join(_INVISIBLE.get(c, c) for c in char)
        return "\\|" if table and char == "|" else char

    def escape(m: re.Match) -> str:
        return m.group(0) if table and m.group(1) == "|" else m.group(1)

    if "\\" in text:
        text = _ESCAPE.sub(escape, text)
    if "&" in text:
        text = _ENTITY.sub(entity, text)
    if "\u00a0" in text or "\u200b" in text:
        text = "".join(_INVISIBLE.get(c, c) for c in text)
    return text


# ---------------------------------------------------------------------------------------------
# Admonitions


def _titled(text: str) -> str:
    """An admonition block's markers read as the titles the site shows (the module docstring)."""
    lines = text.split("\n")
    out: list[str] = []
    indented: list[int] = []  # marker columns of the open !!!/???/=== blocks, innermost last
    fence = None
    for line in lines:
        if line.strip() and indented:
            while indented and _width(line) < indented[-1] + 4:
                indented.pop()
        shift = 4 * len(indented)
        fence, is_code = fence_step(fence, line)
        body = _dedent(line, shift)
        if is_code:
            out.append(body)
            continue
        if m := _MKDOCS_OPEN.match(line):
            title = m["title"] if m["title"] is not None else m["label"].capitalize()
            indented.append(_width(m["indent"]))
        elif m := _TAB_OPEN.match(line):
            title = m["title"]
            indented.append(_width(m["indent"]))
        elif m := _ADMONITION_OPEN.match(line):
            title = _directive_title(m["label"], m["rest"])
        elif m := _BLOCKS_OPEN.match(line):
            label = m["label"].lower()
            title = m["title"].strip() if m["title"] and m["title"].strip() else (
                "" if label in _UNTITLED_BLOCKS else m["label"].capitalize())
        elif _ADMONITION_CLOSE.match(line) or _BLOCKS_CLOSE.match(line):
            continue
        elif m := _ALERT_OPEN.match(line):
            out.append(f"{m['lead']}{m['label'].capitalize()}" + (f" {line[m.end():]}" if line[m.end():].strip() else ""))
            continue
        else:
            out.append(body)
            continue
        if title:
            out.append(_dedent(m["indent"], shift) + title.strip())
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def _directive_title(label: str, rest: str) -> str:
    """The title of ``:::label[Title]{attrs}`` / ``:::label Title {attrs}``: the custom one, else the
    type for an admonition type, else none."""
    rest = rest.strip()
    if rest.startswith("["):
        depth = 0
        for i, c in enumerate(rest):
            depth += (c == "[") - (c == "]")
            if depth == 0:
                return rest[1:i].strip() or _default_title(label)
    custom = _ATTRIBUTES.sub("", rest).strip()
    return custom or _default_title(label)


def _default_title(label: str) -> str:
    return label.capitalize() if label.lower() in _DIRECTIVE_TYPES else ""


def _width(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip(" "))


def _dedent(line: str, columns: int) -> str:
    if not columns:
        return line
    expanded = line.expandtabs(4)
    return expanded[min(columns, _width(expanded)):]


# ---------------------------------------------------------------------------------------------
# Emoji (the parse stage: it depends on the site's generator)

GITHUB = "github"  # shortcodes become emoji
MATERIAL = "material"  # ... and Material for MkDocs' icon shortcodes, pictures, go
_SHORTCODE = re.compile(r"(?<![\w:]):([a-z0-9_+\-]{1,60}):(?![\w:])")
# Material for MkDocs' icons, and the attribute list that styles one (``:octicons-heart-16:{ .heart }``)
_ICON = re.compile(r"(?<![\w:]):(?:material|fontawesome|octicons|simple)-[a-z0-9-]+:(?:\{[^{}\n]*\})?")


def emojize(body: str, style: str | None) -> str:
    """``:tada:`` shortcodes as the emoji the site renders (`style`: GITHUB, MATERIAL, or None: as
    written), outside fenced code and code spans."""
    if not style or ":" not in body:
        return body
    import emoji  # imported when a page has something to convert

    def one(m: re.Match) -> str:
        return emoji.emojize(m.group(0), language="alias")

    def convert(text: str) -> str:
        if ":" not in text:
            return text
        if style == MATERIAL:
            text = _ICON.sub("", text)
        return _SHORTCODE.sub(one, text)

    lines = body.split("\n")
    out, run, fence = [], [], None
    for line in lines:
        fence, is_code = fence_step(fence, line)
        if is_code:
            if run:
                out.extend(_outside_code_spans("\n".join(run), convert).split("\n"))
                run = []
            out.append(line)
        else:
            run.append(line)
    if run:
        out.extend(_outside_code_spans("\n".join(run), convert).split("\n"))
    return "\n".join(out)


def _outside_code_spans(text: str, convert) -> str:
    """`convert` applied to the text between the code spans of `text` (a paragraph or a run of lines)."""
    if "`" not in text:
        return convert(text)
    spans = CodeSpans(text)
    out, pos, skip_to = [], 0, 0
    for m in _BACKTICKS.finditer(text):
        if m.start() < skip_to:
            continue
        end = spans.closer_end.get(m.start())
        if end is None or (m.start() > 0 and text[m.start() - 1] == "\\"):
            continue  # literal backticks
        out.append(convert(text[pos:m.start()]))
        out.append(text[m.start():end])
        pos = skip_to = end
    out.append(convert(text[pos:]))
    return "".join(out)
