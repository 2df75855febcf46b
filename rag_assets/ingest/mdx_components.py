"""What an MDX component shows a reader, when it is not a snippet or a callout (rag_assets.ingest.mdx
handles those): the rule for every component, known or not, and the known ones that carry their text
in attributes.

The rule (a component whose source we do not have is rendered by it):

- its children stay (the renderer unwraps them);
- the attributes a reader sees as text stay, as their own paragraphs when the component stands on its
  own lines (``title``, ``label``, ``description``, ``caption``, ``summary``, ``heading``,
  ``subtitle``, ``text``: ``<Card title="…" description="…">``, ``<TabItem label="…">``,
  ``<Badge text="…"/>``); inline, only those shown in place (a tooltip's text shows on hover only).
  An image's ``alt`` is not seen (only when the picture fails to load): it is not text;
- a string expression is text (``title={"…"}``, ``{' '}``); another expression is the site's code;
- a component that shows nothing of the page's own text (no children, no text attribute) or is fed an
  imported value (``<Showcase sites={sites} />``, ``import sites from './sites.json'``) renders text
  from the site's own code, which is not in the page: it is counted by name (`Shown.unrendered`), never
  indexed as code. Pictures (``<Image>``, ``<Icon>``, ``<Video>`` …) show no text and are not counted.

Known components that carry text in attributes:

- tabs of commands: an attribute named after a package manager or tool (``<CommandTabs npm="npm i x"
  yarn="yarn add x"/>``, ``<PackageManagerTabs pnpm="…">``), or ``command``/``cmd``, is a tab of
  that label and a shell code block; a child given to a tabs component as a slot (``<UIFrameworkTabs>
  <Fragment slot="react">``, or any ``slot`` named after a package manager) shows its name as the
  tab's label;
- code components: ``<Code code={`…`} lang="js" title="x.js"/>`` (Starlight, expressive-code) is a fenced
  code block; ``<CodeBlock language="js" title="…">…</CodeBlock>`` (Docusaurus) takes its children as
  the code (`code_children`);
- tabs with their labels in a list: ``<Tabs items={['npm', 'yarn']}>`` (Nextra) shows the labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.ingest.mdx_lexer import Tag, js_string, js_strings

# Attribute values a reader sees as text on the rendered page.
PROSE_ATTRIBUTES = ("title", "label", "description", "caption", "summary", "heading", "subtitle", "text", "tip",
                    "tooltip")
# ... of those, the ones shown where an inline component stands (a tooltip's text only shows on hover)
SHOWN_INLINE = frozenset(PROSE_ATTRIBUTES) - {"tip", "tooltip"}
# Package managers and tools whose commands tab components show, one tab per attribute.
COMMAND_TOOLS = frozenset({
    "npm", "npx", "yarn", "pnpm", "pnpx", "bun", "bunx", "deno", "cargo", "pip", "pipx", "uv", "poetry", "conda",
    "mamba", "brew", "homebrew", "apt", "dnf", "yum", "pacman", "apk", "choco", "scoop", "winget", "go", "gem",
    "bundle", "composer", "dotnet", "nuget", "mix", "gradle", "maven", "mvn", "sbt", "helm", "kubectl", "docker",
    "podman", "nix", "spack", "vcpkg", "conan", "swift", "flutter", "dart", "pub", "rye", "pdm", "hatch", "shell",
    "bash", "zsh", "powershell", "cmd", "command",
})
CODE_COMPONENTS = frozenset({"Code"})  # the code in a `code` attribute
CODE_CHILDREN = frozenset({"CodeBlock"})  # the code in its children
# Components that show a picture, never text: not counted as unrendered.
PICTURES = frozenset({"image", "img", "picture", "icon", "video", "audio", "svg", "logo", "youtube", "vimeo",
                      "iframe", "embed", "lottie", "figureimage", "themedimage", "idealimage"})
_LANGUAGE = re.compile(r"^[\w+#.-]{1,30}$")


@dataclass
class Shown:
    """What a tag shows: `text` where it stood, as lines of its own (`block`) or inline; a component
    that renders text from the site's code is named in `unrendered`."""

    text: str = ""
    block: bool = False
    unrendered: str | None = None


