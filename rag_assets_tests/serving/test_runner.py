"""The bind rules of `rag serve`: loopback addresses need nothing, any other one a bearer token; a port
in use is one line (the process-level checks: system/test_serve.py)."""

from __future__ import annotations

import pytest

from rag_assets.errors import ConfigurationError
from rag_assets.serving.runner import bind, check_bind, is_loopback


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True),
                                            ("::1", True), ("[::1]", True), ("0.0.0.0", False), ("::", False),
                                            ("192.168.1.5", False), ("example.org", False)])
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


def test_a_non_loopback_bind_needs_a_token():
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "s3cret")
    with pytest.raises(ConfigurationError, match="RAG_SERVE_TOKEN"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ConfigurationError, match="RAG_SERVE_TOKEN"):
        check_bind("192.168.1.5", "")


def test_a_port_in_use_is_one_line():
    first = bind("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        with pytest.raises(ConfigurationError, match=f"cannot listen on 127.0.0.1:{port}"):
            bind("127.0.0.1", port)
    finally:
        first.close()


@pytest.mark.parametrize("port", [99999, -1, 65536])
def test_a_port_out_of_range_is_a_configuration_error(port):
    """--port 99999 was "unexpected error: OverflowError" (exit 1), not a usage error."""
    with pytest.raises(ConfigurationError, match="0 to 65535"):
        bind("127.0.0.1", port)
