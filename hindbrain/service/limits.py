"""Request limits at the edge of ``hindbrain serve`` (issue 19): per-key rate, body size, UTF-8.

A pure ASGI layer in front of the routes. For every ``/v1`` request:

* **rate**: a token bucket per API key (``rate`` requests a second, bursts of ``burst``); over
  it, 429 with ``Retry-After`` (whole seconds, at least 1) naming the limit. The key is read as
  sent, before it is checked: an unknown key is rate-limited like a known one, so guessing keys
  is slow too. The buckets are per process (a recall replica keeps its own).
* **size**: a body over ``max_body`` bytes is refused with 413 before it is read whole (by its
  ``Content-Length``, or as it arrives).
* **whole bodies**: a client that disconnects before its body is whole gets nothing done (the
  part that came may parse, but nobody sent it as a request);
* **encoding**: a body that is not UTF-8 is refused with 422 naming the byte and its position
  (JSON is UTF-8; FastAPI's own answer was a bare "There was an error parsing the body").
"""

from __future__ import annotations

import math
import threading
import time

from hindbrain.service.asgi import ClientGone, read_body, send_json

PREFIX = "/v1/"
RATE = 1000.0  # requests a second per key: far above an agent's loop, a brake on a runaway one
BURST = 2000
MAX_BODY = 16 << 20  # a batch of 10,000 events of ~1 KB fits
KEYS = 10_000  # buckets kept before the full ones (idle keys) are dropped: guessed keys cost no memory


class TokenBuckets:
    """``rate`` tokens a second per key, up to ``burst``; ``take`` says how long to wait (0: go)."""

    def __init__(self, rate: float = RATE, burst: int = BURST, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                if len(self._buckets) > KEYS:
                    self._drop_full(now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def _drop_full(self, now: float) -> None:
        """Forget the buckets that have refilled: a new one starts full, so nothing changes."""
        self._buckets = {k: (t, at) for k, (t, at) in self._buckets.items()
                         if t + (now - at) * self.rate < self.burst}


class Limits:
    """The ASGI layer (see the module docstring)."""

    def __init__(self, app, buckets: TokenBuckets | None = None, max_body: int = MAX_BODY):
        self.app, self.buckets, self.max_body = app, buckets or TokenBuckets(), max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            return await self.app(scope, receive, send)
        auth = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        wait = self.buckets.take(auth.decode("latin-1"))
        if wait > 0:
            return await _refuse(send, 429, f"rate limit: {self.buckets.rate:g} requests a second per API key "
                                            f"(bursts of {self.buckets.burst}); retry after {wait:.2f} s",
                                 [(b"retry-after", str(max(1, math.ceil(wait))).encode())])
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await _refuse(send, 413, f"a request body is at most {self.max_body} bytes")
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        try:
            body = await read_body(receive, self.max_body)
        except ClientGone:
            return  # nothing to answer, nothing acted on
        if body is None:
            return await _refuse(send, 413, f"a request body is at most {self.max_body} bytes")
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return await _refuse(send, 422, [{"loc": ["body"], "type": "json_invalid",
                                              "msg": f"the body is not UTF-8: byte 0x{body[exc.start]:02x} at "
                                                     f"position {exc.start}"}])
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


def limits_of(settings) -> TokenBuckets:
    """The per-key buckets of ``settings`` (``HINDBRAIN_RATE_LIMIT``, ``HINDBRAIN_RATE_BURST``)."""
    return TokenBuckets(settings.rate_limit, settings.rate_burst)


async def _refuse(send, status: int, detail, headers: list | None = None) -> None:
    await send_json(send, status, {"detail": detail}, headers)
