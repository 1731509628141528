"""``Client`` and ``AsyncClient``: the ``Brain`` API over ``hindbrain serve`` (design.md §issue-20).

    from hindbrain import Client
    with Client("http://127.0.0.1:8080", api_key="hb_...") as client:
        pack = client.recall(tenant="acme", agent="agent-7", query="...", budget_tokens=400)
        print(pack.render())

The methods take ``Brain``'s arguments and return its types: ``perceive`` the event id,
``recall`` a ``RecallPack`` of ``Recalled`` items (``render()`` is the server's ``prompt``),
``explain`` the list of ``{"position", "record_type", "relations", "record"}``, ``sql`` rows
as dicts (values as JSON carries them: a ``DateTime`` is a string). ``AsyncClient`` has the
same methods; each returns an awaitable.

**The tenant is the API key's.** A body cannot name one, so the methods take ``tenant=`` for
``Brain``'s signatures and send it as ``X-Hindbrain-Tenant``, never in the body: the server
goes on when it is the key's tenant and refuses the call otherwise (``InvalidInput`` on
``tenant``, nothing written), so code written for a multi-tenant ``Brain`` cannot write one
tenant's events with another tenant's key. ``Client(..., tenant=)`` says it for every call;
a call naming no tenant is the key's.

**Errors** are ``Brain``'s where ``Brain`` has one: a refused field is ``InvalidInput`` (a
``ValueError``) naming it, as a 422 or 413 answer says. The others derive from
``ServiceError``: ``AuthenticationError`` (401: no valid key), ``PermissionDenied`` (403: the
key's role does not allow the route; also a ``PermissionError``), ``NotFound`` (404; a
``LookupError``), ``RateLimited`` (429, after the retries), ``ServiceUnavailable`` (502/503/504,
or no answer at all; a ``ConnectionError``). Each carries ``status``, ``detail`` and the
``request_id`` the server logged.

**Retries** (``RetryPolicy``: bounded attempts, exponential backoff with jitter, ``Retry-After``
honoured up to ``max_wait_s``) happen only where sending a call twice cannot count twice:

* a 429, and a connection that never opened, are always retried: nothing reached the brain
  (the rate limit refuses before a route runs);
* a 502/503/504, and a request sent whose answer never came (timeout, dropped connection),
  are retried only for repeatable calls: reads (recall, explain, sql, traits), and the writes
  made idempotent by their id: ``perceive`` / ``perceive_many`` get a client-made
  ``event_id`` and ``learn`` a ``fragment_id`` when the caller gave none, and the brain keeps
  one event (one unit) per id. A recall retried after a lost answer leaves the lost one's
  record in the log, unused.
* ``outcome``, ``approve``, ``invalidate`` and ``hindsight`` carry no id of the caller's: a
  second one would count twice, so they are not sent again once they may have arrived, and
  the error says the call may have been applied.

One description of each call (``Call``: route, body, what its answer becomes, whether it may
be sent twice) serves both clients; only sending it differs (httpx's ``Client`` or
``AsyncClient``), and the retry decisions are one pure state machine (``Exchange``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from operator import itemgetter
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from hindbrain.recall.pack import RecallPack
from hindbrain.schemas.api import (
    ApproveInput,
    InvalidateInput,
    InvalidInput,
    LearnInput,
    OutcomeInput,
    PerceiveInput,
    RecallInput,
    validated,
    validated_in,
)
from hindbrain.schemas.records import new_id
from hindbrain.streams.log import Position

log = logging.getLogger("hindbrain.client")

__all__ = ["AsyncClient", "AuthenticationError", "Client", "NotFound", "PermissionDenied", "RateLimited",
           "RetryPolicy", "ServiceError", "ServiceUnavailable"]


# -- errors --------------------------------------------------------------------------------------
class ServiceError(Exception):
    """The service refused a call or could not be reached. ``status`` is the HTTP status (None:
    no answer came), ``detail`` the answer's detail, ``request_id`` the id the server logged."""

    def __init__(self, operation: str, message: str, status: int | None = None, detail: Any = None,
                 request_id: str | None = None):
        self.operation, self.status, self.detail, self.request_id = operation, status, detail, request_id
        super().__init__(f"{operation}: {message}" + (f" (request {request_id})" if request_id else ""))


