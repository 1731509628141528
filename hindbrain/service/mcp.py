"""The MCP server (``hindbrain mcp``): recall, perceive, learn and outcome as MCP tools.

Coding agents speak the Model Context Protocol; this module puts the brain's SDK loop behind
it, over stdio (one tenant, fixed at start) or streamable HTTP (every request's
``Authorization: Bearer <API key>`` names its tenant). The tools never take a tenant argument:
a server built by ``build_server`` is bound to one tenant, so a model cannot reach another
tenant's memory by writing a different name into a call.

    python -m hindbrain.service.mcp --home DIR --tenant acme               # stdio
    python -m hindbrain.service.mcp --home DIR --transport http --port 8765  # HTTP, API keys

Built on the official ``mcp`` SDK (2.x, where v1's ``FastMCP`` is ``MCPServer``).
"""

import argparse
import os
import signal
import socket
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from hindbrain.learning.authority import refusal as grant_refusal
from hindbrain.learning.authority import trust_raised
from hindbrain.recall.pack import Recalled, RecallPack
from hindbrain.recall.quoting import prompt_text
from hindbrain.schemas.api import EventKind, Origin, Signal, Source, Trigger
from hindbrain.service.keys import KeyStore
from hindbrain.service.limits import Limits, TokenBuckets
from hindbrain.service.mcp_cli import KEY_ENV, add_options, add_parser  # noqa: F401 - add_parser: re-exported
from hindbrain.service.principal import Edge, Principal, Refused, acting, bearer_key
from hindbrain.service.wire import uvicorn_options

TOOLS = ("recall", "perceive", "learn", "outcome")
MCP_PATH = "/mcp"

INSTRUCTIONS = """hindbrain is the shared memory of an agent fleet. The loop:
1. recall at the start of a task and whenever something goes wrong (trigger=anomaly): put the
   returned `prompt` block into your context and follow the rules that apply.
2. perceive what you observe, do or are told, anomalies above all (kind=anomaly, with
   system/action/expected/actual).
3. learn a rule when you found one: WHEN condition, DO action, BECAUSE reason.
4. outcome when the task ends: success, and `applied` = the ids of the recalled items you used,
   so the brain credits (or blames) exactly those."""

ScopeArg = Annotated[dict[str, str] | None, Field(description="where it holds, e.g. {\"env\": \"prod\"}")]
Agent = Annotated[str | None, Field(description="the agent's id, e.g. agent-7")]
Task = Annotated[str | None, Field(description="the task's id, e.g. t-42")]


class Situation(BaseModel):
    """A structured cue: what the agent was doing and what went differently."""

    system: str | None = Field(None, description="the system involved, e.g. IAM")
    identity: str | None = Field(None, description="who the agent acts as, e.g. normal account")
    action: str | None = Field(None, description="what the agent did, e.g. submit change")
    expected: str | None = Field(None, description="what should have happened")
    actual: str | None = Field(None, description="what happened instead")


class RecalledItem(BaseModel):
    id: str = Field(description="the id to name in outcome(applied=[...]) when you used it")
    kind: str = Field(description="fragment (a rule), belief or event")
    text: str
    score: float
    tokens: int
    source: str
    confidence: float
    event_ids: list[str] = Field(description="the perceived events the item rests on")
    why: dict[str, Any] | None = Field(None, description="every channel contribution and gate decision (explain=true)")


class RecallResult(BaseModel):
    recall_id: str = Field(description="give it to outcome(recall_id=...)")
    prompt: str = Field(description="the block to put into your context (empty when nothing applies)")
    items: list[RecalledItem] = Field(description="the recalled rules and events, best first, within the budget")
    briefing: list[RecalledItem] = Field(description="the beliefs briefed before the items")
    tokens: int
    budget_tokens: int


class OutcomeResult(BaseModel):
    ok: bool
    outcome_id: str


def recall_result(pack: RecallPack, explain: bool = False) -> RecallResult:
    """The tool's view of a ``RecallPack``: its id, its rendered prompt block and its items."""

    def item(r: Recalled) -> RecalledItem:
        return RecalledItem(id=prompt_text(r.id), kind=r.kind, text=prompt_text(r.text), score=r.score, tokens=r.tokens,
                            source=prompt_text(r.source),
                            confidence=r.confidence, event_ids=list(r.event_ids), why=r.why if explain else None)

    return RecallResult(recall_id=pack.recall_id, prompt=pack.render(), items=[item(r) for r in pack.items],
                        briefing=[item(r) for r in pack.briefing], tokens=pack.tokens,
                        budget_tokens=pack.budget_tokens)


