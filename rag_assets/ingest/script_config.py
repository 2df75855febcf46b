"""A site generator's configuration written in JavaScript or TypeScript, read without running it.

Docusaurus (``docusaurus.config.{js,mjs,cjs,ts}``), Astro/Starlight (``astro.config.*``) and VitePress
(``.vitepress/config.*``) keep what decides a site's pages, languages, versions and addresses in code.
Running that code would need Node.js and the site's packages, and would run a stranger's program; so the
file is parsed (tree-sitter) and only what is written as literal data is taken:

- the exported value: ``export default X``, ``module.exports = X``, or the object returned by an exported
  (async) function;
- objects, arrays, strings (templates without substitutions), numbers, ``true``/``false``/``null``;
- a name bound by a top-level ``const``/``let``/``var`` (or one inside the exported function), a
  property of such a value (``config.i18n``), and spreads of them;
- a value imported from a neighbouring ``.json`` file (``import x from './locales.json'``,
  ``require('./locales.json')``) or from a neighbouring module's named or default export (two levels deep);
- ``a ?? b`` and ``a || b`` whose left side is unknown (``process.env.X ?? 'en'``) take their right side;
- a call keeps its callee's name and its arguments (``Call``): ``defineConfig({...})`` and
  ``starlight({...})`` are found with `find_calls`, and `unwrap` takes a wrapper's configuration object.

Everything else (computed keys, conditionals, functions) is ``UNKNOWN``: a caller treats it as "the
configuration does not say" and falls back to the generator's defaults.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the parsers' modules are loaded on first use: `rag query` never reads a site's configuration
_GRAMMARS = {".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
             ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx"}
SCRIPT_SUFFIXES = tuple(_GRAMMARS)
MAX_CONFIG_BYTES = 2_000_000  # a configuration larger than this is not read
_IMPORT_DEPTH = 2  # how many modules deep an imported value is followed


class _Unknown:
    """What the file does not say as data."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class Call:
    """A call written in the configuration: its callee's name (``defineConfig``, ``starlight``,
    ``sidebar.items``) and its arguments, read as data."""

    name: str
    args: tuple = field(default=())

    def first_object(self) -> dict:
        return next((a for a in self.args if isinstance(a, dict)), {})


@functools.lru_cache(maxsize=None)
def _parser(grammar: str):
    import tree_sitter

    if grammar == "javascript":
        import tree_sitter_javascript as module

        language = module.language()
    else:
        import tree_sitter_typescript as module

        language = module.language_tsx() if grammar == "tsx" else module.language_typescript()
    return tree_sitter.Parser(tree_sitter.Language(language))


def read_script_config(path: Path) -> Any:
    """The value a JavaScript/TypeScript configuration file exports, as data (UNKNOWN where it is code).
    A file that cannot be read or parsed gives UNKNOWN; nothing is raised."""
    return _Module.load(Path(path), 0).default()


def unwrap(value: Any) -> Any:
    """A configuration wrapped in calls (``defineConfig({...})``, ``withMermaid(defineConfig({...}))``)
    as its object; any other value as it is."""
    while isinstance(value, Call):
        inner = next((a for a in value.args if isinstance(a, (dict, Call))), None)
        if inner is None:
            return UNKNOWN
        value = inner
    return value


def find_calls(value: Any, name: str) -> list[Call]:
    """Every call of `name` (the last part of the callee: ``starlight`` matches ``starlight`` and
    ``x.starlight``) anywhere inside a value, outermost first."""
    found: list[Call] = []

    def walk(node: Any) -> None:
        if isinstance(node, Call):
            if node.name.rsplit(".", 1)[-1] == name:
                found.append(node)
            for arg in node.args:
                walk(arg)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    walk(value)
    return found


def get_path(value: Any, *keys: str) -> Any:
    """value[k1][k2]… through objects (and the object of a wrapper call), UNKNOWN where a step is missing."""
    for key in keys:
        value = unwrap(value) if isinstance(value, Call) else value
        if not isinstance(value, dict) or key not in value:
            return UNKNOWN
        value = value[key]
    return value


