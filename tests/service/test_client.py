"""``hindbrain.Client`` and ``AsyncClient`` against a real ``hindbrain serve`` process (design.md §issue-20).

The server runs with a per-key rate limit of one request a second in bursts of 30, and each
test has a key of its own: no test sends 30 requests, except the one that spends its burst to
meet the real 429 with ``Retry-After`` (a token comes back a second later: a wide window). What a real server does
not do on demand — answer 503, answer 403 (before key roles exist), or take a request and
lose its answer — is injected by ``FaultyProxy``, a small HTTP proxy in front of the real
server: the requests it forwards reach the real brain, so what the brain made of a retried
call is read back from it. A closed port stands for a server that is down.
"""

from __future__ import annotations

import asyncio
import http.client
import inspect
import logging
import os
import runpy
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from http_helpers import call, free_port, wait_ready

from hindbrain import (
    AsyncClient,
    AuthenticationError,
    Brain,
    Client,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
    Recalled,
    RecallPack,
    RetryPolicy,
    ServiceError,
    ServiceUnavailable,
)
from hindbrain.schemas.api import PerceiveInput, validated
from hindbrain.service.keys import KeyStore
from hindbrain.streams.log import Position

ROOT = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(attempts=3, backoff_s=0.01)  # retries without the default's waits
STALL_S = 0.5
RATE, BURST = 1, 30  # the server's per-key limit (see the module docstring)


def _key(store: KeyStore, tenant: str) -> str:
    """A key that may call every route: ``admin`` where keys have roles (design.md §issue-19), else any key."""
    if "role" in inspect.signature(store.create).parameters:
        return store.create(tenant, "client tests", role="admin")
    return store.create(tenant, "client tests")


def _spawn(home: Path, port: int, **env) -> subprocess.Popen:
    # cwd=home: `python -m` puts its working directory first on sys.path
    return subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(home), "serve", "--port", str(port),
                             "--replicas", "0"], env={**os.environ, "HINDBRAIN_EMBEDDER": "none", **env},
                            cwd=home, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    proc.stderr.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The brain under test, and keys of globex, the example's tenant and one to revoke."""
    home = tmp_path_factory.mktemp("client")
    store, port = KeyStore(home), free_port()
    keys = {t: _key(store, t) for t in ("globex", "revoked", "example")}
    proc = _spawn(home, port, HINDBRAIN_RATE_LIMIT=str(RATE), HINDBRAIN_RATE_BURST=str(BURST))
    try:
        wait_ready(proc, f"http://127.0.0.1:{port}")
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}", keys=keys, store=store, home=home, pid=proc.pid)
    finally:
        _stop(proc)


@pytest.fixture
def acme(served) -> str:
    """A key of acme's of this test's own (its own rate limit bucket)."""
    return _key(served.store, "acme")


def _spend_burst(url: str, key: str) -> None:
    """Requests until the server answers 429: the key's bucket is empty (the limit counts every
    ``/v1`` request, even one no route answers)."""
    for _ in range(2 * BURST):
        if call(url, "GET", "/v1/spend-the-burst", key=key)[0] == 429:
            return
    raise AssertionError(f"no 429 after {2 * BURST} requests")


class FaultyProxy:
    """Forwards requests to ``upstream``; the next ``faults`` replace answers: ``"drop"``
    forwards the request and closes the connection without its answer (the brain applied it,
    the client never hears), ``"stall"`` forwards it ``STALL_S`` late, a status (``503``)
    answers that status without forwarding."""

    def __init__(self, upstream: str, faults: list):
        self.upstream, self.faults, self.seen = upstream.removeprefix("http://"), list(faults), []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    proxy.seen.append((self.command, self.path, body))
                    fault = proxy.faults.pop(0) if proxy.faults else None
                if fault == "stall":  # an answer slower than the client's timeout
                    time.sleep(STALL_S)
                    fault = None
                if fault is None or fault == "drop":
                    status, headers, answer = proxy.forward(self.command, self.path, self.headers, body)
                    if fault == "drop":
                        self.close_connection = True
                        return
                else:
                    status, headers, answer = fault, [("Retry-After", "0")], orjson.dumps({"detail": "injected"})
                try:
                    self.send_response(status)
                    for name, value in headers:
                        if name.lower() not in ("content-length", "connection", "date", "server"):
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up waiting (a stall past its timeout)

            do_GET = do_POST = do_any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def forward(self, method: str, path: str, headers, body: bytes):
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        try:
            conn.request(method, path, body=body or None, headers={k: v for k, v in headers.items()
                                                                   if k.lower() not in ("host", "connection")})
            answer = conn.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            conn.close()

    def bodies(self) -> list[dict]:
        return [orjson.loads(body) for _, _, body in self.seen if body]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(served):
    made: list[FaultyProxy] = []

    def _proxy(*faults) -> FaultyProxy:
        made.append(FaultyProxy(served.url, list(faults)))
        return made[-1]

    yield _proxy
    for p in made:
        p.close()


