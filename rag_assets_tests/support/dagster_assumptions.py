"""`assumption(name)`: a block that checks one assumption rag_assets.orchestration.internals makes
about Dagster; when it fails, the test fails naming the assumption and the Dagster version."""

from __future__ import annotations

from contextlib import contextmanager

import pytest


@contextmanager
def assumption(name: str):
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - any failure here is the assumption breaking
        from dagster.version import __version__

        pytest.fail(f"Dagster {__version__} breaks the assumption {name} "
                    f"(rag_assets/orchestration/internals): {type(exc).__name__}: {exc}", pytrace=True)