def _given(fields: dict) -> dict:
    """The arguments the caller gave: an omitted one keeps the SDK's default (e.g. ``scope={}``)."""
    return {k: v for k, v in fields.items() if v is not None}


def build_server(brain, tenant: str, lock: "threading.Lock | None" = None, agent: str | None = None,
                 rate: TokenBuckets | None = None, sent_by: str | None = None) -> MCPServer:
    """An MCP server whose four tools act on ``brain`` for ``tenant`` only (and as ``agent``
    only, for a key bound to one: ``principal.acting``).

    ``lock`` serializes the brain calls: the SDK runs each (sync) tool call on a worker thread,
    and the embedded brain has one writer. Servers of several tenants over one brain share it.
    A validation error of the brain (``InvalidInput``, a ``ValueError`` naming the field)
    becomes a tool error result; the server keeps serving. ``rate``: the tool calls' bucket
    (over stdio; over HTTP the edge's ``Limits`` rate each request by key and tenant). ``sent_by``: the key
    whose server it is, over HTTP (``Principal.producer``): its perceptions, proposals and outcomes
    name it as their sender.
    """
    if not tenant or not tenant.strip():
        raise ValueError("mcp: the tenant must not be empty")
    lock = lock or threading.Lock()
    bound = Principal(key_id="", tenant=tenant, role="agent", agent=agent)  # what the tools act as (principal.py)
    server = MCPServer("hindbrain", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING")

    def call(operation: str, **fields):
        try:
            fields = acting(bound, fields)
        except Refused as exc:
            raise ToolError(str(exc)) from None
        if rate is not None and (wait := rate.take(tenant)) > 0:
            raise ToolError(f"rate limit: {rate.rate:g} tool calls a second (bursts of {rate.burst}); retry after "
                            f"{wait:.2f} s")
        with lock:
            try:
                return getattr(brain, operation)(tenant=tenant, **_given(fields))
            except ValueError as exc:  # InvalidInput and the recall's unknown layers: the caller's mistake
                raise ToolError(str(exc)) from None

    @server.tool()
    def recall(
        query: Annotated[str | None, Field(description="free text: the task or the problem")] = None,
        situation: Annotated[Situation | None, Field(description="a structured cue, instead of or with query")] = None,
        trigger: Annotated[Trigger | None, Field(description="why you recall now")] = None,
        agent: Agent = None,
        task: Task = None,
        scope: ScopeArg = None,
        budget_tokens: Annotated[int, Field(ge=1, le=100_000, description="the most tokens to inject")] = 400,
        k: Annotated[int | None, Field(ge=1, le=1000, description="at most this many items")] = None,
        layers: Annotated[list[str] | None, Field(description="search only these layers, e.g. [\"episodic\"]")] = None,
        scene: Annotated[str | None, Field(description="the task type, for scene beliefs")] = None,
        user: Annotated[str | None, Field(description="the user you serve, for user beliefs")] = None,
        emotion: Annotated[str | None, Field(description="the situation's emotion (e.g. angry), for beliefs on "
                                                         "it; inferred from the query if omitted")] = None,
        explain: Annotated[bool, Field(description="include each item's score breakdown (why)")] = False,
    ) -> RecallResult:
        """Recall what the fleet learned that fills the gap in your context: the rules (WHEN -> DO) and
        past events that apply, best first, within budget_tokens. Put `prompt` into your context; keep
        `recall_id` and the ids of the items you use for outcome."""
        pack = call("recall", query=query, situation=situation.model_dump(exclude_none=True) if situation else None,
                    trigger=trigger, agent=agent, task=task, scope=scope, budget_tokens=budget_tokens, k=k,
                    layers=layers, scene=scene, user=user, emotion=emotion)
        return recall_result(pack, explain)

    @server.tool()
    def perceive(
        text: Annotated[str | None, Field(description="what was perceived, said or done")] = None,
        kind: Annotated[EventKind, Field(description="message, observation, action, anomaly, feedback or "
                                                     "outcome")] = "message",
        agent: Agent = None,
        task: Task = None,
        system: Annotated[str | None, Field(description="the system involved")] = None,
        identity: Annotated[str | None, Field(description="who the agent acted as")] = None,
        action: Annotated[str | None, Field(description="what the agent did")] = None,
        expected: Annotated[str | None, Field(description="what should have happened")] = None,
        actual: Annotated[str | None, Field(description="what happened instead")] = None,
        entities: Annotated[list[str] | None, Field(description="names the event is about")] = None,
        scope: ScopeArg = None,
        signal: Annotated[Signal | None, Field(description="feedback provenance: explicit, implicit or self")] = None,
        success: Annotated[bool | None, Field(description="for an outcome event")] = None,
        polarity: Annotated[float | None, Field(description="for feedback: -1 (negative) to +1 (positive)")] = None,
        session: Annotated[str | None, Field(description="the dialogue session")] = None,
        speaker: Annotated[str | None, Field(description="who said it (a message)")] = None,
        origin: Annotated[Origin | None, Field(description="who produced the text: agent, user, tool (a tool's "
                                                           "output) or document (a page you read)")] = None,
        ts: Annotated[datetime | None, Field(description="when it happened (ISO 8601); default now")] = None,
        event_id: Annotated[str | None, Field(description="your own id: the same id twice is one event")] = None,
    ) -> str:
        """Record something you perceived, did or were told, above all an anomaly (kind=anomaly with
        system, action, expected, actual). Give text or action. Returns the event id."""
        return call("perceive", text=text, kind=kind, agent=agent, task=task, system=system, identity=identity,
                    action=action, expected=expected, actual=actual, entities=entities, scope=scope, signal=signal,
                    success=success, polarity=polarity, session=session, speaker=speaker, origin=origin, ts=ts,
                    event_id=event_id, sent_by=sent_by)

    @server.tool()
    def learn(
        condition: Annotated[str, Field(description="WHEN the rule applies, e.g. submit does nothing in IAM")],
        action: Annotated[str, Field(description="what to DO then, e.g. switch to the admin account")],
        reason: Annotated[str | None, Field(description="BECAUSE: why it works")] = None,
        evidence: Annotated[str | None, Field(description="what showed it works")] = None,
        scope: ScopeArg = None,
        source: Annotated[Source, Field(description="lived (your experience) or read (knowledge: give "
                                                    "citation)")] = "lived",
        citation: Annotated[str | None, Field(description="where read knowledge comes from")] = None,
        confidence: Annotated[float | None, Field(ge=0.0, le=1.0, description="how sure you are, 0 to 1")] = None,
        agent: Agent = None,
        task: Task = None,
        event_ids: Annotated[list[str] | None, Field(description="the perceived events it rests on")] = None,
        entities: Annotated[list[str] | None, Field(description="names the rule is about")] = None,
    ) -> str:
        """Propose a rule: WHEN condition, DO action, BECAUSE reason. With an agent it is that agent's
        until a second agent stands behind it (the fleet's sharing bar); without one it is shared at once.
        It gains or loses credit with the outcomes. Returns the fragment id."""
        if raised := trust_raised(False, confidence, source):  # the tools are an agent's: no operator grant here
            raise ToolError(f"learn: field {raised!r}: {grant_refusal(raised, 'an MCP client')}")
        return call("learn", condition=condition, action=action, reason=reason, evidence=evidence, scope=scope,
                    source=source, citation=citation, confidence=confidence, agent=agent, task=task,
                    event_ids=event_ids, entities=entities, sent_by=sent_by)

    @server.tool()
    def outcome(
        success: Annotated[bool, Field(description="did the task succeed")],
        recall_id: Annotated[str | None, Field(description="the recall_id of the recall you acted on")] = None,
        applied: Annotated[list[str] | None, Field(description="ids of the recalled items you actually used")] = None,
        task: Task = None,
        agent: Agent = None,
        steps: Annotated[int | None, Field(ge=0, description="how many steps the task took")] = None,
        notes: Annotated[str | None, Field(description="anything worth keeping")] = None,
    ) -> OutcomeResult:
        """Report how the task went, once per recall. Success or failure is credited only to the `applied`
        items the named recall injected, so give its `recall_id` and name exactly the recalled items you used
        (none: applied=[]); without a recall_id an outcome is weak evidence, and a second outcome for the same
        recall_id counts for nothing."""
        outcome_id = call("outcome", success=success, recall_id=recall_id, applied=applied, task=task,
                          agent=agent, steps=steps, notes=notes, sent_by=sent_by)
        return OutcomeResult(ok=True, outcome_id=outcome_id)

    for tool in server._tool_manager.list_tools():  # the SDK names no public way to a tool's argument model
        refuse_unknown_arguments(tool)
    return server


def refuse_unknown_arguments(tool) -> None:
    """Make ``tool`` refuse an argument it does not take, naming it ("Extra inputs are not permitted"), and list
    ``additionalProperties: false`` in its schema. The SDK's argument model drops unknown names: ``learn`` with
    ``seed=true`` made an ordinary proposal and answered its id, ``perceive`` with ``tenant="globex"`` wrote into
    the key's tenant, each as if heard (HTTP answers the same bodies 422; docs/security.md, round thirty)."""
    loose = tool.fn_metadata.arg_model
    strict = type(loose.__name__, (loose,), {"__module__": loose.__module__, "model_config": ConfigDict(
        extra="forbid", arbitrary_types_allowed=True)})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)


