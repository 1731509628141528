"""``HINDBRAIN_WORKER_SESSION_TIMEOUT`` reaches the group consumers of the default worker engine and of the
embedders (aiokafka's own 10 s / 3 s were used whatever the setting said: only Faust's engine read it)."""

import asyncio
from types import SimpleNamespace

import pytest

from hindbrain.streams import embedders, kafka_runner


def test_group_timing_is_the_setting_and_a_heartbeat_of_a_third_at_most_three_seconds():
    assert kafka_runner.group_timing(45.0) == {"session_timeout_ms": 45_000, "heartbeat_interval_ms": 3000}
    assert kafka_runner.group_timing(6.0) == {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000}


class _Stop(Exception):
    pass


def _capturing(seen: dict):
    def consumer(*topics, **options):
        seen.update(options)
        raise _Stop  # the options are what is checked: no broker is reached
    return consumer


@pytest.mark.parametrize("seconds", [6.0, 45.0])
def test_the_projector_and_the_embedder_consume_with_the_configured_session(monkeypatch, seconds):
    login = {"bootstrap_servers": "127.0.0.1:1", "security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": "u"}
    log = SimpleNamespace(bootstrap="127.0.0.1:1", prefix="t.", partitions=lambda name: 1, client_options=login,
                          principal_topics=lambda create=True: [])
    seen: dict = {}
    monkeypatch.setattr(kafka_runner, "AIOKafkaConsumer", _capturing(seen))
    projector = kafka_runner.KafkaProjector(log, SimpleNamespace(url="http://unused"), "g", session_timeout_s=seconds)
    with pytest.raises(_Stop):
        asyncio.run(projector._consume())
    assert seen["session_timeout_ms"] == int(seconds * 1000) and seen["group_id"] == "g"
    assert login.items() <= seen.items()  # the log's login too (docs/distributed.md, "behind the broker's ACLs")

    seen.clear()
    monkeypatch.setattr(embedders, "AIOKafkaConsumer", _capturing(seen))
    worker = embedders.EmbedderWorker(log, SimpleNamespace(name="static", dim=8), "e", session_timeout_s=seconds)
    with pytest.raises(_Stop):
        asyncio.run(worker.run())
    assert seen["session_timeout_ms"] == int(seconds * 1000) and seen["group_id"] == "e"
    assert login.items() <= seen.items()


def test_the_faust_engine_keeps_the_same_session(tmp_path):
    from hindbrain.settings import Settings
    from hindbrain.streams.worker import make_app

    settings = Settings(kafka="127.0.0.1:1", home=tmp_path, worker_session_timeout=7.5)
    app = make_app(settings, warehouse=SimpleNamespace(url="http://unused"))
    timing = kafka_runner.group_timing(7.5)
    assert app.conf.broker_session_timeout == timing["session_timeout_ms"] / 1000 == 7.5
    assert app.conf.broker_heartbeat_interval == timing["heartbeat_interval_ms"] / 1000 == 2.5