def count(client: Client, query: str, **parameters) -> int:
    return client.sql(f"SELECT count() AS n FROM {query}", parameters)[0]["n"]


# -- Brain's methods, arguments and types -------------------------------------------------------
def test_the_client_has_brains_methods_and_arguments():
    for name in ("perceive", "perceive_many", "learn", "recall", "outcome", "explain", "sql", "pending_traits",
                 "approve", "invalidate", "hindsight", "close"):
        assert callable(getattr(Client, name)) and callable(getattr(AsyncClient, name)), name
    local = {"on_phase"}  # hindsight's progress callback runs in the brain's process: nothing to call over HTTP
    for name in ("explain", "sql", "pending_traits", "hindsight"):
        assert list(inspect.signature(getattr(Client, name)).parameters) == \
            [p for p in inspect.signature(getattr(Brain, name)).parameters if p not in local], name


def test_the_agent_loop_round_trips_as_brain_types(served, acme):
    with Client(served.url, api_key=acme) as client:
        ev = client.perceive(tenant="acme", agent="agent-7", task="t-1", kind="anomaly",
                             text="clicked submit, nothing happened", system="IAM", identity="normal account",
                             action="submit change", expected="success message", actual="no response",
                             entities=["IAM"], scope={"env": "prod"}, ts=datetime(2024, 5, 1, 12, tzinfo=UTC))
        fr = client.learn(tenant="acme", condition="submit does nothing in IAM", action="switch to the admin account",
                          reason="permission operations need admin", evidence="submit succeeded as admin",
                          event_ids=[ev])
        assert ev.startswith("ev_") and fr.startswith("fr_")
        query = {"agent": "agent-7", "task": "t-2", "query": "how do I change IAM permissions?", "budget_tokens": 400}
        pack = client.recall(tenant="acme", **query)
        assert isinstance(pack, RecallPack) and all(isinstance(i, Recalled) for i in [*pack.items, *pack.briefing])
        rule = next(i for i in pack.items if i.id == fr)
        assert (rule.kind, rule.event_ids, rule.action) == ("fragment", [ev], "switch to the admin account")
        assert rule.why and isinstance(rule.score, float) and rule.tokens > 0
        assert pack.render(detail=True).startswith(f"[hindbrain recall {pack.recall_id}:") and \
            "WHEN submit does nothing" in pack.render()
        status, answer, _ = call(served.url, "POST", "/v1/recall", query, acme)
        assert status == 200 and RecallPack.from_dict(answer).render() == answer["prompt"]  # the server's block
        assert [i.id for i in RecallPack.from_dict(answer).items] == [i.id for i in pack.items]

        oc = client.outcome(tenant="acme", recall_id=pack.recall_id, task="t-2", applied=[fr], success=True, steps=2)
        assert oc.startswith("oc_")
        assert client.sql("SELECT applied, success FROM outcomes WHERE outcome_id = {o:String}", {"o": oc}) == \
            [{"applied": [fr], "success": True}]
        assert client.sql("SELECT ts FROM events WHERE event_id = {e:String}", {"e": ev}) == \
            [{"ts": "2024-05-01T12:00:00"}]  # a DateTime as JSON carries it (UTC)

        chain = client.explain(fr, tenant="acme")
        _, raw, _ = call(served.url, "GET", f"/v1/explain/{fr}", key=acme)
        assert [e["record"] for e in chain] == [e["record"] for e in raw["chain"]]
        assert all(set(e) >= {"position", "record_type", "relations", "record"} and isinstance(e["position"], Position)
                   for e in chain)
        assert {"cognition", "perception"} <= {e["record_type"] for e in chain}