def _version() -> str:
    from hindbrain import __version__

    return __version__


# -- HTTP: one tenant per API key ---------------------------------------------------------------

class TenantRouter:
    """The ASGI app of ``--transport http``: checks every request's bearer key, then hands the
    request to the streamable HTTP app of the key's tenant (built on first use).

    One MCP server per tenant, rather than one server reading the tenant from each call, keeps
    the binding structural: a session lives in its tenant's session manager, so a session id
    presented with another tenant's key is unknown there. Sessions are also bound to the key
    that opened them (the SDK compares ``scope["user"]``), and a revoked key is refused on its
    next request, because every request reads the key store. The tools are an agent's
    (``roles.ROUTES["/mcp"]``): an analyst key is refused with 403 ``insufficient_scope``.
    """

    def __init__(self, brain, keys: KeyStore, *, host: str = "127.0.0.1", lock: "threading.Lock | None" = None):
        self.brain, self.keys, self.host, self.edge = brain, keys, host, Edge(keys)
        self.lock = lock or threading.Lock()
        self._apps: dict[Principal, Any] = {}  # a server per key
        self._building = anyio.Lock()
        self._sessions = None  # the task group that runs each tenant's session manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = Headers(scope=scope)
        claimed = headers.get("x-hindbrain-tenant")
        try:  # the one edge (principal.py); resolve reads SQLite when the key store changed: off the loop
            live = await anyio.to_thread.run_sync(self.edge.admit_scope, scope, MCP_PATH, claimed)
        except Refused as exc:
            await _REFUSE[exc.kind](scope, receive, send, str(exc))
            return
        key = bearer_key(headers.get("authorization"))
        user = AuthenticatedUser(AccessToken(token=key, client_id=live.key_id, scopes=[]))
        app = await self._app_of(live)
        await app({**scope, "user": user}, receive, send)

    async def _app_of(self, live: Principal):
        """The server of one key: its outcomes name the key as their sender (round thirty-two, docs/security.md)."""
        app = self._apps.get(live)
        if app is not None:
            return app
        async with self._building:  # two first requests of one key build one server
            if live not in self._apps:
                server = build_server(self.brain, live.tenant, self.lock, live.agent,
                                      sent_by=live.producer)
                app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=self.host)
                await self._sessions.start(_run_sessions, server.session_manager)
                self._apps[live] = app
        return self._apps[live]

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with anyio.create_task_group() as sessions:
            self._sessions = sessions
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            sessions.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})


