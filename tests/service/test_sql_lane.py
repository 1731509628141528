"""``/v1/sql`` off the brain's thread (design.md §issue-27, point 1): a running tenant query delays no other
tenant's recall or perceive, is killed when its client goes away, and its refusals are 422s.

The conditions are arranged, not hoped for: each check waits until the engine lists the heavy
query (``system.processes``) before it calls anything else.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlparse

import pytest
from http_helpers import call, serving

from hindbrain.service.http import SQL_PER_TENANT, create_app

LANE: dict = {}  # the module's server beside the fixture's tuple (``api``)
HEAVY = "SELECT count() FROM events a, events b, events c, (SELECT arrayJoin(range(1000000)) x) d, events e"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    apps = []
    with serving(tmp_path_factory.mktemp("lane"), app_of=lambda b, k: apps.append(create_app(b, k)) or apps[-1]) \
            as (base, brain, keys):
        analyst, admin = keys.create("acme", "tests", "analyst"), keys.create("acme", "tests", "admin")
        # the app's state (each tenant's queries on the lane) and another tenant's analyst
        LANE.update(app=apps[0], globex=keys.create("globex", "tests", "analyst"))
        agent = keys.create("globex", "tests")
        status, _, _ = call(base, "POST", "/v1/perceive/batch",
                            {"events": [{"agent": "bot", "text": f"acme note {n}"} for n in range(20)]}, admin)
        assert status == 200
        yield base, brain, analyst, agent


def sql_queries(brain) -> int:
    """How many tenant queries (they carry a ``hindbrain-sql-`` marker) run now, in the worker or the engine."""
    return brain.warehouse.tenant_queries_running()


def wait_for(condition, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_query_runs_beside_recall_and_perceive_and_dies_with_its_client(api):
    base, brain, analyst, agent = api
    brain.warehouse.limit_tenants(max_execution_time=120)
    try:
        url = urlparse(base)
        body = json.dumps({"query": HEAVY}).encode()
        sock = socket.create_connection((url.hostname, url.port))
        sock.sendall(f"POST /v1/sql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {analyst}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        assert wait_for(lambda: sql_queries(brain) == 1), "the heavy query never ran"
        status, _, _ = call(base, "POST", "/v1/perceive", {"agent": "bot", "text": "globex goes on"}, agent)
        assert status == 200
        status, pack, _ = call(base, "POST", "/v1/recall", {"agent": "bot", "query": "globex"}, agent)
        assert status == 200 and pack["recall_id"]
        assert sql_queries(brain) == 1  # both answered while the query still ran
        sock.close()  # the client goes away: the query is killed, long before its time limit
        assert wait_for(lambda: sql_queries(brain) == 0, seconds=15), "the query outlived its client"
    finally:
        brain.warehouse.limit_tenants()


def sent_sql(base: str, key: str, query: str) -> socket.socket:
    """A ``/v1/sql`` request sent on a socket of its own, its answer unread: closing the socket cancels it."""
    url = urlparse(base)
    body = json.dumps({"query": query}).encode()
    sock = socket.create_connection((url.hostname, url.port))
    sock.sendall(f"POST /v1/sql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def test_one_tenant_s_queries_on_the_lane_are_bounded_and_another_s_are_taken(api):
    # round thirty-two: the lane is one thread for every tenant; one tenant's queries sent back to back queued
    # every other tenant's behind them, unbounded
    base, brain, analyst, _ = api
    waiting = LANE["app"].state.sql_waiting
    brain.warehouse.limit_tenants(max_execution_time=120)
    socks = []
    try:
        socks.append(sent_sql(base, analyst, HEAVY))
        assert wait_for(lambda: sql_queries(brain) == 1), "the heavy query never ran"
        while len(socks) < SQL_PER_TENANT:
            socks.append(sent_sql(base, analyst, HEAVY))
        assert wait_for(lambda: waiting["acme"] == SQL_PER_TENANT), dict(waiting)
        status, body, headers = call(base, "POST", "/v1/sql", {"query": "SELECT 1"}, analyst)
        assert status == 429 and body["detail"][0]["loc"] == ["body", "query"], (status, body)
        assert f"at most {SQL_PER_TENANT}" in body["detail"][0]["msg"] and headers["retry-after"] == "1"
        socks.append(sent_sql(base, LANE["globex"], "SELECT 1"))
        assert wait_for(lambda: waiting["globex"] == 1), dict(waiting)  # taken, queued behind acme's
    finally:
        for sock in socks:
            sock.close()  # each query is cancelled with its client
        assert wait_for(lambda: not waiting, seconds=30), dict(waiting)
        brain.warehouse.limit_tenants()
    status, rows, _ = call(base, "POST", "/v1/sql", {"query": "SELECT count() AS n FROM events"}, analyst)
    assert status == 200 and rows["rows"] == [{"n": 20}]


def test_refusals_and_limits_are_422_on_query_and_views_are_listed(api):
    base, brain, analyst, _ = api
    status, body, _ = call(base, "POST", "/v1/sql", {"query": "SELECT getServerSetting('path')"}, analyst)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "query"]
    assert "getServerSetting" in body["detail"][0]["msg"] and str(brain.settings.home) not in json.dumps(body)
    brain.warehouse.limit_tenants(max_result_rows=5)
    try:
        status, body, _ = call(base, "POST", "/v1/sql", {"query": "SELECT * FROM events"}, analyst)
        assert status == 422 and "max_result_rows" in body["detail"][0]["msg"]
    finally:
        brain.warehouse.limit_tenants()
    status, body, _ = call(base, "GET", "/v1/views", None, analyst)
    assert status == 200 and {"events", "fragments", "feedback"} <= set(body["views"])
    assert {"name": "event_id", "type": "String"} in body["views"]["events"]
    status, rows, _ = call(base, "POST", "/v1/sql", {"query": "SELECT count() AS n FROM events"}, analyst)
    assert status == 200 and rows["rows"] == [{"n": 20}]