def test_a_batch_is_appended_whole_or_refused_naming_the_event(served, acme):
    with Client(served.url, api_key=acme) as client:
        ids = client.perceive_many([{"tenant": "acme", "text": f"batch event {n}"} for n in range(3)])
        assert len(set(ids)) == 3 and count(client, "events WHERE has({ids:Array(String)}, event_id)", ids=ids) == 3
        bad = [{"text": "refused batch"}, {"text": "refused batch"}, {"kind": "gossip", "text": "refused batch"}]
        with pytest.raises(InvalidInput, match="event #2") as refused:
            client.perceive_many(bad)
        assert refused.value.field == "kind"
        assert count(client, "events WHERE text = 'refused batch'") == 0


def test_a_refused_field_is_brains_invalid_input(served, acme):
    with Client(served.url, api_key=acme) as client:
        with pytest.raises(InvalidInput) as refused:
            client.perceive(kind="gossip", text="x")
        with pytest.raises(InvalidInput) as embedded:  # what Brain.perceive raises for the same fields
            validated(PerceiveInput, "perceive", tenant="acme", kind="gossip", text="x")
        assert (refused.value.field, str(refused.value)) == (embedded.value.field, str(embedded.value))
        for method, fields, field in [(client.perceive, {"kind": "anomaly"}, "text"),
                                      (client.recall, {"budget_tokens": 100}, "query"),
                                      (client.learn, {"condition": "c", "action": "a", "source": "read"}, "citation"),
                                      (client.outcome, {"applied": []}, "success"),
                                      (client.perceive, {"text": "x", "entities": {"a set"}}, "entities"),
                                      (client.sql, {"query": ""}, "query")]:
            with pytest.raises(InvalidInput) as refused:
                method(**fields)
            assert refused.value.field == field and isinstance(refused.value, ValueError), (fields, refused.value)


def test_the_key_decides_the_tenant(served, acme):
    with Client(served.url, api_key=acme, tenant="acme") as ours, \
            Client(served.url, api_key=served.keys["globex"]) as globex:
        secret = ours.learn(condition="the vault door sticks", action="lift the handle before turning")
        wrong = "written under the wrong tenant"
        for refused_call in (lambda: ours.perceive(tenant="globex", text=wrong),
                             lambda: globex.perceive_many([{"tenant": "acme", "text": wrong}]),
                             lambda: globex.recall(tenant="acme", query="the vault door sticks"),
                             lambda: globex.explain(secret, tenant="acme"),
                             lambda: globex.sql("SELECT * FROM fragments", tenant="acme")):
            with pytest.raises(InvalidInput, match="this API key's tenant is") as refused:
                refused_call()
            assert refused.value.field == "tenant"
        with pytest.raises(InvalidInput, match="event #1: a batch is one tenant's"):  # as Brain.perceive_many
            ours.perceive_many([{"tenant": "acme", "text": "a"}, {"tenant": "globex", "text": "b"}])
        assert globex.perceive(tenant="globex", text="globex's own event")  # the key's tenant named: it goes on
        status, answer, _ = call(served.url, "POST", "/v1/learn", {"condition": "c", "action": "a"}, acme,
                                 headers={"X-Hindbrain-Tenant": "globex"})  # what the client sends, by hand
        assert status == 422 and answer["detail"][0]["loc"] == ["header", "tenant"]
        assert globex.explain(secret) == []
        assert secret not in [i.id for i in globex.recall(query="the vault door sticks")]
        assert count(globex, "fragments WHERE fragment_id = {f:String}", f=secret) == 0
        assert count(ours, "events WHERE text = 'written under the wrong tenant'") == 0
        assert count(globex, "events WHERE text = 'written under the wrong tenant'") == 0


