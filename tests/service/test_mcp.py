"""The MCP server (``hindbrain mcp``) through the real MCP client library: a stdio subprocess
spawned by ``stdio_client``, and a streamable HTTP server on a loopback port with API keys."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hindbrain import Brain
from hindbrain.service.keys import KeyStore
from hindbrain.service.mcp import TOOLS, main

REPO = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "hindbrain.service.mcp"]
FAST = {"HINDBRAIN_EMBEDDER": "none"}  # lexical recall only: no model to load in the server
CONDITION, ACTION = "submit does nothing in IAM", "switch to the admin account"
QUERY = "IAM submit does nothing"


def _stdio(home: Path, *args: str, env: dict | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[*SERVER[1:], "--home", str(home), *args],
                                 env={**FAST, **(env or {})}, cwd=str(REPO))


async def _in_session(streams, body):
    read, write = streams
    async with ClientSession(read, write) as session:
        await session.initialize()
        return await body(session)


async def _stdio_session(params: StdioServerParameters, body):
    with anyio.fail_after(25):
        async with stdio_client(params) as streams:
            return await _in_session(streams, body)


async def _call(session: ClientSession, tool: str, **arguments):
    """The structured result of a tool call that must succeed."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def _ids(recalled: dict) -> list[str]:
    return [item["id"] for item in recalled["items"]]


def _recall_ids(home: Path, tenant: str) -> list[str]:
    with Brain.open(home, embedder="none") as brain:
        return [item.id for item in brain.recall(tenant=tenant, query=QUERY).items]


# -- stdio ----------------------------------------------------------------------------------------

def test_stdio_serves_the_loop_for_the_bound_tenant(tmp_path):
    async def loop(session: ClientSession) -> dict:
        listed = await session.list_tools()
        fragment = (await _call(session, "learn", condition=CONDITION, action=ACTION, reason="needs admin"))["result"]
        recalled = await _call(session, "recall", query=QUERY, trigger="anomaly")
        done = await _call(session, "outcome", recall_id=recalled["recall_id"], applied=[fragment], success=True,
                           steps=3)
        after = await _call(session, "recall", query=QUERY, explain=True)
        event = (await _call(session, "perceive", kind="anomaly", text="clicked submit, nothing happened",
                             system="IAM"))["result"]
        blank = await session.call_tool("perceive", {"text": "  "})
        bad_kind = await session.call_tool("perceive", {"text": "x", "kind": "telepathy"})
        still = await _call(session, "recall", query=QUERY)  # the errors did not take the server down
        return {"tools": {t.name for t in listed.tools}, "schemas": {t.name: t.input_schema for t in listed.tools},
                "fragment": fragment, "recalled": recalled, "done": done, "after": after, "event": event,
                "blank": blank, "bad_kind": bad_kind, "still": still}

    got = anyio.run(_stdio_session, _stdio(tmp_path, "--tenant", "acme"), loop)

    assert got["tools"] == set(TOOLS) == {"recall", "perceive", "learn", "outcome"}
    assert all("tenant" not in schema["properties"] for schema in got["schemas"].values())
    fragment, recalled = got["fragment"], got["recalled"]
    assert fragment.startswith("fr_") and _ids(recalled) == [fragment]
    # the rule a model acts on, without the bookkeeping (issue 29: the id travels beside the prompt)
    assert recalled["recall_id"].startswith("rc_") and recalled["recall_id"] not in recalled["prompt"]
    assert f"DO {ACTION}" in recalled["prompt"]
    assert {"id", "kind", "text", "score", "tokens"} <= set(recalled["items"][0])
    assert recalled["items"][0]["why"] is None  # only explain=true carries the score breakdown
    assert got["done"]["ok"] is True and got["done"]["outcome_id"]
    utility = got["after"]["items"][0]["why"]["utility"]
    assert (utility["applied"], utility["success"]) == (1, 1)  # the outcome credited the applied fragment
    assert got["blank"].is_error and "'text'" in got["blank"].content[0].text
    assert got["bad_kind"].is_error and "kind" in got["bad_kind"].content[0].text
    assert {fragment, got["event"]} <= set(_ids(got["still"]))  # still serving; the perceived anomaly is recalled

    with Brain.open(tmp_path, embedder="none") as brain:  # after the server exited: it closed the brain
        units = {i.id: i for i in brain.recall(tenant="acme", query=QUERY).items}
        assert units[fragment].why["utility"]["success"] == 1
        assert brain.explain(got["event"]) and not brain.recall(tenant="beta", query=QUERY).items


