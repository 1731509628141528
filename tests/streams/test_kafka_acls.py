"""The development broker's ACL mode (``HINDBRAIN_KAFKA_ACL=1 bash deploy/kafka/kafka-up.sh``, docs/distributed.md
"ACLs on the broker, round thirty-one"): every client logs in with SASL/PLAIN, and an agent's own producer may
write its perceptions topic but not ``decisions`` (nor any other), which only the brain writes. The records' own
fields cannot say who produced them (docs/security.md, "Not defended"): the broker's ACLs are that boundary, and
since round thirty-three an agent principal writes its own topic only, ``perceptions.by.<P>``.

Needs a broker in ACL mode: ``HINDBRAIN_TEST_KAFKA_ACL=host:port`` and the passwords it was started with
(``HINDBRAIN_KAFKA_BRAIN_PASSWORD``, ``HINDBRAIN_KAFKA_AGENT_PASSWORD``); skipped, saying so, without one."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError, TopicAuthorizationFailedError
from by_path import module_at

from hindbrain.streams.topics import TOPICS, Topic, create_missing_topics

ACL_ENV = "HINDBRAIN_TEST_KAFKA_ACL"
NO_ACL_BROKER = (f"{ACL_ENV} not set: no Kafka broker in ACL mode. Start one with HINDBRAIN_KAFKA_ACL=1 "
                 "HINDBRAIN_KAFKA_PORT=19266 HINDBRAIN_KAFKA_BRAIN_PASSWORD=… HINDBRAIN_KAFKA_AGENT_PASSWORD=… "
                 f"bash deploy/kafka/kafka-up.sh and set {ACL_ENV}=127.0.0.1:19266 (and the two passwords)")
PROBE = module_at(Path(__file__).parents[2] / "deploy" / "kafka" / "probe.py", "kafka_probe")


@pytest.fixture
def acl_broker() -> str:
    bootstrap = os.environ.get(ACL_ENV)
    if not bootstrap:
        print(NO_ACL_BROKER)
        pytest.skip(NO_ACL_BROKER)
    return bootstrap


def login(user: str, password: str | None = None) -> dict:
    password = password if password is not None else os.environ[f"HINDBRAIN_KAFKA_{user.upper()}_PASSWORD"]
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": user,
            "sasl_plain_password": password}


async def topics_of_a_fresh_brain(bootstrap: str, prefix: str) -> None:
    """The brain creates its topics under ``prefix``, the agent's and another principal's perceptions topics among
    them, and grants the agent its own (as kafka-up.sh does)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **login("brain"))
    await admin.start()
    try:
        await create_missing_topics(admin, [*[t for t in TOPICS if t.name in ("perceptions", "decisions")],
                                            Topic("perceptions.by.agent", "perception", 1),
                                            Topic("perceptions.by.other", "perception", 1)], prefix=prefix)
    finally:
        await admin.close()
    PROBE.grant_agent(int(bootstrap.rpartition(":")[2]), prefix)


async def send(bootstrap: str, user: str, topic: str, password: str | None = None) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000, **login(user, password))
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"a record", key=b"acme/a1")
    finally:
        await producer.stop()


async def granted(bootstrap: str, user: str, topic: str, timeout_s: float = 15.0) -> None:
    """``send`` once the broker applied the grant: an ACL created through the controller reaches the broker's
    authorizer with its next metadata update (milliseconds, but not before CreateAcls returns)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            return await send(bootstrap, user, topic)
        except TopicAuthorizationFailedError:
            if asyncio.get_running_loop().time() > deadline:
                raise


def test_an_agents_producer_writes_its_own_perceptions_topic_only(acl_broker, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_KAFKA_ACL", "1")  # probe.py logs in as the brain
    prefix = f"hindbrain-test.{uuid.uuid4().hex[:12]}."

    async def scenario() -> None:
        await topics_of_a_fresh_brain(acl_broker, prefix)
        await granted(acl_broker, "agent", prefix + "perceptions.by.agent")
        # not decisions, not the shared perceptions (the brain's and the edge's: round thirty-three), not another
        # principal's topic, not a topic of another brain's prefix
        for topic in (prefix + "decisions", prefix + "perceptions", prefix + "perceptions.by.other",
                      f"hindbrain-test.{uuid.uuid4().hex[:12]}.perceptions.by.agent"):
            with pytest.raises(TopicAuthorizationFailedError):
                await send(acl_broker, "agent", topic)
        await send(acl_broker, "brain", prefix + "decisions")
        with pytest.raises(KafkaError):  # the agent's name with a wrong password logs in as nobody
            await send(acl_broker, "agent", prefix + "perceptions.by.agent", password="not-the-password")

    asyncio.run(scenario())
