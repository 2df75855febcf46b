"""The HTTP/1.1 connection `rag serve` speaks: uvicorn's h11 protocol with a bound on a request's
headers in size and in time, and its errors as one JSON line like every other.

Why: uvicorn picks httptools when it is installed, which takes headers of any size (one 96 MB header
took 13.6 s to parse, holding /health up to 6 s, before any token check), and neither protocol gives
up on a request whose headers never finish (100 slow-loris sockets stayed open for good). Here the
head of a request (request line and headers) may be at most MAX_HEADER_BYTES (431 past it) and must
arrive within HEADER_SECONDS of its first byte, or of the connection (408, closed). Between requests
uvicorn's keep-alive timeout closes an idle connection."""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEADER_BYTES = 16 * 1024  # a request line and headers; a bearer token and a browser's headers fit
HEADER_SECONDS = 10.0


class _Connection(h11.Connection):
    """h11's connection, keeping the protocol error it raised (its status: 431 for a head too large)."""

    error: h11.RemoteProtocolError | None = None

    def next_event(self):
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.error = exc
            raise


class BoundedH11Protocol(H11Protocol):
    """uvicorn's H11Protocol with the head of each request bounded in size and time (module docstring)."""

    header_seconds = HEADER_SECONDS

    def __init__(self, config, server_state, app_state, _loop=None):
        super().__init__(config, server_state, app_state, _loop)
        self.conn = _Connection(h11.SERVER, MAX_HEADER_BYTES)
        self._head_timer = None
        self._head = bytearray()  # the bytes of the request head so far (h11 checks only a head it must wait for)

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc) -> None:
        self._head_done()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self._await_head()  # a new request's first bytes: its headers have HEADER_SECONDS from now
            self._head += data[: MAX_HEADER_BYTES + 4 - len(self._head)]
            if b"\r\n\r\n" not in self._head and len(self._head) > MAX_HEADER_BYTES:
                self._refuse(431, f"the request's headers are over {MAX_HEADER_BYTES:,} bytes")
                return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._head_done()

    def _await_head(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_seconds, self._head_timed_out)

    def _head_done(self) -> None:
        self._head.clear()
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self._refuse(408, f"the request's headers did not arrive within {self.header_seconds:g} s")

    def _refuse(self, status: int, message: str) -> None:
        """Answer a request whose head h11 has not parsed (so it cannot answer it) and close."""
        self._head_done()
        body = json.dumps({"error": message}).encode()
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\nconnection: close\r\n"
                             b"content-length: %d\r\n\r\n" % (status, reason, len(body)) + body)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """A request h11 refused (malformed, or a head over MAX_HEADER_BYTES: 431), as one JSON line."""
        error = self.conn.error
        status = 431 if error is not None and error.error_status_hint == 431 else 400
        message = (f"the request's headers are over {MAX_HEADER_BYTES:,} bytes" if status == 431
                   else f"invalid HTTP request: {error or msg}")
        body = json.dumps({"error": message}).encode()
        self._head_done()
        try:
            output = self.conn.send(h11.Response(status_code=status, headers=[
                (b"content-type", b"application/json"), (b"connection", b"close"),
                (b"content-length", str(len(body)).encode())]))
            self.transport.write(output + self.conn.send(h11.Data(data=body)) + self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:  # h11 will not answer in this state: close without a word
            pass
        self.transport.close()


def bounded_protocol(header_seconds: float = HEADER_SECONDS) -> type[BoundedH11Protocol]:
    """The protocol class with this bound on the time a request's headers may take."""
    if header_seconds == BoundedH11Protocol.header_seconds:
        return BoundedH11Protocol
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"header_seconds": float(header_seconds)})