# ----------------------------------------------------------------------------------------------
# the reader


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.DOTALL)


def _unescape(text: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1)
        if code.startswith("u{"):
            return chr(int(code[2:-1], 16))
        if code[0] in "ux" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


class _Module:
    """One parsed file: its top-level bindings, imports and exports, evaluated on demand."""

    def __init__(self, path: Path, depth: int, root=None, source: bytes = b""):
        self.path, self.depth, self.root, self.source = path, depth, root, source
        self.bindings: dict[str, Any] = {}  # name -> node (evaluated lazily) or a value
        self.imports: dict[str, tuple[str, str]] = {}  # local name -> (specifier, imported name or "default"/"*")
        self.exports: dict[str, Any] = {}  # exported name -> node
        self._evaluating: set[str] = set()
        if root is not None:
            self._index(root)

    @classmethod
    def load(cls, path: Path, depth: int) -> "_Module":
        grammar = _GRAMMARS.get(path.suffix.lower())
        try:
            if grammar is None or path.stat().st_size > MAX_CONFIG_BYTES:
                return cls(path, depth)
            source = path.read_bytes()
            tree = _parser(grammar).parse(source)
        except (OSError, ValueError):
            return cls(path, depth)
        return cls(path, depth, tree.root_node, source)

    # indexing ------------------------------------------------------------------------------
    def _index(self, root) -> None:
        for node in root.named_children:
            self._statement(node, self.bindings, top=True)

    def _statement(self, node, scope: dict, top: bool) -> None:
        kind = node.type
        if kind in ("lexical_declaration", "variable_declaration"):
            for declarator in node.named_children:
                if declarator.type == "variable_declarator":
                    self._declare(declarator, scope)
        elif kind == "export_statement" and top:
            self._export(node)
        elif kind == "import_statement" and top:
            self._import(node)
        elif kind == "expression_statement" and top:
            expression = node.named_children[0] if node.named_children else None
            if expression is not None and expression.type == "assignment_expression":
                target = expression.child_by_field_name("left")
                if target is not None and self._text(target) in ("module.exports", "exports.default"):
                    self.exports["default"] = expression.child_by_field_name("right")
        elif kind in ("function_declaration", "generator_function_declaration"):
            name = node.child_by_field_name("name")
            if name is not None:
                scope[self._text(name)] = node

    def _declare(self, declarator, scope: dict) -> None:
        name = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        if name is None or value is None:
            return
        if name.type == "identifier":
            scope[self._text(name)] = value
            call = self._require(value)
            if call is not None:
                self.imports[self._text(name)] = (call, "default")
        elif name.type == "object_pattern":  # const { a, b: c } = require('./x')
            specifier = self._require(value)
            for part in name.named_children:
                if part.type == "shorthand_property_identifier_pattern":
                    local = self._text(part)
                    if specifier is not None:
                        self.imports[local] = (specifier, local)
                elif part.type == "pair_pattern":
                    key, target = part.child_by_field_name("key"), part.child_by_field_name("value")
                    if specifier is not None and key is not None and target is not None:
                        self.imports[self._text(target)] = (specifier, self._key(key))

    def _require(self, node) -> str | None:
        node = self._bare(node)
        if node.type != "call_expression":
            return None
        callee, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if callee is None or self._text(callee) != "require" or args is None or not args.named_children:
            return None
        first = args.named_children[0]
        return self._string(first) if first.type in ("string", "template_string") else None

    def _export(self, node) -> None:
        declaration = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        if value is not None:  # export default <expression>
            self.exports["default"] = value
            return
        if declaration is not None:
            if declaration.type in ("function_declaration", "generator_function_declaration"):
                name = declaration.child_by_field_name("name")
                is_default = any(c.type == "default" for c in node.children)
                if is_default:
                    self.exports["default"] = declaration
                if name is not None:
                    self.bindings[self._text(name)] = declaration
                    self.exports.setdefault(self._text(name), declaration)
                return
            before = dict(self.bindings)
            self._statement(declaration, self.bindings, top=False)
            for name in self.bindings.keys() - before.keys():
                self.exports[name] = self.bindings[name]
            return
        for child in node.named_children:
            if child.type == "export_clause":  # export { a, b as c }
                for spec in child.named_children:
                    name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                    if name is not None:
                        self.exports[self._text(alias or name)] = ("binding", self._text(name))
            elif child.type not in ("comment",) and any(c.type == "default" for c in node.children):
                self.exports["default"] = child

    def _import(self, node) -> None:
        source = node.child_by_field_name("source")
        if source is None:
            return
        specifier = self._string(source)
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":
                    self.imports[self._text(part)] = (specifier, "default")
                elif part.type == "namespace_import":
                    names = [c for c in part.named_children if c.type == "identifier"]
                    if names:
                        self.imports[self._text(names[0])] = (specifier, "*")
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                        if name is not None:
                            self.imports[self._text(alias or name)] = (specifier, self._text(name))

    # evaluation ----------------------------------------------------------------------------
    def default(self) -> Any:
        return self.export("default")

    def export(self, name: str) -> Any:
        node = self.exports.get(name)
        if node is None:
            return UNKNOWN
        if isinstance(node, tuple):  # export { binding as name }
            return self.lookup(node[1], self.bindings, exported=True)
        return self.value(node, self.bindings, exported=True)

    def lookup(self, name: str, scope: dict, exported: bool = False) -> Any:
        if name in self.imports and (scope is self.bindings or name not in scope):
            return self._imported(*self.imports[name])
        if name in scope and name not in self._evaluating:
            self._evaluating.add(name)
            try:
                return self.value(scope[name], scope, exported)
            finally:
                self._evaluating.discard(name)
        if scope is not self.bindings:
            return self.lookup(name, self.bindings, exported)
        return UNKNOWN

    def _imported(self, specifier: str, name: str) -> Any:
        if not specifier.startswith("."):
            return UNKNOWN  # a package: not read
        target = (self.path.parent / specifier).resolve()
        candidates = [target] + [target.with_name(target.name + s) for s in (".json", *SCRIPT_SUFFIXES)]
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            return UNKNOWN
        if path.suffix.lower() == ".json":
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return UNKNOWN
            return data if name in ("default", "*") else (data.get(name, UNKNOWN) if isinstance(data, dict) else UNKNOWN)
        if self.depth >= _IMPORT_DEPTH:
            return UNKNOWN
        module = _Module.load(path, self.depth + 1)
        if name == "*":
            return {n: module.export(n) for n in module.exports}
        return module.export(name)

    def value(self, node, scope: dict, exported: bool = False) -> Any:  # noqa: C901 - one case per node type
        node = self._bare(node)
        kind = node.type
        if kind == "object":
            return self._object(node, scope)
        if kind == "array":
            items: list = []
            for child in node.named_children:
                if child.type == "spread_element":
                    spread = self.value(child.named_children[0], scope) if child.named_children else UNKNOWN
                    if isinstance(spread, list):
                        items.extend(spread)
                elif child.type != "comment":
                    items.append(self.value(child, scope))
            return items
        if kind in ("string", "template_string"):
            text = self._string(node)
            return UNKNOWN if text is None else text
        if kind == "number":
            raw = self._text(node).replace("_", "")
            try:
                return int(raw, 0) if raw.isdigit() or raw[:2].lower() in ("0x", "0o", "0b") else float(raw)
            except ValueError:
                return UNKNOWN
        if kind in ("true", "false"):
            return kind == "true"
        if kind in ("null", "undefined"):
            return None
        if kind == "identifier":
            return self.lookup(self._text(node), scope, exported)
        if kind == "member_expression":
            target = self.value(node.child_by_field_name("object"), scope)
            prop = node.child_by_field_name("property")
            target = unwrap(target) if isinstance(target, Call) else target
            if isinstance(target, dict) and prop is not None:
                return target.get(self._text(prop), UNKNOWN)
            return UNKNOWN
        if kind == "subscript_expression":
            target = self.value(node.child_by_field_name("object"), scope)
            index = self.value(node.child_by_field_name("index"), scope)
            if isinstance(target, dict) and isinstance(index, str):
                return target.get(index, UNKNOWN)
            if isinstance(target, list) and isinstance(index, int) and -len(target) <= index < len(target):
                return target[index]
            return UNKNOWN
        if kind == "binary_expression":
            operator = node.child_by_field_name("operator")
            op = self._text(operator) if operator is not None else ""
            left = self.value(node.child_by_field_name("left"), scope)
            right = self.value(node.child_by_field_name("right"), scope)
            if op in ("??", "||"):
                return right if left is UNKNOWN or left is None or (op == "||" and not left) else left
            if op == "+" and isinstance(left, str) and isinstance(right, str):
                return left + right
            return UNKNOWN
        if kind == "call_expression":
            callee = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            name = self._text(callee) if callee is not None else ""
            values = tuple(self.value(a, scope) for a in (args.named_children if args is not None else ())
                           if a.type != "comment")
            return Call(name, values)
        if kind in ("function_declaration", "function_expression", "arrow_function", "function",
                    "generator_function_declaration"):
            # a configuration built by a function: what it returns, read with its own declarations
            return self._returned(node, scope) if exported else UNKNOWN
        return UNKNOWN

    def _returned(self, node, scope: dict) -> Any:
        body = node.child_by_field_name("body")
        if body is None:
            return UNKNOWN
        if body.type != "statement_block":  # () => ({...})
            return self.value(body, scope)
        local = dict(scope)
        for statement in body.named_children:
            if statement.type == "return_statement":
                returned = next((c for c in statement.named_children if c.type != "comment"), None)
                return self.value(returned, local) if returned is not None else UNKNOWN
            self._statement(statement, local, top=False)
        return UNKNOWN

    def _object(self, node, scope: dict) -> dict:
        result: dict[str, Any] = {}
        for child in node.named_children:
            if child.type == "pair":
                key = child.child_by_field_name("key")
                name = self._key(key) if key is not None else None
                if name is not None:
                    result[name] = self.value(child.child_by_field_name("value"), scope)
            elif child.type == "shorthand_property_identifier":
                result[self._text(child)] = self.lookup(self._text(child), scope)
            elif child.type == "spread_element" and child.named_children:
                spread = unwrap(self.value(child.named_children[0], scope))
                if isinstance(spread, dict):
                    result.update(spread)
        return result

    # text ----------------------------------------------------------------------------------
    def _bare(self, node):
        """The expression inside parentheses, `await`, TypeScript's `as`/`satisfies`/`!`/`<T>x`."""
        while node is not None and node.type in ("parenthesized_expression", "as_expression", "satisfies_expression",
                                                 "non_null_expression", "type_assertion", "await_expression"):
            inner = [c for c in node.named_children if c.type not in ("comment",) and not c.type.endswith("type")
                     and c.type not in ("type_identifier", "type_arguments", "predefined_type", "generic_type")]
            if not inner:
                break
            node = inner[0]
        return node

    def _key(self, key) -> str | None:
        if key.type in ("property_identifier", "identifier"):
            return self._text(key)
        if key.type == "string":
            return self._string(key)
        if key.type == "number":
            return self._text(key)
        return None  # a computed key

    def _string(self, node) -> str | None:
        parts: list[str] = []
        for child in node.named_children:
            if child.type == "string_fragment":
                parts.append(self._text(child))
            elif child.type == "escape_sequence":
                parts.append(_unescape(self._text(child)))
            elif child.type == "template_substitution":
                return None
        if node.type == "template_string":
            raw = self._text(node)[1:-1]
            if "${" in raw:
                return None
            return _unescape(raw)
        return "".join(parts)

    def _text(self, node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", errors="replace")
