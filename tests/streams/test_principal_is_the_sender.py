"""The broker's principal is the sender (docs/distributed.md, "The broker's principal is the sender, round
thirty-three"): an agent principal writes only its own topic, ``perceptions.by.<P>``; the brain's settings bind P to
a tenant or an agent (``HINDBRAIN_KAFKA_PRINCIPALS``); a record there naming anything else, or on an unbound
principal's topic, is a dead letter with its reason on every path; the rest are P's, one sender however many agents
a tenant-bound principal names.

The settings' parse and the check run without a broker. The projection, the dead letters and a replay run against a
plain broker (``HINDBRAIN_TEST_KAFKA``, as ``make test`` starts); the broker's refusals against the development broker
in ACL mode (``HINDBRAIN_TEST_KAFKA_ACL`` and its two passwords, tests/streams/test_kafka_acls.py). Each is skipped,
saying so, without its broker."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from aiokafka.errors import TopicAuthorizationFailedError
from by_path import module_at
from pydantic import ValidationError

from hindbrain.brain import _perception, perceived
from hindbrain.jobs.summaries import RELAY_SQL
from hindbrain.learning.lifecycle import sender_of, senders
from hindbrain.projections.warehouse import Warehouse
from hindbrain.settings import Settings
from hindbrain.streams import columnar
from hindbrain.streams.kafka_runner import KafkaProjector, KafkaRunner, subscription
from hindbrain.streams.log import LogEntry
from hindbrain.streams.principals import parse_principals, principal_topic
from hindbrain.streams.processing import decode_entry, decoded_entries, invalid_reason, project_batch, to_messages
from hindbrain.streams.replay import replay
from hindbrain.streams.topics import TOPICS

BINDINGS = parse_principals("bot1=acme/a1, team=acme")
PROBE = module_at(Path(__file__).parents[2] / "deploy" / "kafka" / "probe.py", "kafka_probe")


def perception(tenant: str = "acme", agent: str | None = "a1", text: str = "the export button is greyed out") -> dict:
    return _perception(perceived({"tenant": tenant, "agent": agent, "task": "t1", "kind": "observation",
                                  "text": text}))


def entry(record: dict, topic: str, offset: int = 0) -> LogEntry:
    [message] = to_messages([("perception", record)])
    return LogEntry(topic, 0, offset, message.key, message.value)


# -- the settings, no broker -----------------------------------------------------------------------------------------
def test_the_principals_setting_binds_each_principal_to_a_tenant_or_one_agent():
    bound = Settings(kafka_principals=" bot1 = acme/a1 ,team=acme,, ").principal_bindings()
    assert {p: (b.tenant, b.agent) for p, b in bound.items()} == {"bot1": ("acme", "a1"), "team": ("acme", None)}
    assert Settings().principal_bindings() == {}


@pytest.mark.parametrize(("given", "named"), [
    ("bot1", "'bot1': no '='"),
    ("=acme", "the principal '' is not a name"),
    ("bot 1=acme", "the principal 'bot 1' is not a name"),
    (".hidden=acme", "the principal '.hidden' is not a name"),
    ("bot1=", "the tenant is empty"),
    ("bot1=/a1", "the tenant is empty"),
    ("bot1=acme/", "the agent after '/' is empty"),
    ("bot1=acme/a1,bot1=globex", "'bot1=globex': principal 'bot1' is bound twice"),
])
def test_a_malformed_principals_entry_is_refused_at_start_naming_it(given, named):
    with pytest.raises(ValidationError) as refused:
        Settings(kafka_principals=given)
    assert "HINDBRAIN_KAFKA_PRINCIPALS entry" in str(refused.value) and named in str(refused.value)


def test_an_agents_process_writes_its_logins_topic_and_needs_a_login_to_name_it():
    assert Settings().perceptions_topic() is None
    agent = Settings(kafka_as_principal=True, kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_username="bot1",
                     kafka_sasl_password="pw")
    assert agent.perceptions_topic() == "perceptions.by.bot1"
    with pytest.raises(ValidationError, match="HINDBRAIN_KAFKA_AS_PRINCIPAL needs HINDBRAIN_KAFKA_SASL_USERNAME"):
        Settings(kafka_as_principal=True)


# -- the check, every path, no broker --------------------------------------------------------------------------------
@pytest.mark.parametrize(("topic", "record", "reason"), [
    ("perceptions.by.bot1", perception(), None),
    ("perceptions.by.team", perception(agent="anyone"), None),
    ("perceptions.by.team", perception(agent=None), None),
    ("perceptions.by.bot1", perception(tenant="globex"), "principal 'bot1' speaks for acme/a1, not globex/a1"),
    ("perceptions.by.bot1", perception(agent="a2"), "principal 'bot1' speaks for acme/a1, not acme/a2"),
    ("perceptions.by.bot1", perception(agent=None), "principal 'bot1' speaks for acme/a1, not acme/"),
    ("perceptions.by.team", perception(tenant="globex"), "principal 'team' speaks for acme (any agent), not globex/a1"),
    ("perceptions.by.mallory", perception(),
     "topic 'perceptions.by.mallory' is principal 'mallory''s, which HINDBRAIN_KAFKA_PRINCIPALS does not bind"),
    ("perceptions", perception(tenant="globex", agent="zz"), None),  # the shared topic: the brain's and the edge's
])
def test_a_record_on_a_principals_topic_must_name_what_the_principal_speaks_for(topic, record, reason):
    assert invalid_reason("perception", record, topic, BINDINGS) == reason


def test_without_bindings_every_principals_topic_is_refused():
    assert "does not bind" in invalid_reason("perception", perception(), "perceptions.by.bot1")


def test_only_perceptions_travel_on_a_principals_topic():
    cognition = {"envelope": perception()["envelope"]}
    assert invalid_reason("cognition", cognition, "perceptions.by.bot1", BINDINGS) == (
        "a cognition record on topic 'perceptions.by.bot1'")


def test_the_per_record_and_columnar_paths_dead_letter_a_forged_record_with_its_reason():
    """Enough records for the columnar path (``MIN_BATCH``): it takes the honest records of principals' topics by
    columns (``columnar.bound_rows``) and leaves every forged one to the per-record path, which dead-letters it with
    its reason; the ``INSERT … SELECT`` paths (``split_hot``) never take a principal's topic (they check no binding)."""
    n, bot1 = columnar.MIN_BATCH, "perceptions.by.bot1"
    honest = ([(perception(text=f"bot1 {i}"), bot1) for i in range(n)]
              + [(perception(agent=f"x{i % 3}" if i % 4 else None, text=f"team {i}"), "perceptions.by.team")
                 for i in range(n)])
    forged = {"principal 'bot1' speaks for acme/a1, not globex/a1": (perception(tenant="globex"), bot1),
              "principal 'bot1' speaks for acme/a1, not acme/a2": (perception(agent="a2"), bot1),
              "principal 'bot1' speaks for acme/a1, not acme/": (perception(agent=None), bot1),
              "principal 'team' speaks for acme (any agent), not globex/x": (perception(tenant="globex", agent="x"),
                                                                             "perceptions.by.team"),
              "topic 'perceptions.by.mallory' is principal 'mallory''s, which HINDBRAIN_KAFKA_PRINCIPALS does not "
              "bind": (perception(), "perceptions.by.mallory")}
    records = honest[:n] + list(forged.values()) + honest[n:]
    entries = [entry(record, topic, i) for i, (record, topic) in enumerate(records)]
    expected = sorted(r["text"] for r, _ in honest)
    for columns, batch in ((False, project_batch(entries, 0, principals=BINDINGS)),
                           (True, columnar.project_batch(entries, 0, columnar.memory_engine(), BINDINGS))):
        assert batch.count == len(entries)
        assert {(d["reason"], d["topic"]) for d in batch.dead_letters} == {
            (reason, topic) for reason, (_, topic) in forged.items()}
        assert {d["stage"] for d in batch.dead_letters} == {"validate"}
        tables = batch.tables.get("events", [])
        rows = batch.rows.get("events", []) + [r for t in tables for r in t.to_pylist()]
        assert sorted(r["text"] for r in rows) == expected
        assert {r["text"]: r["_topic"] for r in rows} == {r["text"]: t for r, t in honest}
        assert sum(t.num_rows for t in tables) == (len(honest) if columns else 0)  # all honest ones by columns
    assert columnar.split_hot(entries) == ([], list(range(len(entries))))
    # the learner's and the index tail's fold: what the projector dead-letters, they skip
    assert len(decoded_entries(entries, BINDINGS)) == len(honest)
    assert isinstance(decode_entry(entries[n], 0, BINDINGS), dict)