def test_a_role_that_does_not_allow_the_route_is_a_permission_error(served):
    if "role" not in inspect.signature(KeyStore.create).parameters:
        pytest.skip("no key roles (design.md §issue-19) in this tree: the 403 mapping is tested with an injected "
                    "answer only")
    agent = served.store.create("acme", "client tests", role="agent")
    with Client(served.url, api_key=agent) as client, pytest.raises(PermissionDenied) as denied:
        client.sql("SELECT 1")
    assert denied.value.status == 403 and isinstance(denied.value, PermissionError)


def test_an_unknown_or_revoked_key_is_an_authentication_error(served):
    with Client(served.url, api_key="hb_000000000000_not-a-key") as client, pytest.raises(AuthenticationError) as e:
        client.recall(query="anything")
    assert e.value.status == 401 and e.value.request_id
    with Client(served.url, api_key=served.keys["revoked"]) as client:
        assert client.perceive(text="before the key was revoked")
        assert served.store.revoke(served.keys["revoked"])
        with pytest.raises(AuthenticationError):
            client.perceive(text="after")


def test_the_same_event_id_twice_is_one_event(served, acme):
    with Client(served.url, api_key=acme) as client:
        event = {"kind": "observation", "text": "the same event, sent twice", "event_id": "ev_client_twice"}
        assert client.perceive(**event) == client.perceive(**event) == "ev_client_twice"
        assert count(client, "events WHERE event_id = 'ev_client_twice'") == 1


# -- retries -------------------------------------------------------------------------------------
def test_a_perception_whose_answers_were_lost_is_sent_again_as_one_event(served, acme, proxy):
    faulty = proxy("drop", "drop")  # the brain takes it twice; the client hears nothing twice
    with Client(faulty.url, api_key=acme, retry=FAST) as client:
        ev = client.perceive(task="t-drop", kind="feedback", polarity=-1.0, text="the summary is too long",
                             entities=["summary"])
        fr = client.learn(condition="a summary is asked for", action="keep it under five lines")
    assert [b["event_id"] for b in faulty.bodies()[:3]] == [ev] * 3  # one id, made by the client
    assert faulty.bodies()[3]["fragment_id"] == fr
    with Client(served.url, api_key=acme) as client:
        assert count(client, "events WHERE event_id = {e:String}", e=ev) == 1
        # three copies of one negative are not the three negatives that teach a rule
        assert count(client, "fragments WHERE text LIKE '%the summary is too long%'") == 0
        assert count(client, "fragments WHERE fragment_id = {f:String}", f=fr) == 1


def test_an_outcome_is_never_sent_twice_once_it_may_have_arrived(served, acme, proxy):
    faulty = proxy("drop", 503)
    with Client(faulty.url, api_key=acme, retry=FAST) as client:
        with pytest.raises(ServiceUnavailable, match="may have reached the service") as lost:
            client.outcome(task="t-lost", success=True, notes="answer lost")
        assert lost.value.status is None and len(faulty.seen) == 1
        with pytest.raises(ServiceUnavailable) as unavailable:
            client.outcome(task="t-lost", success=True, notes="refused with 503")
        assert unavailable.value.status == 503 and len(faulty.seen) == 2
    with Client(served.url, api_key=acme) as client:
        assert count(client, "outcomes WHERE task = 't-lost'") == 1  # the dropped one did arrive, once


def test_reads_are_retried_on_503_and_refusals_are_not(served, acme, proxy):
    faulty = proxy(503, 503)
    with Client(faulty.url, api_key=acme, retry=FAST) as client:
        assert isinstance(client.recall(query="IAM submit"), RecallPack) and len(faulty.seen) == 3
        faulty.faults[:] = [403, 404]
        with pytest.raises(PermissionDenied) as denied:
            client.sql("SELECT 1")
        assert isinstance(denied.value, PermissionError) and denied.value.status == 403
        with pytest.raises(NotFound):
            client.pending_traits()
        assert len(faulty.seen) == 5  # neither refusal was sent again
        faulty.faults[:] = [503] * 3
        with pytest.raises(ServiceUnavailable):
            client.explain("fr_x")
        assert len(faulty.seen) == 8  # FAST's 3 attempts, then the error