class AuthenticationError(ServiceError):
    """401: the API key is missing, unknown or revoked."""


class PermissionDenied(ServiceError, PermissionError):
    """403: the key is valid, but its role does not allow this route."""


class NotFound(ServiceError, LookupError):
    """404: no such route or resource on this server."""


class RateLimited(ServiceError):
    """429 after the retries: the key sent more than the server's per-key rate.
    ``retry_after`` is the server's ``Retry-After`` in seconds."""

    def __init__(self, *args, retry_after: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class ServiceUnavailable(ServiceError, ConnectionError):
    """502/503/504, or no answer at all (connection refused, timeout, dropped), after the retries."""


_STATUS_ERRORS: dict[int, type[ServiceError]] = {401: AuthenticationError, 403: PermissionDenied, 404: NotFound,
                                                 429: RateLimited, 502: ServiceUnavailable, 503: ServiceUnavailable,
                                                 504: ServiceUnavailable}
_UNAVAILABLE = frozenset({502, 503, 504})
# no connection was made: the request cannot have reached the brain
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# sent, answer lost: the brain may have applied it
_ANSWER_LOST = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


# -- retries -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """How often and after how long a call is sent again (see the module docstring for which).

    ``attempts``: sends at most, the first included (1: never again). The wait before the
    n-th retry is ``backoff_s * 2**(n-1)``, at most ``max_wait_s``, times a random factor in
    [0.5, 1] so that many clients refused together do not come back together. A
    ``Retry-After`` answer is waited (plus up to ``backoff_s`` of jitter); one longer than
    ``max_wait_s`` is not waited for: the error is raised with its ``retry_after``.

    ``deadline_s`` bounds a call as a whole: no attempt is started, and no attempt waits for its
    answer, past that many seconds after the first was sent (a hung server costs a caller
    ``deadline_s``, not ``attempts`` times the read timeout); None: no deadline.
    """

    attempts: int = 4
    backoff_s: float = 0.2
    max_wait_s: float = 10.0
    deadline_s: float | None = 10.0

    def wait(self, attempt: int, retry_after: float | None, left_s: float | None = None) -> float | None:
        """Seconds to wait before sending again after ``attempt`` (0: the first) failed, or
        None: give up (also when the wait would end past the deadline, ``left_s`` from now)."""
        if attempt + 1 >= self.attempts:
            return None
        if retry_after is not None:
            wait = retry_after + random.uniform(0, self.backoff_s) if retry_after <= self.max_wait_s else None
        else:
            wait = min(self.max_wait_s, self.backoff_s * 2 ** attempt) * random.uniform(0.5, 1.0)
        return None if wait is None or (left_s is not None and wait >= left_s) else wait


def retry_after_s(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (delta-seconds or an HTTP date), else None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


# -- one call, and what its answer becomes ---------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One request of the API: ``answer`` turns a 2xx JSON answer into the ``Brain`` method's
    return value; ``repeatable``: sending it twice is the same as once (see the module docstring)."""

    operation: str
    method: str
    path: str
    answer: Callable[[Any], Any]
    body: bytes | None = None
    params: dict | None = None
    repeatable: bool = True
    tenant: str | None = None  # the tenant the caller means (the server checks it is the key's)
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # the same on every attempt

    @property
    def headers(self) -> dict:
        return {"X-Request-ID": self.request_id, **({"Content-Type": "application/json"} if self.body else {}),
                **({"X-Hindbrain-Tenant": self.tenant} if self.tenant else {})}


def retryable(call: Call, outcome: httpx.Response | httpx.TransportError) -> bool:
    """Whether ``call`` may be sent again after ``outcome`` (an error answer or no answer)."""
    if isinstance(outcome, httpx.Response):
        return outcome.status_code == 429 or (outcome.status_code in _UNAVAILABLE and call.repeatable)
    return isinstance(outcome, _NEVER_SENT) or (isinstance(outcome, _ANSWER_LOST) and call.repeatable)


def error_of(call: Call, outcome: httpx.Response | httpx.TransportError) -> Exception:
    """The exception a failed attempt stands for (``InvalidInput`` for a refused field)."""
    if isinstance(outcome, httpx.TransportError):
        message = f"no answer: {type(outcome).__name__}: {outcome}"
        if isinstance(outcome, _ANSWER_LOST) and not call.repeatable:
            message += "; the request may have reached the service and been applied (not sent again: it has no id)"
        return ServiceUnavailable(call.operation, message, request_id=call.request_id)
    status, detail = outcome.status_code, _detail(outcome)
    if status in (413, 422):
        return invalid_input(call.operation, detail)
    kind = _STATUS_ERRORS.get(status, ServiceError)
    extra = {"retry_after": retry_after_s(outcome.headers.get("retry-after"))} if kind is RateLimited else {}
    return kind(call.operation, f"{status}: {detail}", status=status, detail=detail,
                request_id=outcome.headers.get("x-request-id", call.request_id), **extra)


_SDK_PREFIX = re.compile(r"^[\w ]+: field '[^']*': ")  # the server's message is str(InvalidInput) already


def invalid_input(operation: str, detail: Any) -> InvalidInput:
    """``InvalidInput`` naming the field of a 422 answer (``{"detail": [{"loc": ["body", ...],
    "msg"}]}``), as ``Brain`` would have raised it; ``events.N.x`` of a batch is field ``x`` of
    "event #N", as ``Brain.perceive_many`` says it."""
    if not (isinstance(detail, list) and detail and isinstance(detail[0], dict)):
        return InvalidInput(operation, "(input)", str(detail))
    loc = [str(p) for p in detail[0].get("loc", [])][1:]  # past "body"
    field_name, message = ".".join(loc) or "(input)", _SDK_PREFIX.sub("", str(detail[0].get("msg", "")))
    if len(loc) > 2 and loc[0] == "events" and loc[1].isdigit():
        field_name, message = ".".join(loc[2:]), f"event #{loc[1]}: {message}"
    return InvalidInput(operation, field_name, message)


def _detail(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content).get("detail", response.text)
    except (orjson.JSONDecodeError, AttributeError):
        return response.text


class Exchange:
    """One call's attempts, without IO: after each one, ``after`` says how long to wait before
    sending it again, or None when it is settled; then ``result()`` returns or raises."""

    def __init__(self, call: Call, retry: RetryPolicy, now: Callable[[], float] = time.monotonic):
        self.call, self.retry, self.attempt, self.now = call, retry, 0, now
        self.deadline = None if retry.deadline_s is None else now() + retry.deadline_s
        self._value: Any = None
        self._error: Exception | None = None

    def left_s(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        return None if self.deadline is None else max(0.0, self.deadline - self.now())

    def timeout(self, configured: httpx.Timeout) -> httpx.Timeout:
        """The next attempt's timeouts: the client's, cut to what the deadline leaves."""
        left = self.left_s()
        if left is None:
            return configured
        cut = {name: left if value is None else min(value, left)
               for name, value in configured.as_dict().items()}
        return httpx.Timeout(**cut)

    def after(self, outcome: httpx.Response | httpx.TransportError) -> float | None:
        if isinstance(outcome, httpx.Response) and outcome.is_success:
            self._value, self._error = self._answer(outcome), None
            return None
        self._error = error_of(self.call, outcome)
        retry_after = retry_after_s(outcome.headers.get("retry-after")) if isinstance(outcome, httpx.Response) \
            else None
        wait = self.retry.wait(self.attempt, retry_after, self.left_s()) if retryable(self.call, outcome) else None
        self.attempt += 1
        if wait is not None:
            log.info("%s; attempt %d of %d in %.2f s", self._error, self.attempt + 1, self.retry.attempts, wait)
        return wait

    def _answer(self, response: httpx.Response) -> Any:
        try:
            return self.call.answer(orjson.loads(response.content))
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise ServiceError(self.call.operation, f"unexpected answer ({type(exc).__name__}: {exc}): "
                               f"{response.text[:200]}", status=response.status_code,
                               request_id=self.call.request_id) from None

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


# -- the API, once for both clients ----------------------------------------------------------------
def _explained(answer: dict) -> list[dict]:
    return [{**entry, "position": Position(*entry["position"])} for entry in answer["chain"]]


def _stored_items(answer: dict) -> list[dict]:
    return [{**i, "namespace": tuple(i["namespace"]), "created_at": datetime.fromisoformat(i["created_at"]),
             "updated_at": datetime.fromisoformat(i["updated_at"])} for i in answer["items"]]


DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
# The models ``Brain`` validates each call's fields with: the client checks them before sending.
_MODELS = {"perceive": PerceiveInput, "learn": LearnInput, "recall": RecallInput, "outcome": OutcomeInput,
           "approve": ApproveInput, "invalidate": InvalidateInput}
# how far ahead of the clock a ``ts`` may be is the server's setting (``clock_skew_seconds``): it checks that
_SERVERS_CLOCK = {"clock_skew": None}
_KEYS_TENANT = "the-api-keys-tenant"  # stands for the key's tenant while checking a call that names none


def _check_tenant(operation: str, tenant: Any) -> None:
    """``Brain``'s rule for a tenant (a non-blank name), for the calls that have no model."""
    validated(RecallInput, operation, tenant=tenant, query="-")


def checked(operation: str, fields: dict, tenant: str | None) -> None:
    """``InvalidInput`` naming the field, as ``Brain`` raises it, before anything is sent. A
    call naming no tenant means the key's: the one difference from ``Brain``, whose
    ``tenant`` is required (docs/clients.md)."""
    model = _MODELS.get(operation)
    if model is not None:
        validated_in(model, operation, {**fields, "tenant": _KEYS_TENANT if tenant is None else tenant}, _SERVERS_CLOCK)
    elif tenant is not None:
        _check_tenant(operation, tenant)


class _Api:
    """The ``Brain`` methods as ``Call`` s; a subclass sends them (``_send``) on its httpx client."""

    _http_class: type = httpx.Client

    def __init__(self, url: str, api_key: str, *, tenant: str | None = None,
                 timeout: float | httpx.Timeout = DEFAULT_TIMEOUT, retry: RetryPolicy | None = None):
        """``url``: where ``hindbrain serve`` listens; ``api_key``: a key from ``hindbrain keys
        create`` (it decides the tenant); ``tenant``: the tenant meant when a call names none
        (the server refuses a call meaning another than the key's); ``timeout``: seconds per
        attempt (or an ``httpx.Timeout``; default: 3 s to connect, 10 s for the rest);
        ``retry``: the ``RetryPolicy`` (default: 4 attempts within a 10 s deadline)."""
        if tenant is not None:
            _check_tenant("Client", tenant)
        self.url, self.tenant, self.retry = url, tenant, retry or RetryPolicy()
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else \
            httpx.Timeout(timeout, connect=min(3.0, timeout))
        self._http = self._http_class(base_url=url, timeout=self.timeout, headers={
            "Authorization": f"Bearer {api_key}", "Accept": "application/json", "User-Agent": "hindbrain-client"})

    def _send(self, call: Call):
        raise NotImplementedError

    # -- writing
    def perceive(self, **fields) -> str:
        """``Brain.perceive``: returns the event id. Without ``event_id`` the client makes one,
        so that a retry of a request whose answer was lost is the same event."""
        fields["event_id"] = fields.get("event_id") or new_id("perception")
        return self._send(self._call("perceive", "POST", "/v1/perceive", itemgetter("event_id"), fields))

    def perceive_many(self, events: Iterable[dict]) -> list[str]:
        """``Brain.perceive_many``: one append of all the events, or ``InvalidInput`` naming the
        first bad one ("event #N") and nothing written. Each gets an ``event_id`` as in
        ``perceive``. A batch is one key's, so its events name one tenant (or none)."""
        batch = [{**event, "event_id": event.get("event_id") or new_id("perception")} for event in events]
        tenant = batch_tenant(batch, self.tenant)
        for n, event in enumerate(batch):
            try:
                checked("perceive", {k: v for k, v in event.items() if k != "tenant"}, tenant)
            except InvalidInput as exc:  # Brain.perceive_many's words: the field, and which event
                message = str(exc).removeprefix(f"{exc.operation}: field {exc.field!r}: ")
                raise InvalidInput(exc.operation, exc.field, f"event #{n}: {message}") from None
        events = [{k: v for k, v in event.items() if k != "tenant"} for event in batch]
        return self._send(self._call("perceive", "POST", "/v1/perceive/batch", itemgetter("event_ids"),
                                     {"events": events}, tenant=tenant, check=False))

    def learn(self, **fields) -> str:
        """``Brain.learn``: returns the fragment id (made by the client when not given, so a
        retry proposes the same unit)."""
        fields["fragment_id"] = fields.get("fragment_id") or new_id("cognition")
        return self._send(self._call("learn", "POST", "/v1/learn", itemgetter("fragment_id"), fields))

    def outcome(self, **fields) -> str:
        """``Brain.outcome``: returns the outcome id. Not sent again once it may have arrived
        (an outcome counts each time)."""
        return self._send(self._call("outcome", "POST", "/v1/outcome", itemgetter("outcome_id"), fields,
                                     repeatable=False))

    # -- recalling
    def recall(self, **fields) -> RecallPack:
        """``Brain.recall``: the ``RecallPack`` (its ``render()`` is the block for the prompt)."""
        return self._send(self._call("recall", "POST", "/v1/recall", RecallPack.from_dict, fields))

    def explain(self, item_id: str, *, tenant: str | None = None) -> list[dict]:
        """``Brain.explain``: the key's tenant's records behind ``item_id``, oldest first."""
        return self._send(self._call("explain", "GET", f"/v1/explain/{quote(item_id, safe='')}", _explained,
                                     tenant=tenant))

    def sql(self, query: str, parameters: dict | None = None, *, tenant: str | None = None) -> list[dict]:
        """``Brain.sql`` over the key's tenant's views: rows as dicts."""
        return self._send(self._call("sql", "POST", "/v1/sql", itemgetter("rows"),
                                     {"query": query, "parameters": parameters or {}}, tenant=tenant))

    def views(self, tenant: str | None = None) -> dict[str, list[dict]]:
        """``Brain.views``: the views the key's tenant's SQL reads and their columns."""
        return self._send(self._call("views", "GET", "/v1/views", itemgetter("views"), tenant=tenant))

    def stored(self, *, tenant: str | None = None, prefix: Iterable[str] = (), key: str | None = None) -> list[dict]:
        """``Brain.stored``: a key-value store's live items under ``prefix`` (an agent key may)."""
        return self._send(self._call("stored", "POST", "/v1/store/items", _stored_items,
                                     {"prefix": list(prefix), "key": key}, tenant=tenant))

    # -- the human decisions and the jobs
    def pending_traits(self, tenant: str | None = None) -> list[dict]:
        """``Brain.pending_traits``: the proposed traits waiting for a verdict."""
        return self._send(self._call("pending_traits", "GET", "/v1/traits", itemgetter("traits"), tenant=tenant))

    def approve(self, **fields) -> str:
        """``Brain.approve``: a human's verdict on a proposed trait; returns the decision id."""
        return self._send(self._call("approve", "POST", "/v1/approve", itemgetter("decision_id"), fields,
                                     repeatable=False))

    def invalidate(self, **fields) -> str:
        """``Brain.invalidate``: a unit an environment change made untrue; returns the decision id."""
        return self._send(self._call("invalidate", "POST", "/v1/invalidate", itemgetter("decision_id"), fields,
                                     repeatable=False))

    def hindsight(self, when_due: bool = False) -> dict:
        """``Brain.hindsight`` on the server (for its whole brain): ``{"skipped": {job: why},
        "decisions": how many}`` (the HTTP answer counts the decisions; ``explain`` and ``sql``
        read them). A large brain's run may need a longer ``timeout``."""
        return self._send(self._call("hindsight", "POST", "/v1/hindsight", dict, repeatable=False,
                                     params={"when_due": str(when_due).lower()}))

    def _call(self, operation: str, method: str, path: str, answer: Callable[[Any], Any], fields: dict | None = None,
              *, tenant: str | None = None, check: bool = True, **options) -> Call:
        """The ``Call``: ``fields`` as the JSON body, their ``tenant`` (or ``tenant``, or the
        client's) as the header the server checks against the key's."""
        if fields is not None and "tenant" in fields:
            named = fields.pop("tenant")
            tenant = tenant if named is None else named
        tenant = self.tenant if tenant is None else tenant
        if check:  # a batch checked its events itself
            checked(operation, fields or {}, tenant)
        body = None if fields is None else _json(operation, fields)
        return Call(operation, method, path, answer, body, tenant=tenant, **options)


def batch_tenant(events: list[dict], default: str | None) -> str | None:
    """The one tenant of a batch (``Brain.perceive_many``'s rule: a batch is one tenant's), or
    None for the key's; ``InvalidInput`` on ``tenant`` naming the first event of another."""
    tenants = [event.get("tenant", default) for event in events]
    first = next((t for t in tenants if t is not None), None)
    for n, tenant in enumerate(tenants):
        if tenant is not None and tenant != first:
            raise InvalidInput("perceive", "tenant", f"event #{n}: a batch is one tenant's; this one names "
                                                     f"{tenant!r} after {first!r} (send one batch per tenant)")
    return first


def _json(operation: str, body: dict) -> bytes:
    """``body`` as JSON (datetimes as RFC 3339), or ``InvalidInput`` naming the field that is not JSON."""
    try:
        return orjson.dumps(body)
    except TypeError as exc:
        name = _unsendable(body) or "(input)"
        raise InvalidInput(operation, name, f"cannot be sent as JSON: {exc}") from None


def _unsendable(value: Any, path: str = "") -> str | None:
    """The dotted path of the first value in ``value`` that orjson cannot encode."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else None
    if items is None:
        return None
    for key, inner in items:
        try:
            orjson.dumps(inner)
        except TypeError:
            return _unsendable(inner, f"{path}{key}.") or f"{path}{key}"
    return None


# -- the two clients -------------------------------------------------------------------------------
class Client(_Api):
    """The ``Brain`` API over HTTP (see the module docstring). A context manager; ``close()``
    closes its connections."""

    def _send(self, call: Call):
        exchange = Exchange(call, self.retry)
        while (wait := exchange.after(self._attempt(call, exchange.timeout(self.timeout)))) is not None:
            time.sleep(wait)
        return exchange.result()

    def _attempt(self, call: Call, timeout: httpx.Timeout) -> httpx.Response | httpx.TransportError:
        try:
            return self._http.request(call.method, call.path, content=call.body, params=call.params,
                                      headers=call.headers, timeout=timeout)
        except httpx.TransportError as exc:
            return exc

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncClient(_Api):
    """``Client`` for asyncio: every method returns an awaitable (``await client.recall(...)``);
    ``async with AsyncClient(...)``, or ``await client.close()``."""

    _http_class = httpx.AsyncClient

    async def _send(self, call: Call):
        exchange = Exchange(call, self.retry)
        while (wait := exchange.after(await self._attempt(call, exchange.timeout(self.timeout)))) is not None:
            await asyncio.sleep(wait)
        return exchange.result()

    async def _attempt(self, call: Call, timeout: httpx.Timeout) -> httpx.Response | httpx.TransportError:
        try:
            return await self._http.request(call.method, call.path, content=call.body, params=call.params,
                                            headers=call.headers, timeout=timeout)
        except httpx.TransportError as exc:
            return exc

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
