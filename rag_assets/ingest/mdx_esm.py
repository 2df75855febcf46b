"""MDX's ESM statements (``import … from '…'``, ``export const …``) and the fenced-code state they are
looked for outside of: what rag_assets.ingest.mdx drops from a page and which components its
imports bind to markdown snippets."""

from __future__ import annotations

import re
from dataclasses import dataclass

# ESM: an import statement is complete once it names its source; an export runs to a blank line.
_IMPORT_START = re.compile(r"^import(?=[\s{*'\"])")
# an import statement is complete on a line ending with its quoted source, after `from` or a bare `import`
_SOURCE_AT_END = re.compile(r"""(['"])([^'"\n]+)\1\s*;?\s*$""")
_ENDS_WITH_FROM = re.compile(r"\bfrom\s*$")
_BARE_IMPORT = re.compile(r"import\s*")
_EXPORT_START = re.compile(r"^export\s+(?:const|let|var|function|default|class|async|\{|\*)")
_IMPORT_DEFAULT = re.compile(r"^import\s+([A-Za-z_$][\w$]*)\s*(?:,|\s+from\b)")
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}(?=[^`]*$)|~{3,})")
_MAX_IMPORT_LINES = 40
# the names an import binds: `import A, { b, c as d } from …`, `import * as e from …`
_DEFAULT_AND_NAMED = re.compile(r"^import\s+(?:type\s+)?([A-Za-z_$][\w$]*)?\s*,?\s*(?:\{([^}]*)\}|\*\s*as\s+([A-Za-z_$][\w$]*))?")


@dataclass(frozen=True)
class Import:
    source: str  # the module specifier, as written: '/snippets/x.mdx', './y.md', 'openai'
    default_name: str | None  # `import Name from …`: the component name it binds
    names: tuple[str, ...] = ()  # every local name it binds (default, named, namespace)


def find_imports(text: str) -> list[Import]:
    """The import statements of an MDX body (outside fenced code), in order."""
    return [imp for imp, _ in esm_statements(text.split("\n"))[0].values()]


def esm_statements(lines: list[str]) -> tuple[dict[int, tuple[Import, int]], dict[int, int]]:
    """Imports (first line -> (Import, one past its last line)) and exports (first -> one past last)."""
    imports: dict[int, tuple[Import, int]] = {}
    exports: dict[int, int] = {}
    fence: tuple[str, int, int] | None = None
    stops: list[int] | None = None  # made at the first import, once per body
    i = 0
    while i < len(lines):
        fence, is_code = fence_step(fence, lines[i])
        if not is_code and _IMPORT_START.match(lines[i]):
            stops = stops or _import_stops(lines)
            found = _import_at(lines, i, stops)
            if found is not None:
                imports[i] = found
                i = found[1]
                continue
        elif not is_code and _EXPORT_START.match(lines[i]):
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            exports[i] = end
            i = end
            continue
        i += 1
    return imports, exports


def _import_stops(lines: list[str]) -> list[int]:
    """stops[j]: the first line at or after j that is blank or ends with `from '<source>'` (the source
    may stand alone on the line after `from`): where an import statement that started before ends.
    One pass over the body, so each statement is found in constant time (a scan of up to
    _MAX_IMPORT_LINES lines from every line starting with "import" made prose such as "import the
    data" lines costly)."""
    n = len(lines)
    stops = [n] * (n + 1)
    for j in range(n - 1, -1, -1):
        line = lines[j]
        ends = not line.strip()
        if not ends and ("'" in line or '"' in line):
            m = _SOURCE_AT_END.search(line)
            if m is not None:
                before = line[: m.start()]
                ends = bool(_ENDS_WITH_FROM.search(before if before.strip() else (lines[j - 1] if j else "")))
        stops[j] = j if ends else stops[j + 1]
    return stops


def _import_at(lines: list[str], i: int, stops: list[int]) -> tuple[Import, int] | None:
    """The import statement starting at line i and one past its last line; None when the lines there
    never name a source before a blank line (prose that happens to start with "import")."""
    n, end = len(lines), stops[i]
    bare = _BARE_IMPORT.fullmatch(lines[i]) is not None  # `import` alone: the source is on the next line
    for j in (i, i + 1):  # a side-effect import `import './x.css'` names its source right after `import`
        if j >= min(n, end + 1) or (j > i and not lines[j].strip()):
            break
        m = _SOURCE_AT_END.search(lines[j])
        if m is not None and (_BARE_IMPORT.fullmatch(lines[j][: m.start()]) if j == i else
                              bare and not lines[j][: m.start()].strip()):
            end = j
            break
    if end >= n or end - i >= _MAX_IMPORT_LINES or (end > i and not lines[end].strip()):
        return None
    statement = "\n".join(lines[i : end + 1])
    default = _IMPORT_DEFAULT.match(statement)
    source = _SOURCE_AT_END.search(lines[end]).group(2)
    return Import(source, default.group(1) if default else None, _bound_names(statement)), end + 1


def _bound_names(statement: str) -> tuple[str, ...]:
    """The local names an import statement binds (``b as c`` binds ``c``)."""
    m = _DEFAULT_AND_NAMED.match(statement)
    if m is None:
        return ()
    names = [m.group(1)] if m.group(1) and m.group(1) != "from" else []
    for item in (m.group(2) or "").split(","):
        words = item.split()
        if words and words[0] != "type":
            names.append(words[-1])
    if m.group(3):
        names.append(m.group(3))
    return tuple(n for n in names if n)


def fence_step(fence: tuple[str, int, int] | None, line: str,
               any_indent: bool = False) -> tuple[tuple[str, int, int] | None, bool]:
    """Advance the fenced-code state (fence char, length, indentation) by one line: (new state, whether
    this line is code). A closing line is indented at most 3 columns more than its opening line, as
    CommonMark (and so the splitter, rag_assets.ingest.markdown) has it: an indented ```` ``` ```` inside
    the code, such as a nested example, does not close it early. `any_indent`: MDX's rule instead (it
    has no indented code, so a closing fence may be indented any amount)."""
    if fence is None:
        m = _FENCE_OPEN.match(line)
        if m:
            return (m.group("fence")[0], len(m.group("fence")), _width(m.group("indent"))), True
        return None, False
    char, length, indent = fence
    stripped = line.strip()
    if stripped and set(stripped) == {char} and len(stripped) >= length and (
            any_indent or _width(line[: len(line) - len(line.lstrip())]) <= indent + 3):
        return None, True
    return fence, True


def _width(indent: str) -> int:
    return len(indent.expandtabs(4))
