"""Tenant SQL workers forked by one zygote per process (docs/speed.md, round thirty).

A worker used to be a fresh interpreter that imported pyarrow, clickhouse-connect and chDB (~0.65 s of CPU a start);
now a zygote that loaded them but opened no engine forks one per start. What the worker exists for must hold across
the brains sharing the zygote: each brain's worker is its own process with its own engine and sees its own rows, a
killed worker is a process that has ended, and a zygote that died is started again."""

import contextlib
import os
import signal
import subprocess
import sys

import pytest

from hindbrain import Brain
from hindbrain.projections import tenant_worker, tenant_zygote
from hindbrain.projections.tenant_zygote import ZYGOTE

COUNT = "SELECT count() AS n FROM events WHERE text LIKE '{}%'"


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    with Brain.open(tmp_path_factory.mktemp("zygote") / "b", embedder="none") as b:
        for i in range(3):
            b.perceive(tenant="acme", agent="bot-1", text=f"alpha note {i}")
        yield b


def test_brains_one_after_another_get_forks_of_one_zygote_each_seeing_only_its_rows(tmp_path, request):
    # one embedded engine per process: the brains of a process (a test run's) come one after another
    with Brain.open(tmp_path / "first", embedder="none") as first:
        first.perceive(tenant="acme", agent="bot-1", text="beta note")
        assert first.sql(COUNT.format("beta"), tenant="acme") == [{"n": 1}]
        pid, zygote = first.warehouse._worker._process.pid, ZYGOTE._process.pid
        assert parent_of(pid) == zygote != os.getpid()
    assert tenant_worker.resident_bytes(pid) == 0  # the closed brain's worker has ended
    brain = request.getfixturevalue("brain")  # opened now, the first one closed
    assert brain.sql(COUNT.format("beta"), tenant="acme") == [{"n": 0}]
    assert brain.sql(COUNT.format("alpha"), tenant="acme") == [{"n": 3}]
    assert parent_of(brain.warehouse._worker._process.pid) == zygote


def test_a_zygote_that_died_is_started_again(brain):
    brain.sql(COUNT.format("alpha"), tenant="acme")
    zygote = ZYGOTE._process
    zygote.kill()
    zygote.wait(5)
    brain.warehouse.limit_tenants()  # drops the worker: the next query asks the (dead) zygote for one
    assert brain.sql(COUNT.format("alpha"), tenant="acme") == [{"n": 3}]
    assert ZYGOTE._process.pid != zygote.pid and parent_of(brain.warehouse._worker._process.pid) == ZYGOTE._process.pid


def test_a_forked_process_handle_answers_as_a_popen_does(brain):
    brain.sql(COUNT.format("alpha"), tenant="acme")
    process = brain.warehouse._worker._process
    assert process.poll() is None and tenant_worker.resident_bytes(process.pid) > 0
    process.kill()
    assert process.wait(5) is not None and process.poll() is not None
    process.kill()  # a second kill of an ended worker is no error
    assert brain.sql(COUNT.format("alpha"), tenant="acme") == [{"n": 3}]


# A brain that runs a long tenant query in its worker, says which process that is, and is killed (SIGKILL: no
# clean-up runs, as with the OOM killer). Its time limit is raised so that only the brain's end can end the query.
KILLED_MID_QUERY = """
import os, sys, threading, time
from hindbrain import Brain
brain = Brain.open(sys.argv[1], embedder="none")
for i in range(10):
    brain.perceive(tenant="acme", agent="bot-1", text=f"acme note {i}")
brain.warehouse.limit_tenants(max_execution_time=600)
assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]
heavy = "SELECT count() FROM events a, events b, events c, (SELECT arrayJoin(range(1000000)) x) d, events e"
threading.Thread(target=brain.tenant_sql, args=(heavy,), kwargs={"tenant": "acme", "marker": "m"}).start()
while brain.warehouse.tenant_queries_running("m") != 1:
    time.sleep(0.01)
worker = brain.warehouse._worker
print(worker._process.pid, worker._home, flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_worker_running_a_query_ends_with_its_killed_brain(tmp_path):
    # At the base the query ran on to its end (48 s measured) with no watchdog over it, its folder kept.
    # its first line, not its whole output: a worker left running holds the brain's stdout open too
    with subprocess.Popen([sys.executable, "-c", KILLED_MID_QUERY, str(tmp_path / "b")], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as killed:
        pid, home = killed.stdout.readline().split()
        assert killed.wait(60) == -signal.SIGKILL
    with contextlib.suppress(ProcessLookupError):  # it may have ended already
        worker = os.pidfd_open(int(pid))
        try:
            ended = tenant_zygote.ended(worker, 10)
            if not ended:  # not left running past the test
                signal.pidfd_send_signal(worker, signal.SIGKILL)
        finally:
            os.close(worker)
        assert ended
    assert not os.path.exists(home)
