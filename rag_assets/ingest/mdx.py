"""MDX (and HTML in markdown) turned into the markdown a reader of the rendered page sees.

Documentation sites built with Docusaurus, Mintlify or Nextra write pages in MDX: markdown plus ESM
``import``/``export`` statements, JSX components (``<Card title="…">``, ``<Tabs>``, ``<Note>``) and
``{/* comments */}``. Indexed as text, those tags and import lines become tokens no question contains,
and a code example that lives in an imported snippet file is a bare ``<CodeSamplesX />``.

`render_mdx` is an MDX-aware pass over a page body (frontmatter already removed):

- fenced code is copied verbatim, and nothing inside an inline code span is touched;
- ESM statements at the start of a line (``import … from '…'`` over one or more lines, ``export
  const|default|function …`` up to the next blank line) are dropped; local imports of ``.md``/``.mdx``
  files bind a component name to a snippet;
- a JSX/HTML tag is lexed as a tag (name, attributes with quoted, ``{expression}`` or bare values,
  ``/>``), not matched by a pattern, so a ``>`` inside ``{…}`` or a string never ends it; the tags
  go and their children stay; what a component shows besides them (its text attributes, a tab of
  commands, a code component's code) is rag_assets.ingest.mdx_components', and so is the count of
  the components whose text comes from the site's code (`MdxRendering.unrendered`); a component
  bound to a snippet import (or Mintlify's ``<Snippet file="…"/>``) is replaced by the snippet's own
  rendered content;
- a JSX expression in the text reads as the reader sees it: a string literal as its value
  (``{' '}``, ``{"text"}``); in an ``.mdx`` page, where every ``{…}`` outside code and math is an
  expression, any other one is the site's code: left out and counted (EXPRESSION). In a plain
  markdown page braces are text;
- callout components (``<Note>``, ``<Warning>``, ``<Admonition type="tip">`` …) that stand on their
  own lines become ``:::note`` … ``:::`` admonitions, so the splitter keeps each one as a block
  labelled by its type;
- lines that sat inside a component are dedented together (a component's children are indented in
  the source; left indented they would read as indented code);
- HTML comments and ``{/* … */}`` comments are dropped.

One module, one job: the ESM statements and the fenced-code state are rag_assets.ingest.mdx_esm, the
tag lexer and code spans rag_assets.ingest.mdx_lexer, what a component shows rag_assets.ingest.mdx_components,
putting the lines back together rag_assets.ingest.mdx_layout; this module renders.

Anything that does not lex as a tag (``a < b``, ``List<T`` without an end, ``<https://…>``
autolinks) stays text. Problems a site's own build would reject (an unclosed or stray closing tag,
a snippet that cannot be read, a snippet that is not a ``.md``/``.mdx`` file) never fail the page:
the text degrades to what was there and a warning names the file. No I/O here: snippets come
through the `load_snippet` callback.

Expansion is bounded, so a page whose snippets use each other over and over (8 uses a level, 5
levels: 37,448 expansions, megabytes of text) fails at once instead of holding up the run: each
snippet is rendered once per nesting depth and its text reused at every use site; snippets nest at
most MAX_SNIPPET_DEPTH deep; a page may expand at most MAX_SNIPPET_EXPANSIONS snippet uses in all,
and its expanded text may not pass `max_bytes` (the file-size limit, RAG_MAX_FILE_BYTES). Past
either limit `render_mdx` raises SnippetLimitError, which fails the page by name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rag_assets.ingest import mdx_components
from rag_assets.ingest.mdx_components import PROSE_ATTRIBUTES, Shown
from rag_assets.ingest.mdx_esm import Import, esm_statements, fence_step, find_imports
from rag_assets.ingest.mdx_layout import MARK, assemble, without_frontmatter
from rag_assets.ingest.mdx_lexer import (
    MAX_TAG_CHARS, CodeSpanLook, CodeSpans, Tag, alone_on_line, balanced_end, js_string, lex_tag, lex_tag_within)

__all__ = ["Import", "MdxRendering", "SnippetLimitError", "find_imports", "lex_tag", "render_mdx"]

RENDER_VERSION = "mdx-v2"  # part of the parse and split fingerprints: a new renderer re-parses every page

# What looking for tags' ends may read in all, per character of the text (and a floor): a page never
# needs more than its own length once; past the budget, the rest of the text is kept as it is.
_LEX_BUDGET_PER_CHAR = 4
_LEX_BUDGET_FLOOR = 200_000
_SPECIAL = re.compile(r"[`\\<{]")  # what the tag scan stops at: code spans, escapes, tags, expressions
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
EXPRESSION = "{expression}"  # how an unrenderable MDX expression in the text is counted
MAX_SNIPPET_DEPTH = 5  # snippets inside snippets: deeper ones are left out, with one warning
MAX_SNIPPET_EXPANSIONS = 1_000  # snippet uses a page may expand in all (each nested use counts)

# Callout components of Mintlify, Docusaurus, Nextra and friends -> admonition type.
CALLOUTS = {
    "note": "note", "info": "info", "tip": "tip", "warning": "warning", "caution": "caution",
    "danger": "danger", "important": "important", "check": "success", "success": "success",
    "callout": "note", "admonition": "note", "aside": "note",
}
_PATTERN_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.DOTALL)


@dataclass
class MdxRendering:
    body: str
    warnings: list[str] = field(default_factory=list)
    snippets: list[str] = field(default_factory=list)  # import sources expanded, in order of first use
    changed: bool = False  # anything MDX-specific was found and rewritten
    expansions: int = 0  # snippet uses expanded into the body, nested ones included
    # components whose text comes from the site's code (rag_assets.ingest.mdx_components), and
    # expressions in an .mdx page's text (EXPRESSION): not rendered, counted by name
    unrendered: Counter[str] = field(default_factory=Counter)


class SnippetLimitError(ValueError):
    """A page's snippets expand past MAX_SNIPPET_EXPANSIONS uses or past `max_bytes`: the page is
    not indexed. The message says which limit, and the snippet where it was passed."""


@dataclass
class _Expansion:
    """What one page's rendering shares with the renderings of its snippets."""

    max_bytes: int | None
    max_expansions: int
    rendered: dict[tuple[str, int], "MdxRendering"] = field(default_factory=dict)  # (path, depth) -> made once
    sizes: dict[tuple[str, int], int] = field(default_factory=dict)  # their bodies' UTF-8 bytes



