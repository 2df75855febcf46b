"""What every `rag` command shares: its exit codes, its usage error, the check of a result count,
JSON that stays JSON, and where the library's log lines go."""

from __future__ import annotations

import logging
import math
import os
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


def library_log_lines() -> None:
    """The package's log lines on stderr as ``rag: message``, one line each: warnings (e.g. a search
    snapshot built once from the store). Errors are the command's to report, in its own one line (an
    exception it prints, an answer's error): the library's ERROR records of the same failure are left
    out unless RAG_LOG_LEVEL asks for them (RAG_LOG_LEVEL=INFO shows everything from INFO up)."""
    logger = logging.getLogger("rag_assets")
    if any(isinstance(h, _StderrLines) for h in logger.handlers):
        return
    from rag_assets.config import ENV_VARS

    wanted = os.environ.get(ENV_VARS["log_level"], "").strip().upper()
    level = logging.getLevelName(wanted) if wanted else logging.WARNING
    handler = _StderrLines()
    handler.setFormatter(logging.Formatter("rag: %(message)s"))
    handler.setLevel(level if isinstance(level, int) else logging.WARNING)
    if not wanted:
        handler.addFilter(lambda record: record.levelno < logging.ERROR)
    logger.addHandler(handler)
    logger.setLevel(min(logger.getEffectiveLevel(), handler.level))


class _StderrLines(logging.Handler):
    """Each record as a line on the process's stderr as it is when the record comes (not when the
    handler was made)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:  # noqa: BLE001 - logging's own rule: a failed log line is reported, never raised
            self.handleError(record)
