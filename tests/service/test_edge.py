"""One edge (design.md §issue-27, point 7): the same role-and-binding matrix through every entry point.

Each case is a key (every role, bound to an agent or not, or no live key), a way of writing the
``Authorization`` header, the tenant the caller claims (none, or another), and the agent the
request names (none, the bound one, another). It goes through the FastAPI routes, the hot
routes, a recall replica (its own recall, and a request it forwards to the owner), MCP over
HTTP and MCP over stdio (its startup check and its tool); every entry point must reach the
decision written out here by hand, and the agent an accepted perception was recorded as."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from http_helpers import call, free_port, serving
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError

from hindbrain.service.handover import serve_records
from hindbrain.service.http import create_app
from hindbrain.service.limits import TokenBuckets
from hindbrain.service.mcp import MCP_PATH, StartupError, build_server, http_app, stdio_tenant
from hindbrain.service.principal import bearer_key
from hindbrain.service.replica import Follower, OwnerLink, ReplicaRoutes, replica_app
from hindbrain.settings import Settings

TOKEN = "edge-test-token"
BOUND = "bot-1"
KEYS = [(role, agent) for role in ("agent", "analyst", "admin") for agent in (None, BOUND)] + [("none", None)]
STYLES = ("Bearer {key}", "bearer \t  {key}")  # the scheme in any case, any whitespace: one key
CLAIMS = (None, "globex")
NAMED = (None, BOUND, "bot-2")


def expected(role: str, bound: str | None, claim: str | None, named: str | None) -> str:
    """The decision, from the rules of docs/security.md ("One edge"), not from the code."""
    if role == "none":
        return "unauthorized"
    if claim is not None:
        return "tenant"
    if role == "analyst":  # every case here calls an agent route or tool
        return "role"
    if bound is not None and named not in (None, bound):
        return "agent"
    return f"ok:{bound or named or '-'}"


def _owner_app(brain, keys):
    """The owner's API with its replicas' internal route."""
    app = create_app(brain, keys)
    app.front = ReplicaRoutes(app.front, TOKEN, set())
    return app


@asynccontextmanager
async def _linked(brain, owner_base: str):
    """An ``OwnerLink`` to the owner at ``owner_base`` (over TCP, not its Unix socket) and a
    records socket that queues what the replica hands over in ``brain``, as ``serve_owner``'s."""
    async def append(records: list, messages: list) -> None:
        brain.runner.defer(records, messages)

    with tempfile.TemporaryDirectory(prefix="hb-edge-") as folder:
        path = str(Path(folder) / "records.sock")
        server = await serve_records(path, TOKEN, append)
        owner = OwnerLink("unused.sock", TOKEN, records=path)
        await owner.client.aclose()
        owner.client = httpx.AsyncClient(base_url=owner_base, timeout=30)
        try:
            yield owner
        finally:
            await owner.aclose()
            server.close()


@contextmanager
def _uvicorn(app):
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    home = tmp_path_factory.mktemp("edge")
    with serving(home, app_of=_owner_app) as (base, brain, keys), _uvicorn(http_app(brain, keys)) as mcp_base:
        key = {(role, agent): keys.create("acme", f"{role} {agent}", role, agent) for role, agent in KEYS[:-1]}
        key["none", None] = "hb_000000000000_not-a-key"
        keys.create("globex", "the other tenant", "admin")
        yield home, base, mcp_base + MCP_PATH, brain, keys, key


def _agent_of(brain, event_id: str) -> str:
    [row] = brain.sql("SELECT agent FROM events WHERE event_id = {e:String}", {"e": event_id})
    return row["agent"] or "-"


def _decision(status: int, body, brain=None, event_id: str | None = None) -> str:
    text = str(body)
    if status == 200:
        return f"ok:{_agent_of(brain, event_id)}" if event_id else "ok"
    kinds = {401: "unauthorized", 422: "tenant" if "tenant" in text else f"422 {text}",
             403: "agent" if "acts as agent" in text else "role"}
    return kinds.get(status, f"{status} {text}")


def _headers(authorization: str, claim: str | None) -> dict:
    return {"Authorization": authorization, **({"X-Hindbrain-Tenant": claim} if claim else {})}


def _named(named: str | None) -> dict:
    return {"agent": named} if named else {}


def test_every_entry_point_decides_the_matrix_alike(world):
    home, base, mcp_url, brain, keys, key = world
    # each header style in turn (3 agents a key and claim: the styles meet every combination)
    cases = [(k, STYLES[n % 2], c, a) for n, (k, c, a) in enumerate(itertools.product(KEYS, CLAIMS, NAMED))]
    decided: dict[str, list[str]] = {"expected": [expected(r, a, c, n) for (r, a), _, c, n in cases]}

    def http(path: str, fields: dict, headers: dict, id_of) -> str:
        status, body, _ = call(base, "POST", path, fields, headers=headers)
        return _decision(status, body, brain, id_of(body) if status == 200 else None)

    decided["fastapi route"] = [
        http("/v1/perceive/batch", {"events": [{"text": "via FastAPI", **_named(n)}]},
             _headers(s.format(key=key[k]), c), lambda b: b["event_ids"][0]) for k, s, c, n in cases]
    decided["hot route"] = [
        http("/v1/perceive", {"text": "via the hot route", **_named(n)}, _headers(s.format(key=key[k]), c),
             lambda b: b["event_id"]) for k, s, c, n in cases]

    follower = Follower(Settings(home=home, embedder="none"))
    try:
        decided["replica recall"], decided["replica forwarded"] = asyncio.run(_through_replica(
            follower, keys, base, brain, [(_headers(s.format(key=key[k]), c), n) for k, s, c, n in cases]))
    finally:
        follower.close()
    # the recall replica answers recalls itself: no perception to read the agent from
    decided["replica recall"] = [d if not d.startswith("ok") else e if e.startswith("ok") else d
                                 for d, e in zip(decided["replica recall"], decided["expected"], strict=True)]

    decided["mcp over http"] = [anyio.run(_mcp_http, mcp_url, _headers(s.format(key=key[k]), c), n, brain)
                                for k, s, c, n in cases]
    decided["mcp over stdio"] = [_mcp_stdio(brain, keys, key[k], c, n) for k, s, c, n in cases]

    for entry, decisions in decided.items():
        wrong = [(case, want, got) for case, want, got in zip(cases, decided["expected"], decisions, strict=True)
                 if want != got]
        assert not wrong, f"{entry}: {len(wrong)} of {len(cases)} decided otherwise, e.g. {wrong[:3]}"