# ---------------------------------------------------------------------------------------------
# Rendering


# load_snippet(source, importing doc_path) -> (the snippet's doc_path, its raw text), or None
SnippetLoader = Callable[[str, str], "tuple[str, str] | None"]
# HTML elements that never have children: an opening tag is the whole element.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
                   "source", "track", "wbr"})
_DROPPED_WITH_CONTENT = frozenset({"script", "style"})


def render_mdx(body: str, doc_path: str, load_snippet: SnippetLoader | None = None, *,
               max_bytes: int | None = None, max_expansions: int = MAX_SNIPPET_EXPANSIONS, _depth: int = 0,
               _stack: tuple[str, ...] = (), _shared: _Expansion | None = None) -> MdxRendering:
    """The body as markdown a reader sees (see the module docstring). `load_snippet(source, doc_path)`
    returns (path, raw text) of a local markdown file imported from `doc_path` (frontmatter included
    or not), or None if it cannot be found; it may raise OSError (reported as a warning). Raises
    SnippetLimitError when the snippets expand past `max_expansions` uses or `max_bytes` bytes."""
    shared = _shared or _Expansion(max_bytes, max_expansions)
    result = MdxRendering(body)
    if "<" not in body and "import" not in body and "export" not in body and "{" not in body:
        return result
    lines = body.split("\n")
    imports, exports = esm_statements(lines)
    snippet_names: dict[str, str] = {}
    imported: set[str] = set()  # names bound to code or data (a snippet is not data)
    drop: set[int] = set()
    for start, (imp, end) in imports.items():
        drop.update(range(start, end))
        if imp.default_name and _is_markdown_source(imp.source):
            snippet_names[imp.default_name] = imp.source
        else:
            imported.update(imp.names)
    for start, end in exports.items():
        drop.update(range(start, end))
    result.changed = bool(drop)

    renderer = _Renderer(doc_path, snippet_names, load_snippet, _depth, _stack, result, shared)
    renderer.imported = frozenset(imported)
    if snippet_names or "<Snippet" in body:
        renderer.expanded_bytes = len(body.encode("utf-8"))  # the page's own text counts towards max_bytes
    out: list[tuple[str, bool, bool]] = []  # (line, inside a component, fenced code)
    text_lines: list[str] = []
    fence: tuple[str, int, int] | None = None

    def flush_text() -> None:
        if text_lines:
            out.extend((line, inside, False) for line, inside in renderer.render_text("\n".join(text_lines)))
            text_lines.clear()

    is_mdx = doc_path.lower().endswith(".mdx")
    for i, line in enumerate(lines):
        if i in drop:
            continue
        opened = fence
        fence, is_code = fence_step(fence, line, any_indent=is_mdx)
        if opened is not None and fence is None and _width(line) > opened[2] + 3:
            # MDX closes a fence at any indentation; markdown (the splitter) only within 3 columns of
            # its opening line: the closing line is put there, so both read the same code block
            line = " " * opened[2] + line.strip()
            result.changed = True
        if is_code:
            flush_text()
            if not renderer.dropping:
                out.append((line, renderer.depth > 0, True))
        else:
            text_lines.append(line)
    flush_text()
    renderer.finish()
    if result.changed:
        result.body = assemble(out)
    return result