def test_a_timeout_is_a_lost_answer(served, acme, proxy):
    faulty = proxy("stall", None, "stall")
    with Client(faulty.url, api_key=acme, retry=FAST, timeout=STALL_S / 2) as client:
        assert isinstance(client.recall(query="IAM submit"), RecallPack)  # a read: asked again, answered at once
        with pytest.raises(ServiceUnavailable, match="ReadTimeout.*may have reached the service"):
            client.outcome(task="t-timeout", success=True)
    assert len(faulty.seen) == 3


def test_a_server_that_is_down_is_tried_a_bounded_number_of_times(caplog):
    with caplog.at_level(logging.INFO, logger="hindbrain.client"), \
            Client(f"http://127.0.0.1:{free_port()}", api_key="hb_000000000000_unused", retry=FAST) as client, \
            pytest.raises(ServiceUnavailable, match="ConnectError"):
        client.outcome(success=True)  # never sent: safe to try again even without an id
    assert [r.getMessage().split("; ")[-1].split(" in ")[0] for r in caplog.records] == \
        ["attempt 2 of 3", "attempt 3 of 3"]


def test_a_429_is_waited_out_as_retry_after_says(served, acme):
    limited = _key(served.store, "acme")
    with Client(served.url, api_key=limited) as client:
        _spend_burst(served.url, limited)
        started = time.monotonic()
        client.outcome(success=True, task="t-429")  # 429, Retry-After: 1, then accepted (even an outcome)
        assert time.monotonic() - started >= 0.9
    with Client(served.url, api_key=limited, retry=RetryPolicy(attempts=1)) as once, \
            pytest.raises(RateLimited) as refused:
        for _ in range(2 * BURST):  # reads until one is refused: however long since the last, the bucket empties
            once.sql("SELECT 1")
    assert (refused.value.status, refused.value.retry_after) == (429, 1.0)
    with Client(served.url, api_key=acme) as client:
        assert count(client, "outcomes WHERE task = 't-429'") == 1  # the refused ones wrote nothing


# -- the human decisions and the jobs ------------------------------------------------------------
def test_decisions_and_jobs_go_through(served, acme):
    with Client(served.url, api_key=acme) as client:
        fr = client.learn(condition="the export page is blank", action="use the v1 export")
        assert client.pending_traits("acme") == []
        with pytest.raises(InvalidInput, match="not a proposed trait") as refused:
            client.approve(fragment_id=fr, approver="ops")
        assert refused.value.field == "fragment_id"
        decision = client.invalidate(fragment_id=fr, reason="export v1 was removed", version="export v2")
        assert decision.startswith("dc_")
        assert client.sql("SELECT status FROM unit_states WHERE fragment_id = {f:String}", {"f": fr}) == \
            [{"status": "invalid"}]
        report = client.hindsight()  # Brain's default: run now
        assert report["skipped"] == {} and report["decisions"] >= 1  # at least the run's own record


# -- asyncio -------------------------------------------------------------------------------------
def test_the_async_client_is_the_same_api_awaited(served, acme, proxy):
    faulty = proxy("drop")

    async def main():
        async with AsyncClient(served.url, api_key=acme) as client:
            ids = await asyncio.gather(*(client.perceive(agent="async", text=f"async event {n}") for n in range(8)))
            fr = await client.learn(condition="the async queue stalls", action="restart the worker", event_ids=ids[:1])
            pack = await client.recall(agent="async", query="the async queue stalls")
            assert isinstance(pack, RecallPack) and fr in [i.id for i in pack.items]
            assert (await client.outcome(recall_id=pack.recall_id, applied=[fr], success=True)).startswith("oc_")
            assert any(e["record_type"] == "cognition" for e in await client.explain(fr))
            assert (await client.sql("SELECT count() AS n FROM events WHERE agent = 'async'")) == [{"n": 8}]
            with pytest.raises(InvalidInput) as refused:
                await client.recall(query="x", budget_tokens=0)
            assert refused.value.field == "budget_tokens"
        async with AsyncClient(faulty.url, api_key=acme, retry=FAST) as client:
            ev = await client.perceive(text="async, answer lost once")
        async with AsyncClient(served.url, api_key="hb_000000000000_nope") as client:
            with pytest.raises(AuthenticationError):
                await client.perceive(text="x")
        return ids, ev

    ids, ev = asyncio.run(main())
    assert len(set(ids)) == 8 and [b["event_id"] for b in faulty.bodies()] == [ev, ev]


