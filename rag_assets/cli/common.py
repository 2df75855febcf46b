"""What every `rag` command shares: its exit codes, its usage error, the check of a result count and
JSON that stays JSON."""

from __future__ import annotations

import math
import sys

from rag_assets.vocabulary.modes import validate_top_k

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """What a command line asks for cannot be done (a file that is not what the flag takes, ...):
    `rag` exits 2 with this one line on stderr, and with --json the error object on stdout."""


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



def finite(value):
    """value with every NaN or infinity (a float, or one inside lists and dicts) as None: what JSON
    can hold (Python's json writes NaN and Infinity, which no JSON parser reads)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