def test_a_principal_is_one_sender_whatever_agents_it_names():
    assert sender_of("a1", "sdk/hindbrain", "perceptions.by.team") == "principal:team"
    assert sender_of("a2", "key/k1", "perceptions.by.team") == "principal:team"  # the topic, not the body's words
    assert sender_of("a1", "sdk/hindbrain", "perceptions") == "a1"  # the shared topic: as before
    assert senders([("x", "sdk/hindbrain", "perceptions.by.team"), ("y", "sdk/hindbrain", "perceptions.by.team"),
                    ("a1", "sdk/hindbrain", "perceptions")]) == ("a1", "principal:team")


def test_the_projectors_pattern_takes_the_declared_and_the_principals_topics_of_its_prefix_only():
    import re

    pattern = re.compile(subscription("hb.x."))
    assert all(pattern.match(f"hb.x.{t.name}") for t in TOPICS)
    assert pattern.match("hb.x.perceptions.by.bot-1_a.b")
    assert not any(pattern.match(t) for t in ("hb.x.perceptions.by.", "hbAx.perceptions", "hb.y.perceptions",
                                              "hb.x.perceptions.extra", "hb.x.vectors", "other.hb.x.perceptions"))


# -- against a plain broker ------------------------------------------------------------------------------------------
def projected(log, warehouse: Warehouse, group: str, topics: list[str], timeout_s: float = 60.0) -> None:
    """An in-process projector of ``group`` until it committed the end of ``topics`` and of the dead letters."""
    warehouse.migrate()
    projector = KafkaProjector(log, warehouse, group=group)
    projector.start()
    try:
        deadline = time.monotonic() + timeout_s
        for topic in [*topics, "dead_letters"]:  # dead letters last: appended while the others are projected
            for partition in log.partitions(topic):
                while log.committed(group, topic, partition) < log.end_offset(topic, partition):
                    assert projector.alive and time.monotonic() < deadline, f"{group} never reached {topic}"
                    time.sleep(0.05)
    finally:
        projector.stop()