# -- the example ---------------------------------------------------------------------------------
def test_the_client_loop_example_learns_over_http(served, monkeypatch, capsys):
    for name, value in {"HINDBRAIN_URL": served.url, "HINDBRAIN_API_KEY": served.keys["example"],
                        "HINDBRAIN_TENANT": "example"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(ROOT / "examples"))  # as `python examples/client_loop.py` has it
    runpy.run_path(str(ROOT / "examples" / "client_loop.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "first task failed (and taught a lesson); second task succeeded with the lesson" in out
    assert "WHEN " in out and "admin account" in out


def test_service_errors_share_one_base():
    for kind in (AuthenticationError, PermissionDenied, NotFound, RateLimited, ServiceUnavailable):
        assert issubclass(kind, ServiceError)
    assert not issubclass(InvalidInput, ServiceError)


def test_the_langgraph_store_works_over_the_client(served):
    """``HindbrainStore`` calls only what ``Brain`` and ``Client`` share: over HTTP the same
    put, get and search (a recall with its explanations) work."""
    from hindbrain.integrations.langgraph import HindbrainStore

    with Client(served.url, api_key=_key(served.store, "lg")) as client:
        store = HindbrainStore(client)  # the layout (tenant, agent, user): the namespace names the tenant
        namespace = ("lg", "support-bot", "bob")
        store.put(namespace, "language", {"text": "bob prefers answers in French"})
        store.put(namespace, "language", {"text": "bob now prefers answers in English"})
        assert store.get(namespace, "language").value["text"] == "bob now prefers answers in English"
        found = store.search(namespace, query="which language does bob prefer")
        assert [item.key for item in found][:1] == ["language"] and found[0].why and found.recall_id
        assert "English" in found[0].value["text"]


def test_the_langgraph_store_works_with_an_agent_key(served):
    """An agent holds an agent key: put, get, list, search and delete need no analyst's SQL
    (``/v1/store/items``), and a key bound to one agent reads only its own and shared items."""
    from hindbrain.integrations.langgraph import HindbrainStore

    agent_key = served.store.create("lg-agent", "store", role="agent")
    bound_key = served.store.create("lg-agent", "store", role="agent", agent="crm")
    with Client(served.url, api_key=agent_key) as client, Client(served.url, api_key=bound_key) as bound:
        store, crm = HindbrainStore(client), HindbrainStore(bound)
        ns = ("lg-agent", "support-bot", "bob")
        store.put(ns, "language", {"text": "bob wants short answers in French"})
        store.put(ns, "hidden", {"text": "short answers are a secret"}, index=False)
        store.put(("lg-agent",), "policy", {"text": "answers are short for everyone"})
        assert store.get(ns, "language").value == {"text": "bob wants short answers in French"}
        assert [i.key for i in store.search(("lg-agent",))] == ["language", "hidden", "policy"]
        found = store.search(("lg-agent", "support-bot"), query="short answers")
        assert [i.key for i in found] == ["language"]  # hidden: index=False; policy: not under the prefix
        assert store.list_namespaces(prefix=("lg-agent",)) == [("lg-agent",), ns]
        store.delete(ns, "language")
        assert store.get(ns, "language") is None
        assert [i.key for i in crm.search(("lg-agent",))] == ["policy"]  # support-bot's items are not crm's
        assert crm.get(ns, "hidden") is None


class HungServer:
    """A socket that accepts connections and never answers (a hung server); counts them."""

    def __init__(self):
        import socket

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url, self.accepted, self._held = f"http://127.0.0.1:{self.sock.getsockname()[1]}", 0, []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self._held.append(conn)  # held open, never read nor answered

    def close(self):
        self.sock.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def hung():
    server = HungServer()
    yield server
    server.close()


def test_a_hung_server_is_unavailable_within_the_deadline(hung):
    """The deadline bounds the whole call, retries included; the default is 10 s (3 s to connect,
    10 s to read), not the 4 x 30 s it was."""
    assert RetryPolicy().deadline_s == 10.0
    with Client(hung.url, api_key="hb_000000000000_unused") as default:
        assert (default.timeout.connect, default.timeout.read) == (3.0, 10.0)
    with Client(hung.url, api_key="hb_000000000000_unused", retry=RetryPolicy(deadline_s=1.0)) as client:
        started = time.monotonic()
        with pytest.raises(ServiceUnavailable, match="ReadTimeout"):
            client.recall(tenant="acme", query="anything")  # a read: retried, but only within the deadline
        assert time.monotonic() - started < 2.5


def test_the_client_checks_fields_as_brain_does_before_sending(hung):
    """The same ``InvalidInput`` as ``Brain`` (the field named), and no connection made."""
    with Client(hung.url, api_key="hb_000000000000_unused") as client:
        for call_, field in [(lambda: client.perceive(tenant=123, text="x"), "tenant"),
                             (lambda: client.perceive(tenant="", text="x"), "tenant"),
                             (lambda: client.perceive(tenant="acme"), "text"),
                             (lambda: client.recall(tenant=" ", query="x"), "tenant"),
                             (lambda: client.sql("SELECT 1", tenant=7), "tenant"),
                             (lambda: client.perceive_many([{"tenant": "acme", "text": "a"}, {"kind": "x"}]), "kind"),
                             (lambda: client.perceive_many([{"tenant": "a", "text": "a"},
                                                            {"tenant": "b", "text": "b"}]), "tenant")]:
            with pytest.raises(InvalidInput) as refused:
                call_()
            assert refused.value.field == field, refused.value
        with pytest.raises(InvalidInput) as embedded:
            validated(PerceiveInput, "perceive", tenant=123, text="x")
        with pytest.raises(InvalidInput) as sent:
            client.perceive(tenant=123, text="x")
        assert str(sent.value) == str(embedded.value)
    assert hung.accepted == 0


def test_one_event_id_with_other_content_is_a_conflict_over_http(served, acme):
    with Client(served.url, api_key=acme) as client:
        client.perceive(text="the first words", event_id="ev_http_conflict")
        with pytest.raises(InvalidInput, match="'ev_http_conflict'.*other content") as refused:
            client.perceive(text="other words", event_id="ev_http_conflict")
        assert refused.value.field == "event_id"
        with pytest.raises(InvalidInput, match="event #0.*'ev_http_conflict'"):
            client.perceive_many([{"text": "other words again", "event_id": "ev_http_conflict"}])
        assert client.sql("SELECT text FROM events WHERE event_id = 'ev_http_conflict'") == \
            [{"text": "the first words"}]


def test_the_command_line_reaches_a_served_home_over_http(served, acme, monkeypatch, capsys):
    """``serve`` writes ``serve.json``; ``hindbrain sql`` on that home goes to the server with
    ``HINDBRAIN_API_KEY``, and without a key says in one line who serves it."""
    from hindbrain.cli import main

    assert orjson.loads((served.home / "serve.json").read_bytes()) == {"pid": served.pid, "url": served.url}
    monkeypatch.delenv("HINDBRAIN_API_KEY", raising=False)
    assert main(["sql", "SELECT 1 AS one", "--home", str(served.home)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"served by process {served.pid} at {served.url}" in err
    with Client(served.url, api_key=acme) as client:
        client.perceive(text="seen through the command line", event_id="ev_cli_served")
    monkeypatch.setenv("HINDBRAIN_API_KEY", acme)
    assert main(["sql", "SELECT text FROM events WHERE event_id = 'ev_cli_served'", "--home", str(served.home)]) == 0
    assert orjson.loads(capsys.readouterr().out) == {"text": "seen through the command line"}
