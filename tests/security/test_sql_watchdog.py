"""Tenant SQL in a process a watchdog can kill (docs/security.md, round twenty-eight).

chDB checks a query's limits between blocks, inside the process that runs it: one function call that outlasts
them could not be stopped, and ran in the brain's process. Now an embedded brain runs tenants' SQL in a worker
process; a query that outruns its time or memory limit is killed with that process, the caller gets an error
naming the limit, and the brain goes on serving (its perceive, recall and the next tenant query)."""

import os
import signal
import threading
import time

import pytest

from hindbrain import Brain
from hindbrain.projections import tenant_worker
from hindbrain.schemas.api import InvalidInput

# a cross join of the events with a million rows, five times over: runs for minutes unless stopped
HEAVY = "SELECT count() FROM events a, events b, events c, (SELECT arrayJoin(range(1000000)) x) d, events e"


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    with Brain.open(tmp_path_factory.mktemp("watchdog") / "b", embedder="none") as b:
        for i in range(10):
            b.perceive(tenant="acme", agent="bot-1", text=f"acme note {i}")
            b.perceive(tenant="globex", agent="bot-1", text=f"globex secret {i}")
        yield b


def wait_for(condition, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def heavy_running(brain, marker: str) -> tuple[threading.Thread, dict]:
    """``HEAVY`` run by a thread as the tenant acme, started and seen running under ``marker``; the dict gets the
    ``error`` it ends with."""
    outcome = {}

    def heavy():
        try:
            brain.tenant_sql(HEAVY, tenant="acme", marker=marker)
        except InvalidInput as exc:
            outcome["error"] = str(exc)

    thread = threading.Thread(target=heavy)
    thread.start()
    assert wait_for(lambda: brain.warehouse.tenant_queries_running(marker) == 1)
    return thread, outcome


def test_a_query_past_the_watchdog_s_deadline_is_killed_and_the_brain_serves_on(brain, monkeypatch):
    # The engine's own limit (5 s) would stop this query between blocks; the watchdog's deadline is arranged to
    # come first (5 s - 4.5 s of "grace"), so what ends it is the kill, as it would be for a call that the
    # engine cannot interrupt.
    brain.warehouse.limit_tenants(max_execution_time=5)
    try:
        assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]
        # arranged after the worker started and made the tenant's views: under load that took past 0.5 s
        monkeypatch.setattr(tenant_worker, "GRACE_SECONDS", -4.5)
        worker = brain.warehouse._worker  # None when tenants' SQL runs in the brain's process (the base)
        pid = worker._process.pid if worker else None
        thread, outcome = heavy_running(brain, "hindbrain-sql-watchdog")
        brain.perceive(tenant="globex", agent="bot-1", text="globex goes on")  # served while it runs
        assert brain.recall(tenant="globex", agent="bot-1", query="globex").recall_id
        thread.join(30)
        assert not thread.is_alive()
        assert "max_execution_time" in outcome["error"] and "killed" in outcome["error"], outcome
        assert pid is not None and tenant_worker.resident_bytes(pid) == 0  # the process is gone
        # the next query starts a new worker and sees what was written meanwhile; the arranged deadline is the
        # killed query's, not this one's (a new worker's first query under load can take past 0.5 s)
        monkeypatch.undo()
        assert brain.sql("SELECT count() AS n FROM events", tenant="globex") == [{"n": 11}]
        assert brain.warehouse._worker._process.pid != pid
    finally:
        brain.warehouse.limit_tenants()


def test_a_worker_past_its_memory_limit_is_killed_naming_the_limit(brain, monkeypatch):
    # any resident memory is "past the limit and its margin" here: the watchdog's memory check, arranged
    monkeypatch.setattr(tenant_worker, "MEMORY_MARGIN", -(1 << 40))
    with pytest.raises(InvalidInput, match="max_memory_usage"):
        brain.sql(HEAVY, tenant="acme")
    monkeypatch.undo()
    assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]