def test_a_forged_record_is_dead_lettered_an_honest_one_counted_by_its_principal_and_replay_agrees(
        kafka, tmp_path):
    log = kafka.log(principals=BINDINGS)
    runner = KafkaRunner(log, "unused", perceptions_topic=principal_topic("bot1"))  # the agent's producer
    team = KafkaRunner(log, "unused", perceptions_topic=principal_topic("team"))
    stranger = KafkaRunner(log, "unused", perceptions_topic=principal_topic("stranger"))
    try:
        runner.submit([("perception", perception(text="honest bot1")),
                       ("perception", perception(tenant="globex", text="forged tenant")),
                       ("perception", perception(agent="a2", text="forged agent"))])
        team.submit([("perception", perception(agent=a, text=f"team as {a}")) for a in ("x", "y", "z")])
        stranger.submit([("perception", perception(text="an unbound principal"))])
        topics = log.principal_topics()
        assert topics == ["perceptions.by.bot1", "perceptions.by.stranger", "perceptions.by.team"]
        url = f"chdb://{tmp_path / 'views'}"
        views, replayed, in_workers = (Warehouse(url, database=name) for name in ("projected", "replayed", "workers"))
        try:
            projected(log, views, f"{kafka.prefix}projector", topics)
            texts = dict(views.query("SELECT text, _topic FROM events FINAL"))
            assert texts == {"honest bot1": "perceptions.by.bot1", "team as x": "perceptions.by.team",
                             "team as y": "perceptions.by.team", "team as z": "perceptions.by.team"}
            reasons = sorted(r for (r,) in views.query("SELECT reason FROM dead_letters FINAL"))
            assert reasons == [
                "principal 'bot1' speaks for acme/a1, not acme/a2",
                "principal 'bot1' speaks for acme/a1, not globex/a1",
                "topic 'perceptions.by.stranger' is principal 'stranger''s, which HINDBRAIN_KAFKA_PRINCIPALS does "
                "not bind"]
            [(relays,)] = views.query(f"SELECT groupUniqArray({RELAY_SQL}) FROM events FINAL")
            assert senders(relays) == ("principal:bot1", "principal:team")  # team's 3 agents: one sender
            for database, workers in ((replayed, 0), (in_workers, 2)):  # in this process, and in two others
                database.migrate()
                again = replay(log, database, chunk=2, workers=workers)
                assert again.digest == views.digest() and again.dead_letters == 3 and again.workers == workers
        finally:
            for database in (views, replayed, in_workers):
                database.close()
    finally:
        log.close()


