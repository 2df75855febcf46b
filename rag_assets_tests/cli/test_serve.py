"""`rag serve` / `rag mcp`'s process environment: one BLAS thread unless the user chose otherwise (set
before numpy loads: the CLI's dispatch imports no numpy, system/test_serve.py checks it with -X importtime);
its flags refused as usage errors."""

import pytest

from rag_assets.cli.main import main
from rag_assets.cli.serve import SERVER_ENV, server_environment


def test_the_server_runs_numpy_on_one_blas_thread_unless_told(monkeypatch):
    assert SERVER_ENV == {"OPENBLAS_NUM_THREADS": "1"}
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    server_environment()
    import os

    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # the user's own choice wins
    server_environment()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2"


@pytest.mark.parametrize("port", ["99999", "-5", "http"])
def test_a_port_out_of_range_is_a_usage_error(port, capsys):
    """`rag serve --port 99999` said "unexpected error" (exit 1)."""
    assert main(["serve", "--port", port]) == 2
    assert "0 to 65535" in capsys.readouterr().err