def test_a_worker_that_dies_mid_query_is_an_error_and_the_next_query_starts_another(brain):
    # what a crash inside the engine (a segfault in a function) does to the worker; in the brain's process it
    # would end the brain
    brain.sql("SELECT 1 AS x", tenant="acme")
    pid = brain.warehouse._worker._process.pid
    thread, outcome = heavy_running(brain, "hindbrain-sql-dies")
    os.kill(pid, signal.SIGKILL)
    thread.join(30)
    assert "process ended while it ran" in outcome["error"], outcome
    assert brain.sql("SELECT count() AS n FROM events WHERE text LIKE 'acme note%'", tenant="acme") == [{"n": 10}]


def test_the_worker_writes_nothing_and_sees_only_the_tenant_s_rows(brain):
    assert brain.sql("SELECT count() AS n FROM events WHERE text LIKE 'globex%'", tenant="acme") == [{"n": 0}]
    brain.perceive(tenant="acme", agent="bot-1", text="acme fresh")
    assert brain.sql("SELECT count() AS n FROM events WHERE text = 'acme fresh'", tenant="acme") == [{"n": 1}]
    worker = brain.warehouse._worker
    table = next(t for t in worker.tables if t.name == "events")
    before = tenant_worker.part_names(table.path)
    statement = tenant_worker.attach_statement(table, "hindbrain", worker.root)
    assert "readonly = 1" in statement and table.uuid in statement
    assert tenant_worker.part_names(table.path) == before


@pytest.mark.parametrize("started, now, rss, limit", [
    (0.0, 12.5, 0, "max_execution_time"), (0.0, 11.0, 0, None),
    (0.0, 1.0, (1 << 30) + (513 << 20), "max_memory_usage"), (0.0, 1.0, 1 << 30, None)])
def test_the_watchdog_s_measure(started, now, rss, limit):
    limits = {"max_execution_time": 10, "max_memory_usage": 1 << 30}
    assert tenant_worker.outran(started, now, rss, limits) == limit


def test_a_killed_worker_leaves_no_folder_behind(brain):
    # A kill runs no clean-up in the worker: its snapshot (hard links to every part it linked) stayed on disk,
    # keeping the bytes of parts the brain later merged away — one folder per kill, and a tenant can cause kills
    # at will (a heavy query, a client that goes away). The folders are counted where the brain makes them.
    for _ in range(3):
        if (worker := brain.warehouse._worker) is not None and worker._process is not None:
            worker._process.kill()
            worker._process.wait(5)
        assert brain.sql("SELECT count() AS n FROM events WHERE text LIKE 'acme note%'", tenant="acme") == [{"n": 10}]
    homes = tenant_worker.worker_homes(brain.warehouse._worker.root)
    assert os.listdir(homes) == [os.path.basename(brain.warehouse._worker._home)]  # the live worker's


def test_a_worker_that_dies_with_the_query_unread_is_an_error_naming_it(brain):
    # killed before it read the request (stopped, then killed: the kernel's OOM killer, an operator): its end of the
    # socket closed with our bytes unread, and the brain raised the socket's ConnectionResetError (a 500 over
    # HTTP, on every run of this test at the base), not the "process ended" refusal of a worker dead mid-query
    assert brain.sql("SELECT count() AS n FROM events WHERE text LIKE 'acme note%'", tenant="acme") == [{"n": 10}]
    pid, outcome = brain.warehouse._worker._process.pid, {}
    os.kill(pid, signal.SIGSTOP)

    def query():
        try:
            outcome["rows"] = brain.tenant_sql("SELECT 1 AS x", tenant="acme", marker="hindbrain-sql-unread")
        except Exception as exc:  # noqa: BLE001 - which exception is what the test checks
            outcome["error"] = exc

    thread = threading.Thread(target=query)
    thread.start()
    # the request left unread is the query's first check since round thirty-two (sqlglot's parse runs in the worker)
    assert wait_for(lambda: brain.warehouse._worker._marker == "hindbrain-sql-unread")
    os.kill(pid, signal.SIGKILL)
    thread.join(30)
    assert "rows" in outcome or (isinstance(outcome["error"], InvalidInput)
                                 and "process ended" in str(outcome["error"])), outcome
    assert brain.sql("SELECT count() AS n FROM events WHERE text LIKE 'acme note%'", tenant="acme") == [{"n": 10}]