# -- against the broker in ACL mode ----------------------------------------------------------------------------------
ACL_ENV = "HINDBRAIN_TEST_KAFKA_ACL"
NO_ACL_BROKER = (f"{ACL_ENV} not set: no Kafka broker in ACL mode (see tests/streams/test_kafka_acls.py: "
                 "HINDBRAIN_KAFKA_ACL=1 bash deploy/kafka/kafka-up.sh with the two passwords)")


@pytest.fixture
def acl_broker(monkeypatch) -> str:
    bootstrap = os.environ.get(ACL_ENV)
    if not bootstrap:
        print(NO_ACL_BROKER)
        pytest.skip(NO_ACL_BROKER)
    monkeypatch.setenv("HINDBRAIN_KAFKA_ACL", "1")  # probe.py's grant logs in as the brain
    return bootstrap


def logged_in(user: str, **kw) -> Settings:
    return Settings(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_username=user,
                    kafka_sasl_password=os.environ[f"HINDBRAIN_KAFKA_{user.upper()}_PASSWORD"], **kw)


def submitted_once_granted(runner: KafkaRunner, records, timeout_s: float = 15.0):
    """``runner.submit`` once the broker applied the agent's grant (an ACL reaches its authorizer with the next
    metadata update: milliseconds, not before CreateAcls returns)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return runner.submit(records)
        except TopicAuthorizationFailedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_an_agent_principal_writes_its_own_topic_only_and_the_brain_holds_it_to_its_binding(acl_broker, tmp_path):
    from hindbrain.streams.kafka_log import KafkaLog

    prefix = f"hindbrain-test.{uuid.uuid4().hex[:12]}."
    brain_cfg = logged_in("brain", kafka_principals="agent=acme/a1,other=acme/a9")
    brain_log = KafkaLog(acl_broker, prefix=prefix, timeout_s=15, auth=brain_cfg.kafka_auth(),
                         principals=brain_cfg.principal_bindings())
    try:
        topics = brain_log.principal_topics()  # the brain makes the bound principals' topics: agents may not
        assert topics == ["perceptions.by.agent", "perceptions.by.other"]
        brain_log.partitions("perceptions")
        PROBE.grant_agent(int(acl_broker.rpartition(":")[2]), prefix)
        agent_cfg = logged_in("agent", kafka_as_principal=True)
        agent_log = KafkaLog(acl_broker, prefix=prefix, timeout_s=15, auth=agent_cfg.kafka_auth())
        try:
            agent = KafkaRunner(agent_log, "unused", perceptions_topic=agent_cfg.perceptions_topic())
            positions = submitted_once_granted(agent, [("perception", perception(text="the agent's own words")),
                                                       ("perception", perception(agent="a2", text="as a2"))])
            assert {p.topic for p in positions} == {"perceptions.by.agent"}
            for elsewhere in ("perceptions.by.other", "perceptions"):  # another's topic, the shared one: refused
                with pytest.raises(TopicAuthorizationFailedError, match=elsewhere):
                    KafkaRunner(agent_log, "unused", perceptions_topic=elsewhere).submit(
                        [("perception", perception(text=f"sent to {elsewhere}"))])
        finally:
            agent_log.close()
        views = Warehouse(f"chdb://{tmp_path / 'views'}", database="acl")
        try:
            projected(brain_log, views, f"{prefix}projector", [*topics, "perceptions"])
            assert views.query("SELECT text FROM events FINAL") == [("the agent's own words",)]
            assert views.query("SELECT reason FROM dead_letters FINAL") == [
                ("principal 'agent' speaks for acme/a1, not acme/a2",)]
            [(relays,)] = views.query(f"SELECT groupUniqArray({RELAY_SQL}) FROM events FINAL")
            assert senders(relays) == ("principal:agent",)
        finally:
            views.close()
    finally:
        brain_log.close()
