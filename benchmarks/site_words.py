"""The words a reader sees, for benchmarks/site_fidelity.py: a small DOM of built HTML and the visible
text of an element, our chunks' markdown read as a reader would read it (with the discounts for
repetition that is right), and the multiset comparison with the lost and extra word runs. The
definitions are in site_fidelity.py's docstring; this module is plain Python (tests:
rag_assets_tests/benchmarks/test_site_fidelity.py)."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

# ---------------------------------------------------------------- HTML: a small DOM, then visible text

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
BLOCK = {"address", "article", "aside", "blockquote", "br", "dd", "details", "dialog", "div", "dl", "dt", "fieldset",
         "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main",
         "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
         "caption", "label", "option", "img"}
SKIP_TAGS = {"script", "style", "svg", "button", "template", "noscript", "head", "title", "math-annotation"}
# classes of elements no reader reads as the page's text, by theme
SKIP_CLASSES = {"sr-only", "sl-anchor-link", "hash-link", "headerlink", "md-content__button", "md-source-file",
                "md-feedback", "theme-doc-footer", "theme-edit-this-page", "theme-last-updated",
                "theme-doc-breadcrumbs", "theme-doc-version-badge", "theme-doc-toc-mobile",
                "theme-doc-version-banner", "pagination-nav", "copyButtonCopyIcon", "md-clipboard"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)  # Node or str
    parent: "Node | None" = None

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, parent=self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, {k: (v if v is not None else "") for k, v in attrs}, parent=self.cur))

    def handle_endtag(self, tag):
        node = self.cur
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:  # close it (and anything left open inside it)
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse_html(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def find_all(root: Node, tag: str | None = None, cls: str | None = None, **attrs) -> list[Node]:
    out = []
    for node in root.iter():
        if tag and node.tag != tag:
            continue
        if cls and cls not in node.classes:
            continue
        if any(node.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
            continue
        out.append(node)
    return out


def _hidden(node: Node, drop: frozenset[str] = frozenset()) -> bool:
    if node.tag in SKIP_TAGS or node.classes & SKIP_CLASSES or node.classes & drop:
        return True
    if node.attrs.get("aria-hidden") == "true":
        return True
    return "hidden" in node.attrs and node.attrs.get("role") != "tabpanel"


def visible_text(node: Node, drop: frozenset[str] = frozenset()) -> str:
    """The text a reader sees in `node`: hidden and chrome elements (and elements of the `drop` classes: a
    site's own layout additions) left out, blocks on their own lines."""
    parts: list[str] = []

    def walk(n: Node) -> None:
        for child in n.children:
            if isinstance(child, str):
                parts.append(child)
            elif not _hidden(child, drop):
                block = child.tag in BLOCK
                if block:
                    parts.append("\n")
                walk(child)
                if block or child.tag in ("td", "th"):
                    parts.append("\n")

    if not _hidden(node, drop):
        walk(node)
    return re.sub(r"[ \t\r\f\v]+", " ", "".join(parts))


# ---------------------------------------------------------------- words

WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    out = []
    for token in WORD.findall(text.lower()):
        token = token.strip("_")
        if token:
            out.append(token)
    return out


FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
TITLE_ATTR = re.compile(r"""title\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S+))""")
IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\((?:[^()]|\([^)]*\))*\)")
REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
REF_DEF = re.compile(r"^\s{0,3}\[(?!\^)[^\]]+\]:\s+\S+.*$", re.M)  # not a footnote: [^1]: is text
FOOTNOTE_DEF = re.compile(r"^(\s{0,3})\[\^[^\]]+\]:", re.M)  # its label: the build numbers the list
LIST_NUMBER = re.compile(r"^(\s*(?:>\s*)*)\d{1,9}[.)](?=\s)")  # an ordered list's marker: the browser draws it
TABLE_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def fence_roles(text: str) -> list[str]:
    """Per line: "open"/"close" for a code fence's own lines, "code" inside one, "" outside (a fence
    shown inside a longer or less indented fence is code; fences may be indented, as in content tabs)."""
    roles, fence, indent = [], "", 0
    for line in text.split("\n"):
        m = FENCE_OPEN.match(line)
        if m and not fence:
            fence, indent = m.group(2), len(m.group(1))
            roles.append("open")
        elif (fence and m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) and not m.group(3).strip()
              and len(m.group(1)) <= indent + 3):  # a closing fence indented further is the code's text
            fence = ""
            roles.append("close")
        else:
            roles.append("code" if fence else "")
    return roles


def reader_markdown(text: str) -> str:
    """A chunk's markdown as words a reader could see: fence info strings (but a `title=`), link and
    image destinations, reference definitions and ordered-list numbers dropped outside code (a code
    block shows its links whole); a footnote's definition is its text (the build lists it); everything
    else kept as written."""
    out, prose = [], []

    def flush() -> None:
        if prose:
            out.append(_prose_words("\n".join(prose)))
            prose.clear()

    for line, where in zip(text.split("\n"), fence_roles(text)):
        if where == "open":
            flush()
            title = TITLE_ATTR.search(FENCE_OPEN.match(line).group(3))
            out.append(next(g for g in title.groups() if g is not None) if title else "")
        elif where == "close":
            flush()
            out.append("")
        elif where == "code":
            flush()
            out.append(line)
        else:
            prose.append(LIST_NUMBER.sub(r"\1", line))
    flush()
    return "\n".join(out)