def test_stdio_takes_the_tenant_from_an_api_key(tmp_path):
    with Brain.open(tmp_path, embedder="none") as brain:
        mine = brain.learn(tenant="acme", condition=CONDITION, action=ACTION)
        theirs = brain.learn(tenant="beta", condition=CONDITION, action="ask the beta admin")
    key = KeyStore(tmp_path).create("acme")

    async def recall(session: ClientSession):
        return await _call(session, "recall", query=QUERY)

    recalled = anyio.run(_stdio_session, _stdio(tmp_path, env={"HINDBRAIN_API_KEY": key}), recall)
    assert mine in _ids(recalled) and theirs not in _ids(recalled)


@pytest.mark.parametrize("args, key, message", [
    ([], None, "give --tenant T, or an API key"),
    ([], "hb_0123456789ab_unknown", "unknown or revoked"),
    (["--tenant", "beta"], "<acme>", "tenant is 'acme', not 'beta'"),
    (["--transport", "http", "--tenant", "acme"], None, "drop --tenant"),
], ids=["no-tenant", "unknown-key", "tenant-not-the-keys", "http-with-tenant"])
def test_refuses_to_start_without_a_clear_tenant(tmp_path, monkeypatch, capsys, args, key, message):
    if key:
        monkeypatch.setenv("HINDBRAIN_API_KEY", KeyStore(tmp_path).create("acme") if key == "<acme>" else key)
    else:
        monkeypatch.delenv("HINDBRAIN_API_KEY", raising=False)
    assert main(["--home", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "log.sqlite").exists()  # refused before the brain was opened


# -- streamable HTTP ------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """A real ``--transport http`` server in a subprocess on a free loopback port."""

    def __init__(self, home: Path):
        self.home, keys = home, KeyStore(home)
        self.key = {"acme": keys.create("acme"), "acme-2": keys.create("acme"), "beta": keys.create("beta"),
                    "revoked": keys.create("acme"), "analyst": keys.create("acme", role="analyst"),
                    "admin": keys.create("acme", role="admin")}
        assert keys.revoke(self.key["revoked"])
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc = subprocess.Popen([*SERVER, "--home", str(home), "--transport", "http", "--port", str(port)],
                                     env={**os.environ, **FAST}, cwd=REPO, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 90  # at load 28 on 2 cores, start-up took > 25 s; a dead server fails at once
        while True:  # an answer, not a connection: the port is bound before the brain opens
            try:
                httpx2.get(self.url, timeout=1.0)
                return
            except httpx2.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    pytest.fail(f"the MCP HTTP server did not come up: {self.proc.communicate()[1]}")
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM, as a supervisor stops it: it must exit 0, having closed the brain."""
        if self.proc.returncode is None:
            self.proc.terminate()
            _, stderr = self.proc.communicate(timeout=20)
            assert self.proc.returncode == 0, stderr


@pytest.fixture
def http_server(tmp_path):
    """A server of this test's own (it may stop it)."""
    server = HttpServer(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared_http_server(tmp_path_factory):
    """One server for the tests that only talk to it (each start costs ~2 s of imports)."""
    server = HttpServer(tmp_path_factory.mktemp("mcp-http"))
    try:
        yield server
    finally:
        server.stop()


def _bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


async def _http_session(url: str, headers: dict | str, body, statuses: list[int] | None = None, hook=None):
    """Run ``body(session)`` in a real streamable HTTP client session sending ``headers`` (or a key)."""
    async def record(response):
        if statuses is not None:
            statuses.append(response.status_code)

    headers = _bearer(headers) if isinstance(headers, str) else headers
    with anyio.fail_after(20):
        async with httpx2.AsyncClient(headers=headers, event_hooks={"response": [record, *([hook] if hook else [])]}) \
                as http, streamable_http_client(url, http_client=http) as streams:
            return await _in_session(streams, body)


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def test_http_binds_each_request_to_its_keys_tenant(http_server):
    async def acme_learns(session: ClientSession):
        listed = await session.list_tools()
        fragment = (await _call(session, "learn", condition=CONDITION, action=ACTION))["result"]
        return {t.name for t in listed.tools}, fragment, await _call(session, "recall", query=QUERY)

    async def beta_recalls(session: ClientSession):
        return await _call(session, "recall", query=QUERY)

    tools, fragment, recalled = anyio.run(_http_session, http_server.url, http_server.key["acme"], acme_learns)
    assert tools == set(TOOLS) and _ids(recalled) == [fragment]
    assert fragment not in _ids(anyio.run(_http_session, http_server.url, http_server.key["beta"], beta_recalls))

    http_server.stop()
    assert _recall_ids(http_server.home, "acme") == [fragment] and _recall_ids(http_server.home, "beta") == []


def test_http_perceptions_name_the_key_that_sent_them(http_server):
    """Round thirty-two (docs/security.md, "A perception's sender is its key"): a key bound to no agent may name
    any, so its perceptions are the key's (``lifecycle.sender_of``); on the base they were ``sdk/hindbrain``."""
    async def perceives(session: ClientSession):
        return (await _call(session, "perceive", text="submit did nothing", kind="anomaly", agent="a1"))["result"]

    event_id = anyio.run(_http_session, http_server.url, http_server.key["acme"], perceives)
    http_server.stop()
    with Brain.open(http_server.home, embedder="none") as brain:
        rows = brain.sql("SELECT event_id, agent, producer FROM events")
    assert rows == [{"event_id": event_id, "agent": "a1", "producer": f"key/{http_server.key['acme'].split('_')[1]}"}]


@pytest.mark.parametrize("authorization", [None, "Bearer hb_0123456789ab_unknown", "Bearer <revoked>",
                                           "Basic <acme>"], ids=["none", "unknown", "revoked", "not-bearer"])
def test_http_refuses_a_request_without_a_live_key(shared_http_server, authorization):
    http_server = shared_http_server
    for who, key in http_server.key.items():
        authorization = authorization and authorization.replace(f"<{who}>", key)
    headers = {"Authorization": authorization} if authorization else {}
    statuses: list[int] = []

    async def never(session: ClientSession):
        raise AssertionError("initialize succeeded without a live key")

    with pytest.raises(BaseExceptionGroup) as raised:
        anyio.run(_http_session, http_server.url, headers, never, statuses)
    assert any(isinstance(e, MCPError) for e in _leaves(raised.value)), raised.value
    assert statuses and set(statuses) == {401}

    response = httpx2.post(http_server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers=headers)
    assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")


def test_http_tools_need_an_agent_or_admin_key_and_an_analyst_key_gets_403(shared_http_server):
    url, key = shared_http_server.url, shared_http_server.key

    async def tools(session: ClientSession):
        return {t.name for t in (await session.list_tools()).tools}

    assert anyio.run(_http_session, url, key["admin"], tools) == set(TOOLS)
    response = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers=_bearer(key["analyst"]))
    assert response.status_code == 403 and 'error="insufficient_scope"' in response.headers["www-authenticate"]
    assert response.json()["error_description"] == ("/mcp needs an agent key (or an admin key); this API key is "
                                                     "an analyst key")


def test_http_session_is_bound_to_the_key_that_opened_it(shared_http_server):
    url, key = shared_http_server.url, shared_http_server.key
    opened: list[str] = []

    async def record(response):
        opened.append(response.headers.get("mcp-session-id") or "")

    async def reuse_the_session(session: ClientSession):
        assert opened[0]
        message = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}
        common = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": opened[0]}
        async with httpx2.AsyncClient() as raw:
            return [(await raw.post(url, json=message, headers={**common, **_bearer(key[who])})).status_code
                    for who in ("beta", "acme-2", "acme")]

    # Another tenant's key, and another key of the same tenant, find no such session; its own key does.
    statuses = anyio.run(_http_session, url, key["acme"], reuse_the_session, None, record)
    assert statuses == [404, 404, 200]