async def _through_replica(follower, keys, owner_base: str, brain, requests: list) -> tuple[list, list]:
    recalls, forwarded = [], []
    async with _linked(brain, owner_base) as owner, httpx.AsyncClient(
            transport=httpx.ASGITransport(app=replica_app(follower, keys, owner, "replica-test")),
            base_url="http://replica") as replica:
        for headers, named in requests:
            answer = await replica.post("/v1/recall", json={"query": "anything", **_named(named)}, headers=headers)
            assert answer.headers["x-hindbrain-served-by"] == "replica-test"
            recalls.append(_decision(answer.status_code, answer.text))
            answer = await replica.post("/v1/perceive", json={"text": "via a replica", **_named(named)},
                                        headers=headers)
            forwarded.append(_decision(answer.status_code, answer.text, brain,
                                       answer.json()["event_id"] if answer.status_code == 200 else None))
    return recalls, forwarded


async def _mcp_http(url: str, headers: dict, named: str | None, brain) -> str:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "edge-test", "version": "1"}}}
    async with httpx2.AsyncClient(headers=headers) as http:
        first = await http.post(url, json=initialize, headers={"Accept": "application/json, text/event-stream"})
        if first.status_code != 200:
            return _decision(first.status_code, first.text)
        with anyio.fail_after(20):
            async with streamable_http_client(url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("perceive", {"text": "via MCP over HTTP", **_named(named)})
    if result.is_error:
        return _decision(403, result.content[0].text)
    return _decision(200, None, brain, result.structured_content["result"])


def _mcp_stdio(brain, keys, key: str, claim: str | None, named: str | None) -> str:
    """The stdio server's own steps (``mcp.run``): the key and the claimed tenant at startup,
    then the tool of a server bound to the key's tenant and agent."""
    try:
        tenant = stdio_tenant(claim, key, keys)
    except StartupError as exc:
        return exc.kind or f"startup {exc}"
    server = build_server(brain, tenant, agent=keys.resolve(key).agent)
    try:
        result = asyncio.run(server.call_tool("perceive", {"text": "via MCP over stdio", **_named(named)}))
    except ToolError as exc:
        return _decision(403, str(exc))
    if result.is_error:
        return _decision(403, result.content[0].text)
    return _decision(200, None, brain, result.structured_content["result"])


@pytest.mark.parametrize("authorization, key", [
    ("Bearer k", "k"), ("bearer k", "k"), ("BEARER   k  ", "k"), ("\tBearer\tk", "k"), ("Bearer", None),
    ("Basic k", None), ("Bearer k extra", None), ("", None), (None, None), (b"Bearer k", "k")])
def test_the_header_is_read_one_way(authorization, key):
    assert bearer_key(authorization) == key


def test_the_roles_table_decides_the_other_routes_alike_on_the_owner_and_through_a_replica(world):
    home, base, _, brain, keys, key = world
    routes = [("POST", "/v1/sql", {"query": "SELECT 1 AS one"}, {"analyst", "admin"}),
              ("GET", "/v1/keys", None, {"admin"}), ("GET", "/metrics", None, {"admin"}),
              ("GET", "/openapi.json", None, {"agent", "analyst", "admin"}),
              ("POST", "/v1/recall", {"query": "anything"}, {"agent", "admin"})]
    cases = [(method, path, body, role, agent) for method, path, body, _ in routes for role, agent in KEYS]
    want = [200 if role in admitted else 401 if role == "none" else 403
            for _, _, _, admitted in routes for role, _ in KEYS]
    owner = [call(base, method, path, body, key[role, agent])[0] for method, path, body, role, agent in cases]

    async def through_replica() -> list[int]:
        async with _linked(brain, base) as link, httpx.AsyncClient(
                transport=httpx.ASGITransport(app=replica_app(follower, keys, link, "replica-test")),
                base_url="http://replica") as replica:
            return [(await replica.request(method, path, json=body, headers={
                "Authorization": f"Bearer {key[role, agent]}"})).status_code
                for method, path, body, role, agent in cases]

    follower = Follower(Settings(home=home, embedder="none"))
    try:
        replicated = asyncio.run(through_replica())
    finally:
        follower.close()
    assert owner == want and replicated == want


def test_mcp_over_stdio_rates_its_tool_calls(world):
    *_, brain, _, _ = world
    server = build_server(brain, "acme", rate=TokenBuckets(rate=0.01, burst=2))
    for n in range(2):
        asyncio.run(server.call_tool("perceive", {"text": f"rated call {n}"}))
    with pytest.raises(ToolError, match="rate limit: 0.01 tool calls a second"):
        asyncio.run(server.call_tool("perceive", {"text": "one call too many"}))
    rows = brain.sql("SELECT text FROM events WHERE text LIKE 'rated call%' OR text = 'one call too many'")
    assert sorted(r["text"] for r in rows) == ["rated call 0", "rated call 1"]
