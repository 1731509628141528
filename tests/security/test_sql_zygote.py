"""Tenant SQL workers forked by one zygote per process (docs/speed.md, round thirty).

A worker used to be a fresh interpreter that imported pyarrow, clickhouse-connect and chDB (~0.65 s of CPU a start);
now a zygote that loaded them but opened no engine forks one per start. What the worker exists for must hold across
the brains sharing the zygote: each brain's worker is its own process with its own engine and sees its own rows, a
killed worker is a process that has ended, and a zygote that died is started again."""

import os

import pytest

from hindbrain import Brain
from hindbrain.projections import tenant_worker
from hindbrain.projections.tenant_worker import ZYGOTE

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
