"""docs/configuration.md's table of settings, written from the declarations (rag_assets.config.settings).

    python -m rag_assets.config.docs_table           # print the table
    python -m rag_assets.config.docs_table --write   # put it into docs/configuration.md, between its markers

rag_assets_tests/config/test_docs_table.py fails while the committed page differs from what this writes.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from rag_assets.config.declaration import declared
from rag_assets.config.settings import SWITCHES, Settings

BEGIN = ("<!-- the settings table: written by `python -m rag_assets.config.docs_table --write` from "
         "rag_assets/config/settings.py; do not edit it here -->")
END = "<!-- end of the settings table -->"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
# the order the groups are listed in (each group's settings in their declared order)
GROUP_ORDER = ("paths", "ingest", "chunking", "embedding", "openai", "retrieval", "answer", "evaluation")


def shown(value) -> str:
    """A default as the table shows it."""
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    return f"`{value}`"


def table() -> str:
    rows = ["| variable | default | group | per corpus | meaning |", "|---|---|---|---|---|"]
    specs = [(f, declared(f)) for f in fields(Settings)]
    for group in GROUP_ORDER:
        for f, spec in specs:
            if spec.group == group:
                default = spec.shown_default if spec.shown_default is not None else shown(f.default)
                rows.append(f"| `{spec.env}` | {default} | `{group}` | {f'`{f.name}`' if spec.corpus else ''} | {spec.doc} |")
    for switch in SWITCHES.values():
        rows.append(f"| `{switch.env}` | unset | process switch | | {switch.doc} |")
    return "\n".join(rows) + "\n"


def page_with_table(page: str) -> str:
    """The page with the table between its markers replaced by table()."""
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[:start] + "\n" + table() + page[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the table in {PAGE}")
    args = parser.parse_args(argv)
    if not args.write:
        sys.stdout.write(table())
        return 0
    PAGE.write_text(page_with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