def _width(line: str) -> int:
    """The indentation of a line, in columns."""
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _is_markdown_source(source: str) -> bool:
    return source.lower().endswith((".md", ".mdx"))


class _Renderer:
    """Tag-by-tag rewriting of the text between fenced code blocks; open components carry over."""

    def __init__(self, doc_path: str, snippet_names: dict[str, str], load_snippet: SnippetLoader | None,
                 depth: int, stack: tuple[str, ...], result: MdxRendering, shared: _Expansion):
        self.doc_path = doc_path
        self.snippet_names = snippet_names
        self.load_snippet = load_snippet
        self.snippet_depth = depth
        self.snippet_stack = stack
        self.result = result
        self.shared = shared
        self.expanded_bytes = 0  # of snippet text put into this body so far
        self.refused: set[str] = set()  # snippets warned about once already
        self.open: list[tuple[str, bool]] = []  # (tag name, rendered as an admonition)
        self.dropping: str | None = None  # inside <script>/<style>: everything up to its end goes
        self.imported: frozenset[str] = frozenset()  # names the page imports from code or data
        self.is_mdx = doc_path.lower().endswith(".mdx")  # where every {…} in the text is an expression

    @property
    def depth(self) -> int:
        return len(self.open)

    def render_text(self, text: str) -> list[tuple[str, bool]]:
        """`text` (no fenced code in it) rewritten, as lines flagged by whether they sit inside a component."""
        text = _drop_comments(text, self.result)
        pieces: list[str] = []
        line_flags = [self.depth > 0]  # one per output line: was a component open where it starts

        def emit(s: str) -> None:
            if self.dropping:
                s = "\n" * s.count("\n")
            pieces.append(s)
            line_flags.extend([self.depth > 0] * s.count("\n"))

        i, n, plain_from = 0, len(text), 0
        spans = CodeSpans(text) if "`" in text else None
        in_math = CodeSpanLook(text, "$") if "$" in text else None
        display_math = [m.span() for m in _DISPLAY_MATH.finditer(text)] if "$$" in text else []
        # Looking for a tag's end reads ahead (up to MAX_TAG_CHARS from each "<"); what it may read in
        # all is bounded, so text made of almost-tags (`<A {<A {…`) costs time linear in its size.
        budget = _LEX_BUDGET_PER_CHAR * n + _LEX_BUDGET_FLOOR
        while i < n:
            special = _SPECIAL.search(text, i)
            if special is None:
                break
            i, c = special.start(), special.group()
            if c == "`":
                i = spans.after(i)
                continue
            if c == "\\":
                i += 2  # an escaped "<" is text
                continue
            if c == "{":
                end = self._expression_end(text, i, in_math, display_math)
                if end is None:
                    i += 1
                    continue
                emit(text[plain_from:i])
                emit(self._expression(text[i + 1 : end - 1]))
                self.result.changed = True
                i = plain_from = end
                continue
            if budget <= 0:
                self._warn(f"MDX past character {i:,} is kept as text: it holds too many unfinished tags")
                break
            tag, reached = lex_tag_within(text, i, min(MAX_TAG_CHARS, budget))
            budget -= reached - i
            if tag is None:
                i += 1
                continue
            emit(text[plain_from:i])
            close = self._code_children_end(tag, text)
            if close is not None:  # <CodeBlock>: its children are the code
                emit(self._place(mdx_components.code_children_block(tag, text[tag.end : close.start]),
                                 alone_on_line(text, tag.start, close.end)))
                self.result.changed = True
                i = plain_from = close.end
                continue
            emit(self._replace(tag, text))
            self.result.changed = True
            i = plain_from = tag.end
        emit(text[plain_from:])
        return list(zip("".join(pieces).split("\n"), line_flags))

    def _replace(self, tag: Tag, text: str) -> str:
        name, key = tag.name, tag.name.lower()
        if self.dropping:
            if tag.kind == "close" and key == self.dropping:
                self.dropping = None
            return ""
        if tag.kind == "close":
            return self._close(name)
        own_line = alone_on_line(text, tag.start, tag.end)
        parent = self.open[-1][0] if self.open else None  # the component it sits in
        snippet = self._snippet_source(tag)
        if snippet is not None:
            if tag.kind == "open":
                self.open.append((name, False))
            return self._expand(snippet, own_line)
        if tag.kind == "open" and key in _DROPPED_WITH_CONTENT:
            self.dropping = key
            return ""
        if tag.kind == "open" and key not in _VOID:
            callout = CALLOUTS.get(key) if name[:1].isupper() else None
            if callout and own_line:
                kind = str(tag.attrs.get("type") or callout).lower() if key in ("admonition", "callout", "aside") else callout
                self.open.append((name, True))
                words = " ".join(v for k, v in tag.attrs.items() if k.lower() in PROSE_ATTRIBUTES and v)
                title = f" {words}" if words else ""
                return f"\n{MARK}:::{kind}{title}\n"
            self.open.append((name, False))
        return self._place(mdx_components.shown(tag, own_line, self.imported, parent), own_line)

    def _place(self, shown: Shown, own_line: bool) -> str:
        """What a component shows, where it stood: lines of their own (marked: not the children's
        indentation), or inline text; an unrenderable one counted."""
        if shown.unrendered:
            self.result.unrendered[shown.unrendered] += 1
        if not shown.text:
            return ""
        if shown.block:
            return "\n\n" + "\n".join(MARK + line for line in shown.text.split("\n")) + "\n\n"
        return f" {shown.text} "

    def _code_children_end(self, tag: Tag, text: str) -> Tag | None:
        """The closing tag of a component whose children are code (<CodeBlock>), when it is in `text`."""
        if self.dropping or not mdx_components.takes_code_children(tag):
            return None
        at = text.find(f"</{tag.name}", tag.end)
        close = lex_tag(text, at) if at >= 0 else None
        return close if close is not None and close.kind == "close" and close.name == tag.name else None

    def _expression_end(self, text: str, i: int, in_math, display_math: list[tuple[int, int]]) -> int | None:
        """One past the "}" of the MDX expression at text[i]; None where "{" is text: in a plain
        markdown page unless the expression is a string literal, inside math, or unbalanced."""
        if self.dropping or (in_math is not None and in_math(i)) or any(s <= i < e for s, e in display_math):
            return None
        end = balanced_end(text, i, min(len(text), i + MAX_TAG_CHARS))
        if end is None or (not self.is_mdx and js_string(text[i + 1 : end - 1]) is None):
            return None
        return end

    def _expression(self, expr: str) -> str:
        """What an MDX expression in the text shows: a string literal's value ({' '}, {"text"}); the
        site's code otherwise, counted and left out."""
        value = js_string(expr)
        if value is not None:
            return value
        if expr.strip():
            self.result.unrendered[EXPRESSION] += 1
        return ""

    def _close(self, name: str) -> str:
        if not any(open_name == name for open_name, _ in self.open):
            if _is_component(name):
                self._warn(f"stray closing tag </{name}>")
            return ""
        while self.open[-1][0] != name:  # children left open: closed with their parent
            if _is_component(self.open[-1][0]):
                self._warn(f"<{self.open[-1][0]}> is never closed")
            self.open.pop()
        _, as_admonition = self.open.pop()
        return f"\n{MARK}:::\n" if as_admonition else ""

    def _snippet_source(self, tag: Tag) -> str | None:
        if tag.name in self.snippet_names:
            return self.snippet_names[tag.name]
        if tag.name == "Snippet" and tag.attrs.get("file"):  # Mintlify's older <Snippet file="x.mdx" />
            return "/snippets/" + str(tag.attrs["file"]).lstrip("/")
        return None

    def _expand(self, source: str, own_line: bool) -> str:
        if self.load_snippet is None:
            return ""
        if not _is_markdown_source(source):
            self._warn_once(source, f"snippet {source} is not a markdown file (.md or .mdx): not inlined")
            return ""
        try:
            found = self.load_snippet(source, self.doc_path)
        except OSError as exc:
            self._warn_once(source, f"snippet {source} cannot be read: {exc.strerror or exc}")
            return ""
        if found is None:
            self._warn_once(source, f"snippet {source} not found under the docs folder")
            return ""
        path, raw = found
        if path in self.snippet_stack or path == self.doc_path or self.snippet_depth >= MAX_SNIPPET_DEPTH:
            self._warn_once(source, f"snippet {source} imports itself (or nests deeper than {MAX_SNIPPET_DEPTH}): "
                                    "not expanded")
            return ""
        shared, key = self.shared, (path, self.snippet_depth + 1)
        inner = shared.rendered.get(key)
        if inner is None:  # rendered once; every later use of it at this depth reuses the text
            inner = render_mdx(without_frontmatter(raw), path, self.load_snippet, _depth=self.snippet_depth + 1,
                               _stack=(*self.snippet_stack, self.doc_path), _shared=shared)
            shared.rendered[key] = inner
            shared.sizes[key] = len(inner.body.encode("utf-8"))
            self.result.warnings.extend(inner.warnings)
        self._count(path, 1 + inner.expansions, shared.sizes[key])
        self.result.unrendered.update(inner.unrendered)  # each use of the snippet shows them again
        for s in [path, *inner.snippets]:
            if s not in self.result.snippets:
                self.result.snippets.append(s)
        body = inner.body.strip("\n")
        if not own_line and "\n" not in body:
            return body
        # the snippet's lines keep their own indentation: marked, so they do not count for the dedent
        return "\n\n" + "\n".join(MARK + line for line in body.split("\n")) + "\n\n"

    def _count(self, path: str, expansions: int, size: int) -> None:
        """Add one use of the snippet at `path` (`expansions` uses, `size` bytes, its nested ones
        included) to this body; past a limit, the page fails."""
        shared = self.shared
        self.result.expansions += expansions
        if self.result.expansions > shared.max_expansions:
            raise SnippetLimitError(f"its snippets expand to more than {shared.max_expansions:,} snippet uses "
                                    f"(passed at {path}); not indexed")
        self.expanded_bytes += size
        if shared.max_bytes is not None and self.expanded_bytes > shared.max_bytes:
            raise SnippetLimitError(f"its snippets expand it past {shared.max_bytes:,} bytes, the file-size limit "
                                    f"RAG_MAX_FILE_BYTES (passed at {path}); not indexed")

    def _warn_once(self, source: str, message: str) -> None:
        if source not in self.refused:
            self.refused.add(source)
            self._warn(message)

    def finish(self) -> None:
        for name, _ in reversed(self.open):
            if _is_component(name):
                self._warn(f"<{name}> is never closed")
        self.open.clear()

    def _warn(self, message: str) -> None:
        self.result.warnings.append(f"{self.doc_path}: {message}")


def _is_component(name: str) -> bool:
    """JSX components (capitalised) must be closed; HTML elements such as <p> or <li> need not be."""
    return name[:1].isupper()


def _drop_comments(text: str, result: MdxRendering) -> str:
    if "{/*" in text:
        new = _PATTERN_MDX_COMMENT.sub("", text)
        if new != text:
            result.changed = True
            text = new
    if "<!--" in text:
        out, pos = [], 0
        in_span = CodeSpanLook(text)
        while True:
            start = text.find("<!--", pos)
            if start < 0 or in_span(start):
                break
            end = text.find("-->", start + 4)
            if end < 0:
                break  # an unclosed comment is left as text
            out.append(text[pos:start])
            pos = end + 3
            result.changed = True
        out.append(text[pos:])
        text = "".join(out)
    return text
