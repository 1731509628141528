"""The HTTP connection's own limits (design.md §issue-27): header size and a deadline for the headers.

uvicorn's httptools protocol puts no bound on a request's headers (8 MB were accepted, held in
memory) and no deadline on their arrival: a client sending one header byte a second held a
connection and its buffers forever (slowloris). ``GuardedHttp`` adds both, below the ASGI app:

* **size**: the request line and the headers together past ``max_header_bytes`` are answered
  431 and the connection is closed, before the rest is read;
* **deadline**: a request's headers must be whole within ``header_timeout`` seconds from their
  first byte (or from the connection, for one that sends nothing); else 408 (nothing at all
  came: just closed). Between requests uvicorn's keep-alive timeout applies as before.

The body's deadline is the ASGI layer's (``limits.Limits``: the body is read there).
``uvicorn_options`` is what every server of the package passes to ``uvicorn.Config``.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BYTES = 64 << 10
HEADER_TIMEOUT_S = 10.0
LINGER_S = 1.0  # a refused connection stays this long for its client to read why, then it is closed
KEEP_ALIVE_S = 5  # uvicorn's default, stated: the idle time between requests of a connection


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header size limit and a header deadline (above)."""

    max_header_bytes = MAX_HEADER_BYTES
    header_timeout = HEADER_TIMEOUT_S

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes, self._begun, self._in_head, self._draining = 0, 0, False, False
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_expired)

    def connection_lost(self, exc) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._draining:  # refused: what was read already is dropped until the close (``_refuse``)
            return
        begun = self._begun
        super().data_received(data)
        # Counted by the chunk, after the parser saw it: a chunk that leaves the headers unfinished
        # is all head (httptools itself buffers a header until it is whole, so its callbacks come
        # too late to count). A chunk in which a request began is not counted: it may also hold
        # the end of the previous request's body.
        if self._in_head and begun == self._begun and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse(431, f"the request line and headers are at most {self.max_header_bytes} bytes "
                                  "(HINDBRAIN_MAX_HEADER_BYTES)")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes, self._in_head = 0, True
        self._begun += 1
        if self._head_timer is None:  # a kept-alive connection's next request: its own deadline
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_expired)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._stop_head_timer()
        super().on_headers_complete()

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            return
        if self._in_head:
            self._refuse(408, f"the request's headers were not whole within {self.header_timeout:g} s "
                              "(HINDBRAIN_HEADER_TIMEOUT)")
        else:
            self.transport.close()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, status: int, message: str) -> None:
        """Answers ``status`` with ``message`` (JSON, as the API's errors), then a lingering close:
        the write side is shut at once, the connection itself ``LINGER_S`` later. A plain close
        with unread input makes the kernel send a reset, which can destroy the answer before the
        client reads it (it would see "connection reset", not why). Meanwhile nothing more is
        read (reading an 8 MB header only to drop it would cost the other clients the CPU)."""
        self._stop_head_timer()
        self._draining = True
        body = b'{"detail": "' + message.encode("ascii") + b'"}'
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n%s" % (status, reason, len(body), body))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.transport.pause_reading()
        self.loop.call_later(LINGER_S, self.transport.close)


def guarded(max_header_bytes: int = MAX_HEADER_BYTES, header_timeout: float = HEADER_TIMEOUT_S) -> type:
    """``GuardedHttp`` with these limits (uvicorn builds the protocol from the class alone)."""
    return type("GuardedHttp", (GuardedHttp,), {"max_header_bytes": max_header_bytes,
                                                 "header_timeout": header_timeout})


def uvicorn_options(settings) -> dict:
    """The ``uvicorn.Config`` options of the edge: the guarded protocol with ``settings``'
    limits (``HINDBRAIN_MAX_HEADER_BYTES``, ``HINDBRAIN_HEADER_TIMEOUT``), the keep-alive timeout,
    and h11's own size limit, should anyone choose h11."""
    return {"http": guarded(settings.max_header_bytes, settings.header_timeout), "timeout_keep_alive": KEEP_ALIVE_S,
            "h11_max_incomplete_event_size": settings.max_header_bytes}
