"""A brain behind the broker's ACLs (docs/distributed.md, "A brain behind the broker's ACLs, round thirty-one"):
every Kafka client hindbrain starts logs in with the settings' SASL login, so a brain logged in as ``brain`` runs
end to end on a broker that admits nobody else, and an agent's own client logged in as ``agent`` perceives and is
refused writing a decision, with an error naming the topic; nothing it wrote is lost or half-written.

The settings' checks run without a broker; the rest needs the development broker in ACL mode
(``HINDBRAIN_TEST_KAFKA_ACL=host:port`` and its two passwords, as tests/streams/test_kafka_acls.py) and is skipped,
saying so, without one."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from aiokafka.errors import TopicAuthorizationFailedError
from by_path import module_at
from pydantic import ValidationError

from hindbrain import Brain
from hindbrain.brain import _perception, perceived
from hindbrain.settings import Settings
from hindbrain.streams.kafka_auth import KafkaAuth
from hindbrain.streams.kafka_log import KafkaLog, KafkaUnavailable
from hindbrain.streams.log import Message
from hindbrain.streams.processing import to_messages

ACL_ENV = "HINDBRAIN_TEST_KAFKA_ACL"
NO_ACL_BROKER = (f"{ACL_ENV} not set: no Kafka broker in ACL mode (see tests/streams/test_kafka_acls.py: "
                 "HINDBRAIN_KAFKA_ACL=1 bash deploy/kafka/kafka-up.sh with the two passwords)")
PROBE = module_at(Path(__file__).parents[2] / "deploy" / "kafka" / "probe.py", "kafka_probe")
SECRET = "s3cret-never-shown"
SITUATION = {"system": "IAM", "identity": "normal account", "action": "submit change",
             "expected": "success message", "actual": "no response"}


# -- the settings, no broker -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("given", "named"), [
    ({"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_password": SECRET}, "HINDBRAIN_KAFKA_SASL_USERNAME"),
    ({"kafka_security_protocol": "SASL_SSL", "kafka_sasl_username": "brain"}, "HINDBRAIN_KAFKA_SASL_PASSWORD"),
    ({"kafka_security_protocol": "SASL", "kafka_sasl_username": "b", "kafka_sasl_password": SECRET},
     "HINDBRAIN_KAFKA_SECURITY_PROTOCOL"),
    ({"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_mechanism": "GSSAPI", "kafka_sasl_username": "b",
      "kafka_sasl_password": SECRET}, "HINDBRAIN_KAFKA_SASL_MECHANISM"),
    # credentials without a SASL protocol would be silently unused: refused
    ({"kafka_sasl_username": "brain", "kafka_sasl_password": SECRET}, "HINDBRAIN_KAFKA_SECURITY_PROTOCOL"),
])
def test_a_login_that_cannot_work_is_refused_naming_the_setting_and_never_the_password(given, named):
    with pytest.raises(ValidationError) as refused:
        Settings(**given)
    assert named in str(refused.value)
    assert SECRET not in str(refused.value) and SECRET not in repr(refused.value)


def test_every_client_takes_the_login_and_no_repr_shows_the_password():
    cfg = Settings(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_mechanism="SCRAM-SHA-512",
                   kafka_sasl_username="brain", kafka_sasl_password=SECRET)
    auth = cfg.kafka_auth()
    assert auth.client_options() == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                                     "sasl_plain_username": "brain", "sasl_plain_password": SECRET}
    assert SECRET not in repr(cfg) and SECRET not in repr(auth)
    assert KafkaAuth().client_options() == {}  # no login: clients made exactly as before
    from hindbrain.streams.worker import make_app

    credentials = make_app(cfg.model_copy(update={"kafka": "127.0.0.1:9"})).conf.broker_credentials
    assert (credentials.username, credentials.password, credentials.mechanism.value) == ("brain", SECRET,
                                                                                          "SCRAM-SHA-512")


# -- against the broker in ACL mode --------------------------------------------------------------------------------
@pytest.fixture
def acl_broker(monkeypatch) -> str:
    bootstrap = os.environ.get(ACL_ENV)
    if not bootstrap:
        print(NO_ACL_BROKER)
        pytest.skip(NO_ACL_BROKER)
    monkeypatch.setenv("HINDBRAIN_KAFKA_ACL", "1")  # probe.py's grant logs in as the brain
    return bootstrap


def login(user: str, password: str | None = None) -> dict:
    password = password or os.environ[f"HINDBRAIN_KAFKA_{user.upper()}_PASSWORD"]
    return {"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_username": user,
            "kafka_sasl_password": password}


def eventually(brain, sql, params=None, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not (rows := brain.sql(sql, params)):
        assert time.monotonic() < deadline, f"never: {sql}"
        time.sleep(0.1)
    return rows


def perceptions(**fields) -> list:
    return to_messages([("perception", _perception(perceived(dict(tenant="acme", task="t9", **fields))))])


def appended_once_granted(log: KafkaLog, messages, timeout_s: float = 15.0):
    """``log.append`` once the broker applied the agent's grant (an ACL reaches the broker's authorizer with its
    next metadata update: milliseconds, not before CreateAcls returns)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return log.append(messages)
        except TopicAuthorizationFailedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_brain_as_brain_runs_end_to_end_and_an_agent_perceives_but_cannot_decide(acl_broker, tmp_path):
    prefix = f"hindbrain-test.{uuid.uuid4().hex[:12]}."
    cfg = dict(kafka=acl_broker, kafka_prefix=prefix, worker_group=f"{prefix}projector", embedder="none",
               kafka_principals="agent=acme", **login("brain"))
    with Brain.open(tmp_path, **cfg) as brain:  # its log, projector, learner and index tail all log in as brain
        brain.perceive(tenant="acme", agent="a1", task="t1", kind="anomaly", text="clicked submit, nothing happened",
                       **SITUATION)
        brain.perceive(tenant="acme", agent="a1", task="t1", kind="outcome", text="submit succeeded as admin",
                       system="IAM", identity="admin account", action="submit change", success=True)
        [accepted] = eventually(brain, "SELECT subject_ids FROM decisions FINAL WHERE kind = 'unit_accepted'")
        unit = accepted["subject_ids"][0]
        deadline = time.monotonic() + 20  # the index tail brings the learner's decision to recall
        while unit not in [i.id for i in brain.recall(tenant="acme", task="t2", situation=SITUATION).items]:
            assert time.monotonic() < deadline, "the learned unit never reached recall"
            time.sleep(0.1)

        PROBE.grant_agent(int(acl_broker.rpartition(":")[2]), prefix)
        agent = KafkaLog(acl_broker, prefix=prefix, timeout_s=15, auth=Settings(**login("agent")).kafka_auth())
        try:
            own = [m._replace(topic="perceptions.by.agent") for m in perceptions(kind="observation",
                                                                                   text="agent's own words")]
            [position] = appended_once_granted(agent, own)
            forged = Message("decisions", "acme/forged", b"a decision the agent may not write")
            with pytest.raises(TopicAuthorizationFailedError, match=r"decisions"):
                agent.append([forged])
        finally:
            agent.close()
        assert position.topic == "perceptions.by.agent"
        eventually(brain, "SELECT 1 FROM events WHERE text = 'agent''s own words'")  # reached the brain's views
        written = [e for p in brain.log.partitions("decisions") for e in brain.log.read("decisions", p, 0, 10_000)]
        assert forged.value not in [e.value for e in written]  # refused whole: not written, not half-written
        assert brain.sql("SELECT count() AS n FROM decisions WHERE kind = 'unit_accepted'")[0]["n"] == 1


def test_a_refused_login_says_so_without_the_password(acl_broker):
    with pytest.raises(KafkaUnavailable) as refused:
        KafkaLog(acl_broker, timeout_s=10, auth=Settings(**login("agent", SECRET)).kafka_auth())
    assert "HINDBRAIN_KAFKA_SASL_PASSWORD" in str(refused.value) and "'agent'" in str(refused.value)
    assert SECRET not in str(refused.value)
