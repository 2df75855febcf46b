"""The JSX/HTML tags of an MDX body, lexed as tags (name, attributes with quoted, ``{expression}`` or
bare values, ``/>``), not matched by a pattern, so a ``>`` inside ``{…}`` or a string never ends
one; and the inline code spans the tag scan skips."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

MAX_TAG_CHARS = 4000  # a tag longer than this is not a tag
_BACKTICKS = re.compile(r"`+")
_PARAGRAPH_BREAK = re.compile(r"(?=\n\n)")
_NAME = re.compile(r"[A-Za-z][\w.:\-]*")
_ATTR_NAME = re.compile(r"[A-Za-z_:@$][\w:.\-@$]*")
_BARE_VALUE = re.compile(r"[^\s\"'=<>`/]+")


@dataclass
class Tag:
    start: int
    end: int
    name: str  # "" for a fragment <> </>
    kind: str  # "open", "close", "self"
    attrs: dict[str, str | None]  # a quoted or string-expression value; None for another expression or none
    exprs: dict[str, str] = field(default_factory=dict)  # attribute -> the source of its {expression}


def lex_tag(text: str, i: int) -> Tag | None:
    """The JSX/HTML tag starting at text[i] == "<", or None when what is there is not a tag."""
    return lex_tag_within(text, i, MAX_TAG_CHARS)[0]


def lex_tag_within(text: str, i: int, window: int) -> tuple[Tag | None, int]:
    """(lex_tag's answer, how far it looked: one past the last character it may have read), looking
    at most `window` characters ahead."""
    n = len(text)
    limit = min(n, i + window)
    tag = _lex_within(text, i, n, limit)
    return tag, (tag.end if tag is not None else limit)


def _lex_within(text: str, i: int, n: int, limit: int) -> Tag | None:
    j = i + 1
    kind = "open"
    if j < n and text[j] == "/":
        kind, j = "close", j + 1
    if j < n and text[j] == ">":
        return Tag(i, j + 1, "", kind, {})  # fragment
    m = _NAME.match(text, j)
    if not m:
        return None
    name, j = m.group(0), m.end()
    if name.endswith(":") or (j < n and text[j] in "@/" and kind == "open" and not text.startswith("/>", j)):
        return None  # <https://…>, <me@example.com>: autolinks, not tags
    attrs: dict[str, str | None] = {}
    exprs: dict[str, str] = {}
    while j < limit:
        while j < limit and text[j].isspace():
            j += 1
        if j >= limit:
            return None
        if text.startswith("/>", j):
            return Tag(i, j + 2, name, "self" if kind == "open" else kind, attrs, exprs)
        if text[j] == ">":
            return Tag(i, j + 1, name, kind, attrs, exprs)
        if kind == "close":
            return None
        if text[j] == "{":  # {...spread} or a boolean expression attribute
            end = balanced_end(text, j, limit)
            if end is None:
                return None
            j = end
            continue
        a = _ATTR_NAME.match(text, j)
        if not a:
            return None
        key, j = a.group(0), a.end()
        k = j
        while k < limit and text[k] in " \t\n":
            k += 1
        if k < limit and text[k] == "=":
            k += 1
            while k < limit and text[k] in " \t\n":
                k += 1
            if k >= limit:
                return None
            if text[k] in "\"'":
                close = text.find(text[k], k + 1, limit)
                if close < 0:
                    return None
                attrs[key] = text[k + 1 : close]
                j = close + 1
            elif text[k] == "{":
                end = balanced_end(text, k, limit)
                if end is None:
                    return None
                inner = text[k + 1 : end - 1].strip()
                attrs[key] = js_string(inner)  # {"text"} / {'text'} / {`text`}: a string expression is text too
                exprs[key] = inner
                j = end
            else:
                v = _BARE_VALUE.match(text, k)
                if not v:
                    return None
                attrs[key] = v.group(0)
                j = v.end()
        else:
            attrs[key] = None
    return None


def js_string(expr: str) -> str | None:
    """The value of a JavaScript expression that is one string literal (``'a'``, ``"a"``, or a template
    literal with no ``${…}`` in it), escapes decoded; None for any other expression."""
    expr = expr.strip()
    if len(expr) < 2 or expr[0] not in "\"'`" or expr[-1] != expr[0]:
        return None
    quote, body = expr[0], expr[1:-1]
    if quote == "`" and "${" in body:
        return None
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == quote:
            return None  # a quote that ends a literal: 'a' + 'b' is two of them
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "u" and body.startswith("{", i + 2) and "}" in body[i + 2:]:
                close = body.index("}", i + 2)
                out.append(_code_point(body[i + 3 : close]) or body[i : close + 1])
                i = close + 1
                continue
            if nxt == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", body[i + 2 : i + 6]):
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_JS_ESCAPES.get(nxt, nxt) if nxt != "\n" else "")  # a backslash-newline continues the line
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_JS_ESCAPES = {"n": "\n", "t": "\t", "r": "", "b": "", "f": "", "v": "", "0": ""}


def _code_point(hex_digits: str) -> str | None:
    try:
        return chr(int(hex_digits, 16))
    except (ValueError, OverflowError):
        return None


def js_strings(expr: str) -> list[str] | None:
    """The values of an array of string literals (``['npm', "yarn"]``); None for any other expression."""
    expr = expr.strip()
    if not (expr.startswith("[") and expr.endswith("]")):
        return None
    body, items, item_start, quote, i = expr[1:-1], [], 0, None, 0
    while i < len(body):  # split at the commas outside strings
        c = body[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c == ",":
            items.append(body[item_start:i])
            item_start = i + 1
        i += 1
    items.append(body[item_start:])
    values = [js_string(item) for item in items if item.strip()]
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def balanced_end(text: str, i: int, limit: int) -> int | None:
    """One past the "}" that closes the "{" at text[i] (strings and template literals skipped)."""
    depth, j = 0, i
    while j < limit:
        c = text[j]
        if c in "\"'`":
            close = text.find(c, j + 1, limit)
            if close < 0:
                return None
            j = close + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None

class CodeSpanLook:
    """in_span(i): an odd number of backticks (or of `char`: "$" for inline math) between text[i]'s line
    start and i. Asked with growing i, each character is counted once (a count from the line start for
    every comment of a one-line page was quadratic)."""

    def __init__(self, text: str, char: str = "`"):
        self.text, self.char, self.pos, self.ticks = text, char, 0, 0

    def __call__(self, i: int) -> bool:
        text = self.text
        newline = text.rfind("\n", self.pos, i)
        if newline >= 0:
            self.ticks, self.pos = 0, newline + 1
        self.ticks += text.count(self.char, self.pos, i)
        self.pos = i
        return self.ticks % 2 == 1


class CodeSpans:
    """The inline code spans of a text, found in one pass: a backtick run opens a span that the next run
    of the same length in the same paragraph closes; a run with no such closer is literal. (A search
    from every run to its paragraph's end was quadratic on a long paragraph full of code spans.)"""

    def __init__(self, text: str):
        breaks = [m.start() for m in _PARAGRAPH_BREAK.finditer(text)]  # where a blank line starts
        runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
        self.run_end = dict(runs)
        self.closer_end: dict[int, int] = {}  # opening run's start -> one past its closing run
        later: dict[int, tuple[int, int, int]] = {}  # run length -> (start, end, paragraph) of the next one
        for start, end in reversed(runs):
            paragraph = bisect.bisect_left(breaks, start)
            nxt = later.get(end - start)
            if nxt is not None and nxt[2] == paragraph:
                self.closer_end[start] = nxt[1]
            later[end - start] = (start, end, paragraph)

    def after(self, i: int) -> int:
        """Where the text goes on after the backtick run at i: past its code span, or past the run."""
        return self.closer_end.get(i) or self.run_end[i]


def alone_on_line(text: str, start: int, end: int) -> bool:
    """Only whitespace between text[start:end] and the line's ends; looks at that whitespace only (a
    slice to the line's ends, once per tag, made a one-line page quadratic)."""
    i = start - 1
    while i >= 0 and text[i] != "\n" and text[i].isspace():
        i -= 1
    if i >= 0 and text[i] != "\n":
        return False
    j, n = end, len(text)
    while j < n and text[j] != "\n" and text[j].isspace():
        j += 1
    return j == n or text[j] == "\n"
