"""``hindbrain serve``: the SDK as a JSON API for agents in any language (design.md §issue-8).

Every ``/v1`` request carries ``Authorization: Bearer <API key>``; the key's tenant is the
request's tenant (a body cannot name one: ``tenant`` is an unknown field there, so 422), and
the key's role must allow the route (``roles.py``: 403 naming both roles otherwise).
Bodies are validated field by field (422 ``{"detail": [{"loc": ["body", field], "msg"}]}``,
from FastAPI's models or from the SDK's own validation, the same shape). Every response
carries ``X-Request-ID`` (the caller's, or a new one). The agents' hot routes, perceive and
recall, skip FastAPI's stack (``FastRoutes``): the brain validates their bodies anyway.

**One writer.** The embedded brain is one process owning its chDB folder. Here one thread
owns the ``Brain``: every call is queued to it (``BrainThread``), so any number of
concurrent clients are served by the event loop while the brain sees one call at a time —
no lock in the brain, no corrupted store, and a slow call (hindsight) delays the others
instead of racing them. Over Kafka + ClickHouse the same server runs per replica: the log
is then the point of order and each replica owns only its local index.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, nullcontext
from functools import partial
from types import SimpleNamespace
from typing import Any

import orjson
from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, create_model

from hindbrain.audit import timeline
from hindbrain.brain import outcome_credit
from hindbrain.learning.authority import key_grant
from hindbrain.open_calls import BrainClosed
from hindbrain.schemas.api import (
    ApproveInput,
    Id,
    InvalidateInput,
    InvalidInput,
    LearnInput,
    OutcomeInput,
    PerceiveInput,
    RecallInput,
    When,
)
from hindbrain.service.asgi import read_body, send_json
from hindbrain.service.keys import PREFIX as KEY_PREFIX
from hindbrain.service.keys import KeyStore
from hindbrain.service.limits import Limits
from hindbrain.service.metrics import Metrics
from hindbrain.service.principal import (
    Edge,
    Principal,
    Refused,
    acting,
    check_human,
    check_revocable,
    check_tenant,
    minted_agent,
)
from hindbrain.service.roles import DEFAULT_ROLE, Role

VERSION = "v1"
PERCEIVE = object()  # a BrainThread job: one perception's fields and its key's producer (runs of them are batched)
RECALL = object()  # a BrainThread job: ``Brain.recall``'s fields (a group of them alone opens no log transaction)


def body_model(model: type[BaseModel], name: str) -> type[BaseModel]:
    """``model``'s fields without ``tenant`` (the API key decides it), still strict and closed. ``ts`` is checked
    for its form only: how far ahead of the clock it may be is the brain's setting (``clock_skew_seconds``),
    which the brain checks when it validates the call's fields again."""
    fields = {n: (When | None if n == "ts" else f.annotation, f) for n, f in model.model_fields.items()
              if n != "tenant"}
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


PerceiveBody = body_model(PerceiveInput, "PerceiveBody")
LearnBody = body_model(LearnInput, "LearnBody")
RecallBody = body_model(RecallInput, "RecallBody")
OutcomeBody = body_model(OutcomeInput, "OutcomeBody")
ApproveBody = body_model(ApproveInput, "ApproveBody")
InvalidateBody = body_model(InvalidateInput, "InvalidateBody")


class PerceiveBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: list[PerceiveBody] = Field(min_length=1, max_length=10_000)  # type: ignore[valid-type]


class StoreItemsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: list[str] = Field(default_factory=list, max_length=64, description="the namespace (prefix), by label")
    key: str | None = Field(None, min_length=1, description="one item of the namespace ``prefix``; absent: all")


class SqlBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=100_000)
    parameters: dict[str, Any] = Field(default_factory=dict)


# A caller's request id is echoed only if it is short printable ASCII: other bytes in a response
# header break clients (httpx refuses to read such a response), and a long one would be echoed whole.
_REQUEST_ID = re.compile(rb"[\x21-\x7e]{1,128}")


class KeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Role = Field(DEFAULT_ROLE, description="agent, analyst or admin (docs/service.md, Keys and roles)")
    label: str = Field("", max_length=200, description="who or what the key is for")
    # an agent's name as perceive takes it (not blank: " " was a 500), without control characters
    agent: Id | None = Field(None, description="the one agent the key acts as (its requests cannot name another)")


