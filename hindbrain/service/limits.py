"""Request limits at the edge of ``hindbrain serve`` and MCP over HTTP (issues 19, 27): rate per
key and per tenant, body size and read deadline, UTF-8.

A pure ASGI layer in front of the routes. For every ``/v1`` request (and ``/mcp`` over HTTP):

* **rate**: a token bucket per API key, by its parsed key id (``rate`` requests a second,
  bursts of ``burst``), and one per tenant, all its keys together; over either, 429 with
  ``Retry-After`` (whole seconds, at least 1) naming the limit. The key is parsed as the edge
  parses it (``principal.bearer_key``), so ``"Bearer" + n spaces + key`` is one bucket, not n.
  A request without a live key (none, unknown, revoked, a key id with a wrong secret) draws
  from its peer address's bucket: guessing keys is slow, and nobody can empty a tenant's
  bucket with its key id alone. The buckets are per process (a recall replica keeps its own).
* **body deadline**: a body not whole within ``body_timeout`` seconds (a trickled body holds a
  connection and a task) is answered 408 and the connection closed; nothing is acted on.
* **size**: a body over ``max_body`` bytes is refused with 413 before it is read whole (by its
  ``Content-Length``, or as it arrives).
* **whole bodies**: a client that disconnects before its body is whole gets nothing done (the
  part that came may parse, but nobody sent it as a request);
* **encoding**: a body that is not UTF-8 is refused with 422 naming the byte and its position
  (JSON is UTF-8; FastAPI's own answer was a bare "There was an error parsing the body").
"""

from __future__ import annotations

import asyncio
import math
import threading
import time

from hindbrain.service.asgi import ClientGone, read_body, send_json
from hindbrain.service.principal import Edge, Refused

PREFIX = "/v1/"
RATE = 1000.0  # requests a second per key: far above an agent's loop, a brake on a runaway one
BURST = 2000
TENANT_RATE, TENANT_BURST = 5 * RATE, 5 * BURST  # all of a tenant's keys together
BODY_TIMEOUT_S = 30.0  # the whole body: a 16 MB batch needs 0.5 MB/s
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
    """The ASGI layer (see the module docstring). ``keys`` resolves each request's key (its key
    id and tenant); without it every request is limited by its peer address."""

    def __init__(self, app, keys=None, buckets: TokenBuckets | None = None, tenants: TokenBuckets | None = None,
                 max_body: int = MAX_BODY, body_timeout: float = BODY_TIMEOUT_S, prefixes: tuple[str, ...] = (PREFIX,)):
        self.app, self.max_body, self.body_timeout, self.prefixes = app, max_body, body_timeout, prefixes
        self.buckets = buckets or TokenBuckets()
        self.tenants = tenants or TokenBuckets(TENANT_RATE, TENANT_BURST)
        self.edge = Edge(keys) if keys is not None else None

    @classmethod
    def of(cls, app, keys, settings, prefixes: tuple[str, ...] = (PREFIX,)) -> Limits:
        """The limits ``settings`` sets (``HINDBRAIN_RATE_LIMIT``, ``HINDBRAIN_TENANT_RATE_LIMIT``,
        their bursts, ``HINDBRAIN_BODY_TIMEOUT``)."""
        return cls(app, keys, TokenBuckets(settings.rate_limit, settings.rate_burst),
                   TokenBuckets(settings.tenant_rate_limit, settings.tenant_rate_burst),
                   body_timeout=settings.body_timeout, prefixes=prefixes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            return await self.app(scope, receive, send)
        if refused := self._over_rate(scope):
            return await _refuse(send, 429, *refused)
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await _refuse(send, 413, f"a request body is at most {self.max_body} bytes")
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        try:
            async with asyncio.timeout(self.body_timeout):
                body = await read_body(receive, self.max_body)
        except ClientGone:
            return  # nothing to answer, nothing acted on
        except TimeoutError:  # the connection closes with the answer: the rest of the body is never read
            return await _refuse(send, 408, f"the request body was not whole within {self.body_timeout:g} s "
                                            "(HINDBRAIN_BODY_TIMEOUT)", [(b"connection", b"close")])
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

    def _over_rate(self, scope) -> tuple[str, list] | None:
        """(the 429's detail, its headers) when the request's key or tenant is over its rate."""
        key, tenant = self.buckets_of(scope)
        for buckets, name, what in ((self.buckets, key, "per API key"), (self.tenants, tenant, "per tenant")):
            wait = buckets.take(name) if name is not None else 0.0
            if wait > 0:
                return (f"rate limit: {buckets.rate:g} requests a second {what} (bursts of {buckets.burst}); "
                        f"retry after {wait:.2f} s", [(b"retry-after", str(max(1, math.ceil(wait))).encode())])
        return None

    def buckets_of(self, scope) -> tuple[str, str | None]:
        """The request's bucket names: its key's id and its tenant, or its peer's address (no live key)."""
        if self.edge is not None:
            try:
                principal = self.edge.principal_of(scope)
                return f"key:{principal.key_id}", f"tenant:{principal.tenant}"
            except Refused:
                pass
        client = scope.get("client") or ("unknown", 0)
        return f"peer:{client[0]}", None


async def _refuse(send, status: int, detail, headers: list | None = None) -> None:
    await send_json(send, status, {"detail": detail}, headers)