def _prose_words(text: str) -> str:
    text = FOOTNOTE_DEF.sub(r"\1", text)
    text = REF_DEF.sub("", text)
    text = IMAGE.sub(r"\1", text)
    text = LINK.sub(r"\1", text)
    return REF_LINK.sub(r"\1", text)


def _table_open_at_end(lines: list[str], roles: list[str]) -> str | None:
    """The header row's words of the table the text ends in, None when it does not end in a table."""
    header = None
    for k, line in enumerate(lines):
        if roles[k] or "|" not in line:
            header = None  # code, a blank line or text ends a table
        elif k + 1 < len(lines) and not roles[k + 1] and TABLE_SEP.match(lines[k + 1]):
            header = " ".join(words(line))
    return header


def _drop_repeated_table_headers(chunk_texts: list[str]) -> list[str]:
    """A table split across chunks repeats its header row and separator at the top of the next piece so the
    piece reads alone: that repetition is not counted. Only there: the chunk starts with the header row
    and separator of the table the previous chunk ended in (another table with the same header counts)."""
    out = []
    open_header = None  # the header row of the table the previous chunk ended in
    for text in chunk_texts:
        lines = text.split("\n")
        roles = fence_roles(text)
        first = next((k for k, line in enumerate(lines) if line.strip()), None)
        if (first is not None and open_header is not None and first + 1 < len(lines)
                and " ".join(words(lines[first])) == open_header and TABLE_SEP.match(lines[first + 1])):
            lines = lines[:first] + lines[first + 2:]
        out.append("\n".join(lines))
        open_header = _table_open_at_end(text.rstrip().split("\n"), roles)
    return out


def _drop_overlap(prev: list[str], cur: list[str], minimum: int = 5) -> list[str]:
    for k in range(min(len(prev), len(cur), 400), minimum - 1, -1):
        if prev[-k:] == cur[:k]:
            return cur[k:]
    return cur


def indexed_words(chunks: list[dict], title: str) -> list[str]:
    """The words of one page's chunks (ordered by chunk_index), discounted as the docstring says."""
    chunks = sorted(chunks, key=lambda c: c["meta"].get("chunk_index", 0))
    texts = [reader_markdown(t) for t in _drop_repeated_table_headers([c["text"] for c in chunks])]
    out: list[str] = []
    prev: list[str] = []
    prev_section = None
    for chunk, text in zip(chunks, texts):
        w = words(text)
        section = chunk["meta"].get("heading_breadcrumb", chunk["meta"].get("section"))
        if prev and section == prev_section:
            w = _drop_overlap(prev, w)
        out.extend(w)
        prev, prev_section = words(text), section
    title_words = words(title)
    has_h1 = any(re.search(r"^#\s+" + re.escape(title.strip()) + r"\s*$", c["text"], re.M) for c in chunks) if title.strip() else True
    if title_words and not has_h1:
        out = title_words + out
    return out


def compare(built: list[str], ours: list[str]) -> dict:
    """Multiset recall/precision of `ours` against `built`, with the lost and extra runs in reading order."""
    b, o = Counter(built), Counter(ours)
    common = sum((b & o).values())
    recall = common / len(built) if built else None
    precision = common / len(ours) if ours else None
    lost, extra = _runs(built, ours, b - o, o - b)
    return {"recall": recall, "precision": precision, "built_words": len(built), "indexed_words": len(ours),
            "lost": lost, "extra": extra, "lost_counts": dict((b - o).most_common()), "extra_counts": dict((o - b).most_common())}


def _mostly_missing(span: list[str], missing: Counter) -> bool:
    """At least half the span's words are really missing on the other side (not text moved elsewhere)."""
    left = Counter(missing)
    hits = 0
    for w in span:
        if left[w] > 0:
            left[w] -= 1
            hits += 1
    return hits * 2 >= len(span)


def _runs(built: list[str], ours: list[str], lost: Counter, extra: Counter, top: int = 8) -> tuple[list[str], list[str]]:
    """The spans an alignment of the two word sequences leaves unmatched on each side, longest first,
    keeping only spans with a word really missing on the other side (the counts decide, not the order)."""
    if len(built) * len(ours) > 4e8:  # very long pages: no alignment, just the words
        return [" ".join(lost.elements())[:400]], [" ".join(extra.elements())[:400]]
    left, right = [], []
    matcher = difflib.SequenceMatcher(None, built, ours, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("delete", "replace") and _mostly_missing(built[i1:i2], lost):
            left.append(built[i1:i2])
        if op in ("insert", "replace") and _mostly_missing(ours[j1:j2], extra):
            right.append(ours[j1:j2])

    def show(runs):
        runs.sort(key=len, reverse=True)
        return [" ".join(r[:40]) + (" …" if len(r) > 40 else "") for r in runs[:top]]

    return show(left), show(right)