class RequestIds:
    """Pure ASGI middleware: ``X-Request-ID`` on every response (the caller's if it is 1-128
    printable ASCII characters, else a new one; also in ``request.state.request_id``) and the
    request counters and latency histogram. (Starlette's ``BaseHTTPMiddleware`` cost ~1.6 ms a
    request here.)"""

    def __init__(self, app, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = next((v for k, v in scope["headers"] if k == b"x-request-id"), b"")
        rid = given.decode("ascii") if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        started, status = time.perf_counter(), [500]

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            self.metrics.observe(getattr(route, "path", "unmatched"), status[0], time.perf_counter() - started)


class BrainThread:
    """The one thread that calls the brain (see the module docstring), with group commit:
    the calls that queued while it was busy run together inside one log transaction
    (``SqliteLog.group``: one fsync for the lot) and are answered only after it committed;
    a run of perceptions is appended as one batch (``Brain.perceive_each``). Each call still
    succeeds or fails alone. Over Kafka (no ``group``) calls run one by one
    and the producer batches.

    **A failed commit stops the brain's service** (fail-stop). Nobody of that group hears
    "done" (503, ``Unavailable``, naming the failure: a full disk, a read-only folder). The
    brain's memory (its recall index, its learner) already took in the group's records, which
    the log does not hold: serving on would recall what was never written. So every later call
    is refused the same way, ``/readyz`` and ``/healthz`` answer 503 (a liveness probe restarts
    the process), and a restart reopens the brain from its log."""

    def __init__(self, brain):
        self.brain = brain
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindbrain-brain")
        self._jobs: list[tuple] = []
        self._queue_lock = threading.Lock()  # the loop appends, the owner thread takes the group
        self._group = getattr(brain.log, "group", None)
        # a recall's records deferred to the runner's committer (HINDBRAIN_RECALL_COMMIT_MS > 0): it appends nothing
        self._recalls_deferred = getattr(brain.runner, "group_window_s", 0) > 0
        self.broken: BaseException | None = None  # a failed commit: the server stops being ready

    async def call(self, fn, *args, **kwargs):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._queue_lock:
            self._jobs.append((fn, args, kwargs, future))
            first = len(self._jobs) == 1
        if first:  # the first of a group schedules the run of all
            loop.run_in_executor(self._pool, self._run_group, loop)
        return await future

    def _run_group(self, loop) -> None:
        with self._queue_lock:
            jobs, self._jobs = self._jobs, []
        results = [self.unavailable()] * len(jobs) if self.broken is not None else self._run_jobs(jobs)
        # the views' backlog bound (``EmbeddedRunner.wait_for_room``): inside the group no writer waits, so the
        # next group starts once the projector is back under it
        getattr(self.brain.runner, "wait_for_room", lambda: None)()
        for (*_, future), result in zip(jobs, results, strict=True):
            loop.call_soon_threadsafe(_settle, future, result)

    def unavailable(self) -> Unavailable:
        """Why this server no longer serves (after a failed commit)."""
        return Unavailable(f"a log commit failed, so this server stopped (restart it: the brain reopens from its "
                           f"log): {self.broken}"[:500])

    def _run_jobs(self, jobs: list[tuple]) -> list:
        results: list = []
        try:
            with self._group() if self._group and writes_in_group(jobs, self._recalls_deferred) else nullcontext():
                n = 0
                while n < len(jobs):
                    fn = self.brain.recall if jobs[n][0] is RECALL else jobs[n][0]
                    if fn is PERCEIVE:  # a run of perceptions is appended as one batch
                        end = next((m for m in range(n, len(jobs)) if jobs[m][0] is not PERCEIVE), len(jobs))
                        run = [job[1] for job in jobs[n:end]]  # (fields, the key's producer)
                        results += self.brain.perceive_each([r[0] for r in run], sent_by=[r[1] for r in run])
                        n = end
                        continue
                    try:
                        results.append(fn(*jobs[n][1], **jobs[n][2]))
                    except Exception as exc:  # noqa: BLE001 - this call's own failure, answered to its caller
                        results.append(exc)
                    n += 1
        except Exception as exc:  # noqa: BLE001 - the commit failed: nobody of the group may hear "done"
            self.broken = exc
            results = [self.unavailable()] * len(jobs)
        return results

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def writes_in_group(jobs: list[tuple], recalls_deferred: bool) -> bool:
    """Whether a group's jobs may append to the log from the brain's thread, so need its
    transaction. Not a group of deferred recalls alone: their records go to the runner's
    committer. The empty transaction around them held the log's lock for the recalls' whole
    CPU, so the committer's append (and its sync) waited for a recall, and the next recall for
    that sync (docs/speed.md, "Served recalls, round twenty-one")."""
    return not recalls_deferred or any(job[0] is not RECALL for job in jobs)


async def off_owner(request: Request, pool: ThreadPoolExecutor, run: Callable[[], Any],
                    cancel: Callable[[], None], poll_s: float = 0.25) -> Any:
    """``run()`` on ``pool``; if the client goes away before it ends, ``cancel()`` (its query is
    killed and fails) — a query nobody waits for no longer holds the lane. Cancelled again each
    ``poll_s`` until it ends: the client may leave before the query started (the kill then found
    nothing)."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(pool, run)
    gone = False
    while not future.done():
        await asyncio.wait([future], timeout=poll_s)
        gone = gone or (not future.done() and await request.is_disconnected())
        if gone and not future.done():
            await loop.run_in_executor(None, cancel)
    return await future


# How many of one tenant's queries may be on the SQL lane at once, running or queued: the lane is one thread for
# every tenant, in arrival order, so one tenant's queries sent back to back (each up to its time limit) queued
# every other tenant's behind them, unbounded (round thirty-two).
SQL_PER_TENANT = 2


def sql_queue_refusal(waiting: int) -> str | None:
    """Why a tenant with ``waiting`` queries on the SQL lane may not add one, or None."""
    if waiting < SQL_PER_TENANT:
        return None
    return (f"this tenant has {waiting} queries running or waiting already (at most {SQL_PER_TENANT}: the lane is "
            "shared by every tenant); send the next when one has answered")


class Unavailable(Exception):
    """A part the answer needs is down (a replica's owner): 503 with Retry-After."""


MAX_BODY_BYTES = 1 << 20  # a hot route's JSON body; larger: 413
Handler = Callable[[Principal, dict], Awaitable[dict]]  # (the request's key, body fields) -> the answer


class FastRoutes:
    """Pure ASGI, first for every request: the tenant a caller means (``X-Hindbrain-Tenant``,
    which ``hindbrain.Client`` sends for code written for ``Brain``'s ``tenant=``) must be its
    key's, else 422 on ``["header", "tenant"]`` before any route runs.

    Then the agents' hot routes (``POST /v1/perceive``, ``POST /v1/recall``) without
    FastAPI's routing, dependency solving and body models. The models only repeated what the
    SDK validates anyway (field-level 422s of the same shape), so a body is parsed once
    (orjson) and validated once, in the brain. Measured on a served perceive: FastAPI's stack
    was about half the request's time. The FastAPI routes of these paths stay, calling the
    same handlers: they document the requests in ``/docs``.
    """

    def __init__(self, app, handlers: dict[str, Handler], keys: KeyStore):
        self.app, self.edge = app, Edge(keys)
        self.handlers = {path: (SimpleNamespace(path=path), fn) for path, fn in handlers.items()}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (wrong := self._claim_refused(scope)):  # every route's, hot or not
            return await send_json(send, 422, {**wrong, "request_id": scope["state"]["request_id"]})
        hot = self.handlers.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if hot is None:
            return await self.app(scope, receive, send)
        scope["route"] = hot[0]  # what the request metrics name
        status, payload, extra = await self._answer(hot[1], scope, receive)
        if status == 422:
            payload["request_id"] = scope["state"]["request_id"]
        await send_json(send, status, payload, extra)

    def _claim_refused(self, scope) -> dict | None:
        """The 422 body when ``X-Hindbrain-Tenant`` names another tenant than the request's
        key's; None without the header, with the key's tenant, or with no valid key (the route
        answers 401 then)."""
        claimed = header(scope, TENANT_HEADER)
        if claimed is None or not scope["path"].startswith(f"/{VERSION}/"):
            return None
        try:
            check_tenant(self.edge.principal_of(scope), claimed.decode("latin-1"))
        except Refused as exc:
            return _detail(["header", "tenant"], str(exc), "tenant_mismatch") if exc.kind == "tenant" else None
        return None

    async def _answer(self, handler: Handler, scope, receive) -> tuple[int, dict, list]:
        try:  # the hot paths are literal routes: the path is the route
            key = self.edge.admit_scope(scope, scope["path"])
        except Refused as exc:
            return exc.status, {"detail": str(exc)}, [(b"www-authenticate", b"Bearer")] if exc.status == 401 else []
        body = await read_body(receive, MAX_BODY_BYTES)
        if body is None:
            return 413, {"detail": f"a request body is at most {MAX_BODY_BYTES} bytes"}, []
        try:
            fields = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return 422, _detail(["body"], f"JSON decode error: {exc}", "json_invalid"), []
        if not isinstance(fields, dict):
            return 422, _detail(["body"], "Input should be a valid dictionary or object", "model_attributes_type"), []
        if "tenant" in fields:  # the key decides the tenant
            return 422, _detail(["body", "tenant"], "Extra inputs are not permitted", "extra_forbidden"), []
        try:
            fields = acting(key, fields)
        except Refused as exc:
            return exc.status, {"detail": str(exc)}, []
        try:
            return 200, await handler(key, fields), []
        except InvalidInput as exc:
            return 422, invalid_input_detail(exc), []
        except (Unavailable, BrainClosed) as exc:  # BrainClosed: the server is shutting down
            return 503, {"detail": str(exc)}, [(b"retry-after", b"1")]


TENANT_HEADER = b"x-hindbrain-tenant"


def header(scope, name: bytes) -> bytes | None:
    """The first value of the request header ``name`` (lower case), else None."""
    return next((v for k, v in scope["headers"] if k == name), None)


def invalid_input_detail(exc: InvalidInput) -> dict:
    """The 422 body of the SDK's own validation: FastAPI's shape, on the field it names."""
    return _detail(["body", *exc.field.split(".")], str(exc), "invalid_input")


def _or_http(check: Callable, *args):
    """``check(*args)``, its ``Refused`` as the HTTP error it names (403, 401 …): the key checks of the routes."""
    try:
        return check(*args)
    except Refused as exc:
        raise HTTPException(status_code=exc.status, detail=str(exc)) from None


def _detail(loc: list[str], msg: str, kind: str) -> dict:
    return {"detail": [{"loc": loc, "msg": msg, "type": kind}]}


class StrictJsonRequest(Request):
    """A request whose JSON body is read by orjson, as the hot routes read theirs: ``NaN``,
    ``Infinity``, lone surrogate escapes (``"\\ud800"``) and nesting past 1024 levels are not
    JSON and are refused (422, FastAPI's ``json_invalid``). Python's ``json`` accepted them, and
    a lone surrogate or a NaN then failed deep inside (a SQL parameter, the 422 that echoed it):
    500s."""

    async def json(self):
        if not hasattr(self, "_json"):
            self._json = orjson.loads(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """Every FastAPI route reads its body as a ``StrictJsonRequest``."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def strict(request: Request):
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict


class Api(FastAPI):
    """The FastAPI app behind ``front``: request ids and metrics for every request, then the
    hot routes (``FastRoutes``), then FastAPI's own stack."""

    front = None  # set by create_app; its layers pass lifespan scopes straight to FastAPI

    async def __call__(self, scope, receive, send):
        await self.front(scope, receive, send)


def create_app(brain, keys: KeyStore) -> FastAPI:
    """The API over ``brain``, its tenants resolved by ``keys``."""
    owner, metrics = BrainThread(brain), Metrics()

    @asynccontextmanager
    async def lifespan(_app):
        yield
        sql_lane.shutdown(wait=True)
        owner.close()  # the brain's calls in flight finish before the caller closes the brain

    app = Api(title="hindbrain", version=VERSION, docs_url=None, openapi_url=None, lifespan=lifespan,
              description="An event-sourced brain for fleets of AI agents: perceive, learn, recall, outcome.")
    app.state.owner, app.state.metrics = owner, metrics
    app.router.route_class = StrictJsonRoute

    @app.exception_handler(InvalidInput)
    async def invalid_input(request: Request, exc: InvalidInput):
        return JSONResponse(status_code=422,
                            content={**invalid_input_detail(exc), "request_id": request.state.request_id})

    @app.exception_handler(Unavailable)
    @app.exception_handler(BrainClosed)  # the server is shutting down: try again (another replica, a restart)
    async def unavailable(request: Request, exc: Unavailable | BrainClosed):
        return JSONResponse(status_code=503, content={"detail": str(exc)}, headers={"Retry-After": "1"})

    edge = Edge(keys)

    async def tenant_of(request: Request, authorization: str | None = Header(default=None)) -> str:
        """The tenant of the request's key, once its role allows the matched route (401, 403)."""
        # ``authorization`` documents the header in the OpenAPI schema; the key is read from the
        # scope, resolved once per request (``Edge.principal_of``: the rate limits read it first).
        # async on purpose: a sync dependency costs a thread-pool hop per request (~1 ms here),
        # more than the key lookup itself (from memory, see KeyStore.resolve).
        try:  # the template (/v1/explain/{item_id}), as roles.ROUTES names it
            key = edge.admit_scope(request.scope, request.scope["route"].path)
        except Refused as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc),
                                headers={"WWW-Authenticate": "Bearer"} if exc.status == 401 else None) from None
        request.state.key = key  # an agent-bound key: the agent routes act as its agent (``bound``)
        return key.tenant

    def bound(request: Request, fields: dict) -> dict:
        return _or_http(acting, request.state.key, fields)

    Tenant = Depends(tenant_of)

    def opened_by(setting: str):
        """A dependency admitting a key whose role allows the route (``roles.ROUTES``), or
        anyone when ``setting`` (``public_metrics``, ``public_docs``) opens it."""
        async def key_or_setting(request: Request, authorization: str | None = Header(default=None)) -> None:
            if not getattr(brain.settings, setting):
                await tenant_of(request, authorization)
        return Depends(key_or_setting)

    add_docs(app, opened_by("public_docs"))

    @app.get("/healthz", tags=["operations"])
    async def healthz():
        """Liveness: the process answers, and no log commit failed (after one it must be
        restarted, see ``BrainThread``)."""
        if owner.broken is not None:
            return JSONResponse(status_code=503, content={"status": "stopped", "error": str(owner.unavailable())})
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"])
    async def readyz():
        """Readiness: the brain answers a query through its owner thread, and the semantic
        channel's vector graph holds every vector (after a reopen it is rebuilt in the
        background; until then a search scans, several times slower: "warming"). With recall
        replicas, ``replicas`` says how many of them accept connections."""
        if owner.broken is not None:
            return JSONResponse(status_code=503, content={"status": "not ready",
                                                          "error": f"a log commit failed: {owner.broken}"[:300]})
        semantic = brain.index.semantic
        if semantic is not None and (unbuilt := semantic.unbuilt()):  # exact scans until the graph has them
            return JSONResponse(status_code=503, content={"status": "warming", "unbuilt_vectors": unbuilt})
        try:
            await owner.call(brain.warehouse.query, "SELECT 1")
        except Exception as exc:  # noqa: BLE001 - any failure means not ready; say which
            return JSONResponse(status_code=503, content={"status": "not ready", "error": str(exc)[:300]})
        replicas = getattr(app.state, "replicas", None)  # hindbrain serve --replicas: how many serve beside it
        if replicas is not None:
            return {"status": "ready", "replicas": {"serving": len(replicas.serving), "of": replicas.count}}
        return {"status": "ready"}

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse,
             dependencies=[opened_by("public_metrics")])
    async def prometheus():
        """Prometheus text format: requests, latency histograms, ingest, dead letters, lag. The
        counts are the whole brain's (every tenant's), so it needs an admin key unless
        ``HINDBRAIN_PUBLIC_METRICS`` opens it (a scraper on a private network)."""
        return metrics.render(await owner.call(_gauges, brain))

    async def perceived(key: Principal, fields: dict) -> dict:
        event_id = await owner.call(PERCEIVE, {**fields, "tenant": key.tenant}, key.producer)
        metrics.ingested(1)
        return {"event_id": event_id}

    async def recalled(key: Principal, fields: dict) -> dict:
        started = time.perf_counter()
        pack = await owner.call(RECALL, **fields, tenant=key.tenant)
        metrics.recalled(time.perf_counter() - started)
        return pack.as_dict()

    app.front = RequestIds(Limits.of(FastRoutes(partial(FastAPI.__call__, app), {
        f"/{VERSION}/perceive": perceived, f"/{VERSION}/recall": recalled}, keys), keys, brain.settings), metrics)

    @app.post(f"/{VERSION}/perceive", tags=["agents"])
    async def perceive(request: Request, body: PerceiveBody, tenant: str = Tenant):  # type: ignore[valid-type]
        """Record what an agent perceived, did or was told. Returns the event id."""
        return await perceived(request.state.key, bound(request, _fields(body)))

    @app.post(f"/{VERSION}/perceive/batch", tags=["agents"])
    async def perceive_batch(request: Request, body: PerceiveBatch, tenant: str = Tenant):
        """Many events in one append (validated first: one bad event refuses the batch, naming it)."""
        events = [{"tenant": tenant, **bound(request, _fields(e))} for e in body.events]
        ids = await owner.call(brain.perceive_many, events, sent_by=request.state.key.producer)
        metrics.ingested(len(ids))
        return {"event_ids": ids}

    @app.post(f"/{VERSION}/learn", tags=["agents"])
    async def learn(request: Request, body: LearnBody, tenant: str = Tenant):  # type: ignore[valid-type]
        """Propose a cognitive unit ("when C, do A, because R"). Returns its fragment id."""
        fields, key = bound(request, _fields(body)), request.state.key
        # a seed or a raised confidence is an operator's grant (design.md §issue-27)
        grant, refused = key_grant(key.role, key.key_id, key.agent, fields)
        if refused:
            raise HTTPException(status_code=403, detail=refused)
        sent_by = key.producer
        return {"fragment_id": await owner.call(brain.learn, tenant=tenant, granted_by=grant, sent_by=sent_by,
                                                **fields)}

    @app.post(f"/{VERSION}/recall", tags=["agents"])
    async def recall(request: Request, body: RecallBody, tenant: str = Tenant):  # type: ignore[valid-type]
        """The few units that fill the gap, within the token budget, each score explained;
        ``prompt`` is the block to put into the agent's context."""
        return await recalled(request.state.key, bound(request, _fields(body)))

    @app.post(f"/{VERSION}/outcome", tags=["agents"])
    async def outcome(request: Request, body: OutcomeBody, tenant: str = Tenant):  # type: ignore[valid-type]
        """How a task went, naming the recall and the items applied: the learning signal. ``credit`` says what
        the learner does with it: only the units the named recall injected, once per recall; without a recall id
        (or an unknown one) evidence that never promotes past verified (docs/learning.md, round twenty-five)."""
        fields, key = bound(request, _fields(body)), request.state.key
        sent_by = key.producer
        return {"outcome_id": await owner.call(brain.outcome, tenant=tenant, sent_by=sent_by, **fields),
                "credit": outcome_credit(fields.get("recall_id"))}

    @app.get(f"/{VERSION}/traits", tags=["humans"])
    async def traits(tenant: str = Tenant):
        """Traits the learner proposes, waiting for a human's verdict (``/v1/approve``)."""
        return {"traits": await owner.call(brain.pending_traits, tenant)}

    @app.post(f"/{VERSION}/approve", tags=["humans"])
    async def approve(request: Request, body: ApproveBody, tenant: str = Tenant):  # type: ignore[valid-type]
        """A human's verdict on a proposed trait: accepted, it joins the identity layer. An admin key
        bound to an agent is refused (403): the verdict is a person's."""
        _or_http(check_human, request.state.key, "approving a trait")
        return {"decision_id": await owner.call(brain.approve, tenant=tenant, **_fields(body))}

    @app.post(f"/{VERSION}/invalidate", tags=["humans"])
    async def invalidate(request: Request, body: InvalidateBody, tenant: str = Tenant):  # type: ignore[valid-type]
        """An environment change made a unit untrue: never injected again, kept in the log. An admin key
        bound to an agent is refused (403): the verdict is a person's."""
        _or_http(check_human, request.state.key, "invalidating a unit")
        return {"decision_id": await owner.call(brain.invalidate, tenant=tenant, **_fields(body))}

    @app.get(f"/{VERSION}/explain/{{item_id}}", tags=["audit"])
    async def explain(item_id: str, tenant: str = Tenant):
        """Every record and decision of this tenant behind an item, oldest first: ``chain``, the
        records themselves, and ``timeline``, one line per step for a person (``hindbrain.audit``)."""
        try:
            chain = await owner.call(brain.explain, item_id, tenant=tenant)
        except InvalidInput as exc:  # the id is the path's
            raise HTTPException(status_code=422, detail=_detail(["path", "item_id"], str(exc), "invalid_input")[
                "detail"]) from None
        return {"item_id": item_id, "timeline": timeline(item_id, chain),
                "chain": [{**e, "position": list(e["position"])} for e in chain]}

    @app.post(f"/{VERSION}/store/items", tags=["agents"])
    async def store_items(request: Request, body: StoreItemsBody, tenant: str = Tenant):
        """The live items of a key-value store (LangGraph's ``HindbrainStore``) under ``prefix``, in
        LangGraph's order (``Brain.stored``): what an agent key needs to get, list and search its
        store. A key bound to one agent reads that agent's items and the tenant's shared ones."""
        items = await owner.call(brain.stored, tenant=tenant, prefix=body.prefix, key=body.key,
                                 agent=request.state.key.agent)
        return {"items": [{**i, "namespace": list(i["namespace"]), "created_at": i["created_at"].isoformat(),
                           "updated_at": i["updated_at"].isoformat()} for i in items]}

    # Tenant SQL runs here, never on the owner thread: one query at a time, one core (its limits).
    sql_lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindbrain-sql")
    app.state.sql_waiting = sql_waiting = Counter()  # each tenant's queries running or queued on the lane

    @app.post(f"/{VERSION}/sql", tags=["analysts"])
    async def sql(request: Request, body: SqlBody, tenant: str = Tenant):
        """Read-only SQL over this tenant's views (``GET /v1/views``): one SELECT with allow-listed
        functions under fixed limits (docs/service.md, "SQL"); a refused query or a stopped limit
        is a 422 on ``query`` naming why. NaN and infinities are null in the rows. A tenant with
        ``SQL_PER_TENANT`` queries on the lane already gets a 429 on ``query``."""
        if refusal := sql_queue_refusal(sql_waiting[tenant]):
            raise HTTPException(status_code=429, detail=_detail(["body", "query"], refusal, "too_many_requests")[
                "detail"], headers={"Retry-After": "1"})
        sql_waiting[tenant] += 1  # on the event loop: no other request runs between the check and this
        try:
            await owner.call(brain.runner.flush)  # the caller reads its own writes
            marker = f"hindbrain-sql-{uuid.uuid4().hex}"
            run = partial(brain.tenant_sql, body.query, body.parameters or None, tenant=tenant, marker=marker)
            return {"rows": finite(await off_owner(request, sql_lane, run, partial(brain.cancel_sql, marker)))}
        finally:
            sql_waiting[tenant] -= 1
            if not sql_waiting[tenant]:
                del sql_waiting[tenant]

    @app.get(f"/{VERSION}/views", tags=["analysts"])
    async def views(tenant: str = Tenant):
        """The views this tenant's SQL reads and their columns: ``{"views": {name: [{"name", "type"}]}}``."""
        return {"views": await asyncio.get_running_loop().run_in_executor(sql_lane, brain.views, tenant)}

    @app.post(f"/{VERSION}/hindsight", tags=["operations"])
    async def hindsight(when_due: bool = True, tenant: str = Tenant):
        """Run the learning jobs (for every tenant: they are the fleet's nightly batch);
        ``when_due`` (default) only when the trigger policy says so."""
        report = await owner.call(brain.hindsight, when_due=when_due)
        return {"skipped": report.skipped, "decisions": len(report.decisions)}

    # Key management: a plain def each (FastAPI runs it on its thread pool): a key store write
    # waits for its fsync, which must not stall the event loop.
    @app.post(f"/{VERSION}/keys", tags=["keys"], status_code=201)
    def create_key(request: Request, body: KeyBody, tenant: str = Tenant):
        """A new key of this tenant with ``role`` and ``label``: the only answer that ever shows
        its secret (``key``); store it now. A key bound to an agent makes keys bound to it (403 otherwise)."""
        agent = _or_http(minted_agent, request.state.key, body.agent)
        key = keys.create(tenant, body.label, body.role, agent)  # KeyBody holds what the store checks
        return {"key": key, "key_id": key.split("_")[1], "tenant": tenant, "role": body.role, "label": body.label,
                "agent": agent}

    @app.get(f"/{VERSION}/keys", tags=["keys"])
    def list_keys(tenant: str = Tenant):
        """This tenant's keys, live and revoked, oldest first; never a secret."""
        return {"keys": [{"key_id": k.key_id, "role": k.role, "agent": k.agent, "label": k.label,
                          "created_us": k.created_us,
                          "revoked_us": k.revoked_us} for k in keys.list(tenant)]}

    @app.delete(f"/{VERSION}/keys/{{key_id}}", tags=["keys"])
    def revoke_key(request: Request, key_id: str, tenant: str = Tenant):
        """Revoke one of this tenant's keys; it is refused from its next request on. Another
        tenant's key id is a 404, like an unknown one, and stays live; a key bound to an agent
        revokes keys bound to it only (403)."""
        if key_id.startswith(KEY_PREFIX):  # a URL lands in access logs: the secret must not
            raise HTTPException(status_code=422, detail=[{"loc": ["path", "key_id"], "type": "value_error",
                                                          "msg": "give the key id, not the whole key"}])
        target = next((k for k in keys.list(tenant) if k.key_id == key_id and k.revoked_us is None), None)
        _or_http(check_revocable, request.state.key, target.agent if target else request.state.key.agent)
        if not keys.revoke(key_id, tenant=tenant):
            raise HTTPException(status_code=404, detail=f"no live key {key_id!r} of this tenant")
        return {"key_id": key_id, "revoked": True}

    return app


