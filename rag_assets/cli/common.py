"""What every `rag` command shares: its exit codes and the check of a result count."""

from __future__ import annotations

import sys

from rag_assets.vocabulary.modes import validate_top_k

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE = 0, 1, 2


def valid_count(value: int, flag: str) -> bool:
    try:
        validate_top_k(value, flag)
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return False
    return True


def jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