def shown(tag: Tag, own_line: bool, imported: frozenset[str] | set[str], parent: str | None = None) -> Shown:
    """What `tag` (an opening or self-closing tag) shows a reader (the module docstring); `parent`: the
    component it sits in, if any."""
    name = tag.name
    if name in CODE_COMPONENTS and "code" in tag.attrs:
        code = tag.attrs.get("code")
        if code is None:
            return Shown(unrendered=name)
        return Shown(code_block(code, _language(tag), tag.attrs.get("title")), block=True)
    commands = [(k, v) for k, v in tag.attrs.items() if k.lower() in COMMAND_TOOLS and v]
    if commands and _is_component(name):
        return Shown(command_tabs(commands), block=True)
    texts = [v for k, v in tag.attrs.items() if k.lower() in PROSE_ATTRIBUTES and v]
    slot = tag.attrs.get("slot")
    if slot and (slot.lower() in COMMAND_TOOLS or (parent or "").endswith("Tabs")):
        texts.insert(0, slot)  # a tab (of a package manager's commands): its label
    items = js_strings(tag.exprs["items"]) if "items" in tag.exprs else None
    if items:
        texts.append(" · ".join(items))
    unrendered = _unrendered(tag, texts, imported)
    if not texts:
        return Shown(unrendered=unrendered)
    if own_line:
        return Shown("\n\n".join(texts), block=True, unrendered=unrendered)
    if tag.kind == "self" and not _is_component(name):
        return Shown()  # an HTML element's title is a tooltip (<abbr title>, <iframe title>)
    inline = [v for k, v in tag.attrs.items() if k.lower() in SHOWN_INLINE and v] if _is_component(name) else []
    return Shown(" ".join(inline), unrendered=unrendered)


def _unrendered(tag: Tag, texts: list[str], imported: frozenset[str] | set[str]) -> str | None:
    """The component's name when it renders text from the site's code (the module docstring)."""
    if not _is_component(tag.name) or tag.name.lower() in PICTURES:
        return None
    fed = any(_names_in(expr) & imported for expr in tag.exprs.values())
    return tag.name if fed or (tag.kind == "self" and not texts) else None


def _names_in(expr: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_$][\w$]*", expr))


def _is_component(name: str) -> bool:
    return name[:1].isupper()


def _language(tag: Tag) -> str:
    lang = tag.attrs.get("lang") or tag.attrs.get("language") or ""
    return lang if _LANGUAGE.match(lang) else ""


def code_block(code: str, language: str = "", title: str | None = None) -> str:
    """A fenced code block of `code` (a fence longer than any backtick run in it)."""
    code = code.strip("\n")
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    info = language + (f' title="{title}"' if title else "")
    return f"{fence}{info}\n{code}\n{fence}"


def command_tabs(commands: list[tuple[str, str]]) -> str:
    """Each tool's command as a tab: its label, then a shell code block."""
    return "\n\n".join(f"{label}\n\n{code_block(command, 'sh')}" for label, command in commands)


def code_of_children(children: str) -> str | None:
    """The code a ``<CodeBlock>``'s children hold: a string expression's value, or the text itself
    (dedented); None for another expression (the site's code)."""
    inner = children.strip()
    if inner.startswith("{") and inner.endswith("}"):
        return js_string(inner[1:-1])
    lines = children.strip("\n").split("\n")
    margin = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[margin:] for line in lines)


def takes_code_children(tag: Tag) -> bool:
    return tag.kind == "open" and tag.name in CODE_CHILDREN


def code_children_block(tag: Tag, children: str) -> Shown:
    code = code_of_children(children)
    if code is None:
        return Shown(unrendered=tag.name)
    return Shown(code_block(code, _language(tag), tag.attrs.get("title")), block=True)
