"""`rag query`/`rag ask` filter flags -> the filters mapping of rag_assets.retrieval.filters.

`--version` is a filter (a docs site's version): `rag` itself has no program-wide `--version` flag.

Repeating a flag (or a `--where` key) accepts any of its values; different keys must all hold. Values
are handed on as typed; rag_assets.retrieval.filters.normalise compares them as it compares the API's
(`--where level=2.0` is `{"level": 2.0}`, `--where draft=True` is `{"draft": True}`)."""

from __future__ import annotations

import argparse

FLAGS = (  # flag, filter key, help
    ("--module", "module", "only documents of this module (the first folder, or frontmatter `module`)"),
    ("--chapter", "chapter", "only documents of this chapter (the second folder, or frontmatter `chapter`)"),
    ("--doc-type", "doc_type", "only documents of this doc_type"),
    ("--tag", "tags", "only documents tagged with it (repeat: any of them)"),
    ("--path-prefix", "path_prefix", "only documents whose path (relative to the docs folder, or for a docs site's "
                                     "page to its content root) starts with it"),
    ("--lang", "language", "only documents in this language (a code: es, pt-BR; es also matches es-MX)"),
    ("--version", "version", "only pages of this version of a docs site, as the site names it (2.x, next)"),
)


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("filters (repeat a flag for any of its values; different flags must all hold)")
    for flag, key, text in FLAGS:
        group.add_argument(flag, dest=f"filter_{key}", action="append", metavar="VALUE", help=text)
    group.add_argument("--where", dest="filter_where", action="append", metavar="KEY=VALUE",
                       help="only documents whose frontmatter KEY equals VALUE (any scalar frontmatter key)")


def filters_from_args(args: argparse.Namespace) -> dict[str, list[str]] | None:
    """The filters the flags ask for (None: no filter). ValueError for a malformed --where."""
    filters: dict[str, list[str]] = {}
    for _flag, key, _text in FLAGS:
        for value in getattr(args, f"filter_{key}", None) or []:
            filters.setdefault(key, []).append(value)
    for item in getattr(args, "filter_where", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--where takes KEY=VALUE, got {item!r}")
        filters.setdefault(key.strip(), []).append(value)
    return filters or None