async def _run_sessions(manager, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


async def _unauthorized(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    response = JSONResponse({"error": "invalid_token", "error_description": why}, status_code=401,
                            headers={"WWW-Authenticate": 'Bearer realm="hindbrain"'})
    await response(scope, receive, send)


async def _forbidden(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    # RFC 6750: a valid token without the rights the resource needs
    response = JSONResponse({"error": "insufficient_scope", "error_description": why}, status_code=403,
                            headers={"WWW-Authenticate": 'Bearer realm="hindbrain", error="insufficient_scope"'})
    await response(scope, receive, send)


async def _tenant_mismatch(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    response = JSONResponse({"error": "invalid_request", "error_description": why}, status_code=422)
    await response(scope, receive, send)


_REFUSE = {"unauthorized": _unauthorized, "role": _forbidden, "tenant": _tenant_mismatch}


def http_app(brain, keys: KeyStore, host: str = "127.0.0.1"):
    """The ASGI app of ``--transport http``: ``TenantRouter`` behind the same edge layers as
    ``hindbrain serve`` — request ids (``X-Request-ID``), rate limits by key id and tenant, the
    body size and read deadline (``limits.Limits``)."""
    from hindbrain.service.http import RequestIds
    from hindbrain.service.metrics import Metrics

    return RequestIds(Limits.of(TenantRouter(brain, keys, host=host), keys, brain.settings, prefixes=(MCP_PATH,)),
                      Metrics())


def serve_http(brain, keys: KeyStore, host: str, port: int, listener: socket.socket | None = None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` (on ``listener``, when bound already)
    until interrupted (SIGINT/SIGTERM)."""
    import uvicorn

    config = uvicorn.Config(http_app(brain, keys, host), host=host, port=port, log_level="warning", lifespan="on",
                            **uvicorn_options(brain.settings))
    uvicorn.Server(config).run(sockets=[listener] if listener else None)


# -- command line ---------------------------------------------------------------------------------

class StartupError(ValueError):
    """The server cannot start as asked; the message says what to give instead. ``kind``: the
    edge's refusal (``principal.Refused``) when the API key was refused, else None."""

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        self.kind = kind


def stdio_tenant(tenant: str | None, key: str | None, keys: KeyStore, key_env: str = KEY_ENV) -> str:
    """The tenant a stdio server serves: ``--tenant``, or the tenant of the API key in ``key_env``
    (a key whose role allows the MCP tools: agent or admin). Both given: they must agree."""
    if key:
        try:
            return Edge(keys).admit(f"Bearer {key}", MCP_PATH, tenant or None).tenant
        except Refused as exc:
            raise StartupError(_STARTUP[exc.kind].format(env=key_env, tenant=tenant, why=exc), exc.kind) from None
    if tenant and tenant.strip():
        return tenant
    raise StartupError(f"give --tenant T, or an API key (`hindbrain keys create --tenant T`) in ${key_env}")


_STARTUP = {"unauthorized": "the API key in ${env} is unknown or revoked",
            "role": "the API key in ${env}: {why}",
            "tenant": "--tenant {tenant!r}, but the API key in ${env}: {why}"}


def _listen(host: str, port: int) -> socket.socket:
    try:
        return socket.create_server((host, port), backlog=2048)
    except OSError as exc:
        raise StartupError(f"cannot listen on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc}") from None


def run(args: argparse.Namespace, home: str | Path) -> int:
    """Open the brain in ``home`` and serve MCP on ``args.transport`` until the client leaves
    (stdio) or the process is interrupted (http). Returns the exit code."""
    from hindbrain import Brain

    keys = KeyStore(home)
    try:
        if args.transport == "stdio":
            key = os.environ.get(args.api_key_env)
            tenant = stdio_tenant(args.tenant, key, keys, args.api_key_env)
            agent = keys.resolve(key).agent if key else None  # a key bound to one agent binds the tools
        elif args.tenant:
            raise StartupError("over http each request's API key names its tenant: drop --tenant")
        else:  # the port first: a busy one fails in one line, before the brain opens or anything is announced
            listener = _listen(args.host, args.port)
    except StartupError as exc:
        print(f"hindbrain mcp: {exc}", file=sys.stderr)
        return 2
    brain = Brain.open(home)
    on_main_thread = threading.current_thread() is threading.main_thread()  # signals can be set there only
    previous = signal.getsignal(signal.SIGTERM) if on_main_thread else None
    try:
        if on_main_thread:
            signal.signal(signal.SIGTERM, _interrupt)
        if args.transport == "stdio":
            rate = TokenBuckets(brain.settings.rate_limit, brain.settings.rate_burst)  # HINDBRAIN_RATE_LIMIT
            build_server(brain, tenant, agent=agent, rate=rate).run("stdio")
        else:
            if not keys.list():
                print("hindbrain mcp: no API key exists yet, so every request will be refused: "
                      "create one with `hindbrain keys create --tenant T`", file=sys.stderr)
            print(f"hindbrain mcp: streamable HTTP at http://{args.host}:{args.port}{MCP_PATH} "
                  f"(Authorization: Bearer <API key>)", file=sys.stderr)
            serve_http(brain, keys, args.host, args.port, listener)
    except KeyboardInterrupt:
        pass
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the close short
        brain.close()
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _interrupt(*_) -> None:
    # SIGTERM unwinds like Ctrl-C, so the brain is closed (projections flushed), not abandoned: an
    # MCP client stops a stdio server with it after a grace period, and uvicorn re-raises the
    # SIGTERM it caught once it has shut down (with Python's default handler that kills the process).
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """``python -m hindbrain.service.mcp [--home DIR] ...``: the same server as ``hindbrain mcp``."""
    parser = argparse.ArgumentParser(prog="python -m hindbrain.service.mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--home", help="the embedded brain's folder (default: $HINDBRAIN_HOME or ./.hindbrain)")
    args = add_options(parser).parse_args(argv)
    return run(args, Path(args.home or os.environ.get("HINDBRAIN_HOME") or ".hindbrain"))


if __name__ == "__main__":
    sys.exit(main())
