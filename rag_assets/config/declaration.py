"""How a setting is declared: `setting(...)`, a dataclass field whose metadata says everything else
about it (its environment variable, group, rule, whether a corpus may set it, its line in
docs/configuration.md), and the rules a value must meet. `Settings` (rag_assets.config.settings) is the
one list of declarations; what reads, groups, checks or documents settings is derived from it.

`digest=False` is the field's repr=False: the no-op check digests repr(settings)
(rag_assets.orchestration.noop_check), so a setting about how a command runs, not about what an index
holds, stays out of it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

# a rule: the value -> what is wrong with it ("must be a positive integer"), or None when it is right
Rule = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Declared:
    """What a field's metadata says about its setting (`declared(field)`)."""

    env: str
    group: str
    doc: str
    rule: Rule | None = None
    corpus: bool = False  # a MarkdownCorpus component may set it (rag_assets.orchestration.component)
    launched: bool = False  # a run launched in another process is handed it (orchestration.resources)
    shown_default: str | None = None  # the docs table's default when the value alone would not say it


def setting(default: Any, env: str, group: str, doc: str, *, rule: Rule | None = None, corpus: bool = False,
            launched: bool = False, digest: bool = True, shown_default: str | None = None) -> Any:
    """A Settings field: its default and everything else about it (module docstring)."""
    meta = Declared(env, group, doc, rule, corpus, launched, shown_default)
    return dataclasses.field(default=default, repr=digest, metadata={"setting": meta})


def declared(f: dataclasses.Field) -> Declared:
    return f.metadata["setting"]


@dataclass(frozen=True)
class Switch:
    """A process-level switch: read from the environment at the edge that needs it (the CLI), never a
    setting, so never in the settings digest, never a corpus's nor a run's."""

    env: str
    doc: str
    flag: bool = False  # 1/true/yes turn it on; otherwise its text is its value ("" when unset)


def switch_value(switch: Switch, env) -> "str | bool":
    raw = (env.get(switch.env) or "").strip()
    return raw.lower() in ("1", "true", "yes") if switch.flag else raw


# rules


def positive(value) -> str | None:
    return None if value > 0 else "must be a positive integer"


def at_least(bound: float, note: str = "") -> Rule:
    return lambda value: None if value >= bound else f"must be >= {bound:g}{note}"


def above(bound: float) -> Rule:
    return lambda value: None if value > bound else f"must be > {bound:g}"


def between(low: float, high: float) -> Rule:
    return lambda value: None if low <= value <= high else f"must be between {low:g} and {high:g}"


def one_of(*choices: str, upper: bool = False) -> Rule:
    words = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]

    def rule(value) -> str | None:
        return None if (value.upper() if upper else value) in choices else f"must be {words}"
    return rule


def parsed_by(parse: Callable[[str], Any]) -> Rule:
    """The value must be one `parse` accepts; its ValueError says why not."""
    def rule(value) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return f": {exc}"
        return None
    return rule


def problem_message(env: str, value, problem: str) -> str:
    if problem.startswith(":"):  # the parser's own words
        return f"{env}{problem}"
    shown = repr(value) if isinstance(value, str) else value
    return f"{env} {problem}, got {shown}"