DOCS_ASSETS = "/docs/assets"


def add_docs(app: FastAPI, guard) -> None:
    """``/openapi.json`` and ``/docs`` behind ``guard``; Swagger UI's scripts and styles served
    from this process (the ``swagger-ui-bundle`` package), so the page works offline (FastAPI's
    own loads them from a CDN: a blank page without the internet). The assets themselves are
    the public library, served without a key."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles
    from swagger_ui_bundle import swagger_ui_path

    @app.get("/openapi.json", include_in_schema=False, dependencies=[guard])
    async def openapi():
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=[guard])
    async def docs():
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - API",
                                   swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
                                   swagger_ui_parameters={"validatorUrl": None})  # no badge from swagger.io

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")


def _settle(future: asyncio.Future, result) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)


def finite(value):
    """``value`` with every NaN and infinity made None: JSON has neither, and an ``avg()`` over no
    rows is NaN (the answer could not be written: a 500)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def _fields(body: BaseModel) -> dict:
    """What the caller sent (unset fields keep the SDK's defaults)."""
    return body.model_dump(exclude_unset=True)


def _gauges(brain) -> dict:
    """Read on the owner thread. The lag is read before ``stats()``, which projects it away:
    records appended to the log and not yet in the views (the embedded consumer's lag)."""
    lag = getattr(brain.runner, "pending", 0)  # the embedded runner's; a Kafka consumer's lag is its own metric
    stats = brain.stats()
    return {"hindbrain_log_records": stats["log_records"], "hindbrain_dead_letters": stats["dead_letters"],
            "hindbrain_indexed_documents": stats["indexed_documents"], "hindbrain_consumer_lag_records": lag}
