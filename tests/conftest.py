"""Shared fixtures: warehouses on real chDB (or a ClickHouse server), brains, sample records.

chDB serves one folder per process at a time, so every fixture that opens a warehouse or a
brain closes it on teardown, and warehouse-only tests share one session folder with a
database of their own.
"""

from __future__ import annotations

import json
import os
import socket
import uuid

import pytest
from hypothesis import settings
from migrated_views import make_template, opening_copied_views
from scheduling import heaviest_first

import hindbrain.brain
from hindbrain import Brain
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Position
from hindbrain.streams.processing import dead_letter
from hindbrain.streams.topics import TOPIC_OF

# Hypothesis: each property test sets its own max_examples (what its time in the suite allows;
# the large ones through tests/budget.py's ``examples``: half under "ci", four times under "deep").
# `make test` (and CI, which runs it) loads the "ci" profile: derandomized and without the
# example database, so every run tries the same examples, takes the same time, and a failure
# repeats on the next run. Any other run explores new examples (hypothesis's default); "deep"
# explores four times as many (a bench-length run: HINDBRAIN_HYPOTHESIS_PROFILE=deep).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("deep", print_blob=True)
settings.load_profile(os.environ.get("HINDBRAIN_HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(config, items):
    """On an xdist worker under `make test` (``--no-loadscope-reorder``), the longest scopes
    first (tests/scheduling.py): every worker collects, so every worker sorts alike, and the
    scheduler hands the scopes out in this order. A run in one process keeps the files' order."""
    if os.environ.get("PYTEST_XDIST_WORKER") and not config.getoption("loadscopereorder", True):
        items[:] = [items[i] for i in heaviest_first([item.nodeid for item in items])]


SERVER_ENV = "HINDBRAIN_TEST_CLICKHOUSE"
NO_SERVER = "HINDBRAIN_TEST_CLICKHOUSE not set: no ClickHouse server reachable (and no Docker engine here)"
TS = 1_700_000_000_000_000  # a fixed clock for sample records, microseconds


@pytest.fixture(scope="session")
def chdb_url(tmp_path_factory) -> str:
    """One chDB folder for warehouse-only tests; each test takes a database of its own."""
    return f"chdb://{tmp_path_factory.mktemp('warehouse')}"


def _backend_url(backend: str, chdb_url: str) -> str:
    if backend == "chdb":
        return chdb_url
    url = os.environ.get(SERVER_ENV)
    if not url:
        print(NO_SERVER)
        pytest.skip(NO_SERVER)
    return url


@pytest.fixture
def open_warehouse(chdb_url):
    """``open_warehouse(backend="chdb", migrate=True)``: a warehouse on a fresh database,
    dropped and closed after the test. ``backend="server"`` needs HINDBRAIN_TEST_CLICKHOUSE."""
    opened: list[Warehouse] = []

    def _open(backend: str = "chdb", migrate: bool = True, url: str | None = None) -> Warehouse:
        wh = Warehouse(url or _backend_url(backend, chdb_url), database=f"t_{uuid.uuid4().hex[:16]}")
        opened.append(wh)
        if migrate:
            wh.migrate()
        return wh

    yield _open
    for wh in reversed(opened):
        try:
            wh.query(f"DROP DATABASE IF EXISTS `{wh.database}`")
        finally:
            wh.close()


@pytest.fixture(params=["chdb", "server"])
def backend(request) -> str:
    """Run a test once per warehouse backend; "server" skips unless a server is configured."""
    return request.param


@pytest.fixture
def warehouse(open_warehouse, backend) -> Warehouse:
    """A migrated warehouse on a fresh database of the parametrised backend."""
    return open_warehouse(backend)


@pytest.fixture(scope="module", params=["chdb", "server"])
def read_only_warehouse(request, chdb_url) -> Warehouse:
    """One migrated warehouse per backend shared by a module's tests that only read it (its columns,
    its tables): a migration is ~20 DDL statements, 0.3 s of CPU and 2-10 s of wall on a busy
    machine (chDB's DDL waits on its own threads), paid once instead of once a test."""
    wh = Warehouse(_backend_url(request.param, chdb_url), database=f"t_{uuid.uuid4().hex[:16]}")
    try:
        wh.migrate()
        yield wh
    finally:
        try:
            wh.query(f"DROP DATABASE IF EXISTS `{wh.database}`")
        finally:
            wh.close()


@pytest.fixture(scope="session", autouse=True)
def migrated_views(tmp_path_factory):
    """A new embedded brain's views start as a copy of one migrated folder per test process, not migrated again
    (tests/migrated_views.py). Made before any other fixture (session-wide and autouse): chDB serves one folder per
    process at a time, and a template made on first use could meet a module's warehouse still open."""
    template = make_template(tmp_path_factory.mktemp("migrated") / "views")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hindbrain.brain, "open_views", opening_copied_views(template, hindbrain.brain.open_views))
        yield template


@pytest.fixture
def brain(tmp_path):
    """An embedded brain in its own folder, always closed (the default semantic channel on)."""
    b = Brain.open(tmp_path / "brain")
    yield b
    b.close()


@pytest.fixture
def lexical_brain(tmp_path):
    """A brain without the semantic channel, for tests of what the other channels decide."""
    b = Brain.open(tmp_path / "brain", embedder="none")
    yield b
    b.close()


# -- sample records ----------------------------------------------------------------------------
def _env(record_type: str, record_id: str, tenant: str = "acme", ts: int = TS, **kw) -> dict:
    return envelope(record_type, tenant, agent="agent-7", task="t-42", record_id=record_id, ts_us=ts, **kw)


def _sample_records() -> list[tuple[str, dict]]:
    perception = {
        "envelope": _env("perception", "ev_1"), "kind": "anomaly", "text": "clicked submit, nothing happened",
        "system": "IAM", "identity": "normal account", "action": "submit change", "expected": "success message",
        "actual": "no response", "entities": ["IAM", "change request"], "scope": {"env": "prod"},
        "signal": "implicit", "success": None, "polarity": None, "session": "s-1", "speaker": "agent",
        "emotion": None, "origin": None,
    }
    message = {
        "envelope": _env("perception", "ev_2", ts=TS + 1), "kind": "message", "text": "提交按钮没有反应",
        "system": None, "identity": None, "action": None, "expected": None, "actual": None, "entities": [],
        "scope": {}, "signal": None, "success": None, "polarity": None, "session": "s-1", "speaker": "user",
        "emotion": None, "origin": "user",
    }
    cognition = {
        "envelope": _env("cognition", "fr_1", ts=TS + 2, causation_ids=["ev_1"]), "fragment_id": "fr_1",
        "condition": "submit does nothing in IAM", "action": "switch to the admin account",
        "reason": "permission operations need admin", "evidence": "submit succeeded as admin",
        "scope": {"env": "prod"}, "source": "lived", "citation": None, "confidence": None, "seed": False,
        "event_ids": ["ev_1", "ev_2"], "entities": ["IAM"],
    }
    candidates = [{"item_id": i, "item_kind": k, "score": s, "why_json": None, "stage": "selected", "reason": None,
                   "scores": []}
                  for i, k, s in (("fr_1", "fragment", 2.5), ("ev_2", "event", 1.0))]
    recall = {
        "envelope": _env("recall", "rc_1", ts=TS + 3), "recall_id": "rc_1", "query": "IAM submit",
        "situation": {"system": "IAM"}, "trigger": "anomaly", "scope": {"env": "prod"}, "budget_tokens": 400,
        "k": None, "layers": [], "score_names": [], "candidates": candidates,
    }
    injection = {
        "envelope": _env("injection", "in_1", ts=TS + 4, causation_ids=["rc_1"]), "recall_id": "rc_1",
        "budget_tokens": 400,
        "items": [{"item_id": "fr_1", "item_kind": "fragment", "rank": 0, "tokens": 20, "score": 2.5, "arm": None},
                  {"item_id": "ev_2", "item_kind": "event", "rank": 1, "tokens": 8, "score": 1.0, "arm": None}],
    }
    outcome = {
        "envelope": _env("outcome", "oc_1", ts=TS + 5, causation_ids=["rc_1"]), "recall_id": "rc_1",
        "applied": ["fr_1"], "success": True, "steps": 5, "notes": None,
    }
    failure = {
        "envelope": _env("outcome", "oc_2", ts=TS + 6), "recall_id": None, "applied": ["ev_2", "ev_2"],
        "success": False, "steps": None, "notes": "applied twice in one report",
    }
    by = {"job": "induce", "version": "1", "parameters_json": json.dumps({"k": 8})}
    belief = {
        "envelope": _env("decision", "dc_1", ts=TS + 7, producer="job/induce@1"), "decision_id": "dc_1",
        "kind": "belief_induced", "subject_ids": ["bl_1"], "evidence_ids": ["ev_1", "fr_1"],
        "inputs_json": "{}", "reason": "three similar anomalies", "decided_by": by,
        "payload_json": json.dumps({"belief_id": "bl_1", "text": "IAM changes need an admin account",
                                    "confidence": 0.7, "support": 3}),
    }
    promote = {
        "envelope": _env("decision", "dc_2", ts=TS + 8, producer="job/promote@1"), "decision_id": "dc_2",
        "kind": "unit_verified", "subject_ids": ["fr_1"], "evidence_ids": ["oc_1"], "inputs_json": "{}",
        "reason": "applied and the task succeeded", "decided_by": {**by, "job": "promote"},
        "payload_json": json.dumps({"unit": {"fragment_id": "fr_1", "status": "verified", "confidence": 0.7,
                                             "rung": "experience", "successes": 1, "failures": 0,
                                             "contradictions": 0}}),
    }
    dead = dead_letter(Position("perceptions", 0, 99), "decode", "value too short", b"\xff\x00", TS + 9)
    return [("perception", perception), ("perception", message), ("cognition", cognition), ("recall", recall),
            ("injection", injection), ("outcome", outcome), ("outcome", failure), ("decision", belief),
            ("decision", promote), ("dead_letter", dead)]


@pytest.fixture
def sample_records() -> list[tuple[str, dict]]:
    """A mixed batch of valid records of every projected type (fresh dicts per test)."""
    return _sample_records()


@pytest.fixture
def positioned_records(sample_records) -> list[tuple[str, dict, Position]]:
    """The sample records with the log positions a log would have given them (offsets 0..n-1)."""
    return [(rt, r, Position(TOPIC_OF[rt], 0, n)) for n, (rt, r) in enumerate(sample_records)]


# -- Kafka ----------------------------------------------------------------------------------------
KAFKA_ENV = "HINDBRAIN_TEST_KAFKA"
NO_KAFKA = (
    "HINDBRAIN_TEST_KAFKA not set: no Kafka broker for the Kafka tests. `make test` starts one when "
    "`java` (17+) and `mvn` are installed (or run `make kafka-up` and set HINDBRAIN_TEST_KAFKA=127.0.0.1:19092); "
    "any Kafka 4.x broker works: HINDBRAIN_TEST_KAFKA=host:port"
)


class KafkaForTests:
    """One test's view of the test broker: a topic prefix of its own (so tests never see each
    other's topics or hindbrain's real ``hindbrain.*`` ones) and ``log()`` to open a KafkaLog on it."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.prefix = f"hindbrain-test.{uuid.uuid4().hex[:12]}."

    def log(self, **kw):
        from hindbrain.streams.kafka_log import KafkaLog

        kw = {"prefix": self.prefix, "undeclared_partitions": 4, "timeout_s": 30.0, **kw}
        return KafkaLog(self.bootstrap, **kw)

    def admin(self, coro_fn):
        """Run ``await coro_fn(admin)`` with a fresh started admin client; returns its result."""
        import asyncio

        from aiokafka.admin import AIOKafkaAdminClient

        async def run():
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                return await coro_fn(admin)
            finally:
                await admin.close()

        return asyncio.run(run())

    def topics(self) -> list[str]:
        """The Kafka topics under this test's prefix."""
        async def mine(admin):
            return sorted(t for t in await admin.list_topics() if t.startswith(self.prefix))

        return self.admin(mine)


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """The test broker's ``host:port`` from HINDBRAIN_TEST_KAFKA; the test skips (saying how to get one) if unset."""
    bootstrap = os.environ.get(KAFKA_ENV)
    if not bootstrap:
        print(NO_KAFKA)
        pytest.skip(NO_KAFKA)
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    try:  # asked for Kafka and none answers: fail once, clearly, rather than skip or time out per test
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        pytest.fail(f"{KAFKA_ENV}={bootstrap} is set but nothing answers there: {exc}")
    return bootstrap


@pytest.fixture
def kafka(kafka_bootstrap) -> KafkaForTests:
    """The test broker with a topic prefix for this test; its topics are deleted afterwards
    (the broker's data folder outlives test runs)."""
    k = KafkaForTests(kafka_bootstrap)
    yield k

    async def delete_mine(admin):
        mine = [t for t in await admin.list_topics() if t.startswith(k.prefix)]
        if mine:
            await admin.delete_topics(mine)

    k.admin(delete_mine)
