"""The Kafka log: the shared log contract on a real broker, plus what only Kafka promises.

Tests that need a broker take the ``kafka`` fixture (tests/conftest.py): they run when
HINDBRAIN_TEST_KAFKA=host:port is set (``make test`` sets it when it can start a broker) and
skip, saying how to get one, otherwise. Each test works under a topic prefix of its own.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import defaultdict

import pytest
from aiokafka import TopicPartition
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from log_contract import KEY, LogContract

from hindbrain.streams.kafka_log import MAX_REQUEST_SIZE, KafkaLog, KafkaUnavailable
from hindbrain.streams.log import Message
from hindbrain.streams.topics import TOPICS, create_missing_topics, kafka_name


class TestKafkaLogContract(LogContract):
    @pytest.fixture(autouse=True)
    def _broker(self, kafka):
        self.kafka = kafka

    def make_log(self, path):
        return self.kafka.log()  # same bootstrap and prefix each time: a reopen sees the same topics


@pytest.fixture
def log(kafka):
    log = kafka.log()
    yield log
    log.close()


def read_everything(log, topic):
    """Every entry of every partition of ``topic``."""
    out = []
    for p in log.partitions(topic):
        offset = 0
        while batch := log.read(topic, p, offset):
            out += batch
            offset = batch[-1].offset + 1
    return out


# -- keys and partitions ------------------------------------------------------------------------------
def test_one_agents_records_stay_in_one_partition_in_order(log):
    agents = [f"acme/agent-{i}" for i in range(6)]
    positions = defaultdict(list)
    for round_ in range(5):  # several appends, each interleaving every agent
        batch = [Message("t", agent, f"{agent}#{round_}.{j}".encode()) for j in range(3) for agent in agents]
        for message, pos in zip(batch, log.append(batch), strict=True):
            positions[message.key].append(pos)
    for agent in agents:
        [partition] = {p.partition for p in positions[agent]}
        offsets = [p.offset for p in positions[agent]]
        assert offsets == sorted(offsets) and len(set(offsets)) == 15
        mine = [e for e in log.read("t", partition, 0) if e.key == agent]
        assert [e.value for e in mine] == [f"{agent}#{r}.{j}".encode() for r in range(5) for j in range(3)]
        assert [e.position for e in mine] == positions[agent]


def test_different_keys_spread_over_a_4_partition_topic(log):
    positions = log.append([Message("t", f"tenant-{i}/agent", b"x") for i in range(64)])
    assert log.partitions("t") == [0, 1, 2, 3]
    assert {p.partition for p in positions} == {0, 1, 2, 3}


def test_positions_returned_match_what_read_returns(log):
    messages = [Message(t, f"acme/agent-{i % 7}", f"{t}-{i}".encode()) for i in range(40) for t in ("a", "b")]
    positions = log.append(messages)
    by_position = {pos: m for m, pos in zip(messages, positions, strict=True)}
    assert len(by_position) == len(messages)  # no position given twice
    for t in ("a", "b"):
        entries = read_everything(log, t)
        assert {e.position for e in entries} == {p for p in positions if p.topic == t}  # nothing else in the log
        for e in entries:
            assert (e.topic, e.key, e.value) == by_position[e.position]


def test_reading_a_partition_that_does_not_exist(log):
    log.append([Message("t", KEY, b"x")])
    assert log.read("t", 4, 0) == []
    with pytest.raises(ValueError, match="no partition 4"):
        log.end_offset("t", 4)


# -- atomicity: what is checked before sending ---------------------------------------------------------
def test_a_value_over_the_size_limit_fails_the_batch_before_sending(log):
    before = log.append([Message("t", KEY, b"before")])
    with pytest.raises(ValueError, match="exceeds"):
        log.append([Message("t", KEY, b"ok"), Message("t", KEY, b"\x00" * (MAX_REQUEST_SIZE + 1))])
    assert [e.value for e in log.read("t", before[0].partition, 0)] == [b"before"]
    near_limit = b"\x01" * (MAX_REQUEST_SIZE - 1000)  # the limit is not stricter than it says
    [pos] = log.append([Message("t", KEY, near_limit)])
    assert log.read("t", pos.partition, pos.offset, limit=1)[0].value == near_limit


def test_undeclared_topics_are_refused_unless_allowed(kafka):
    with kafka.log(undeclared_partitions=None) as strict:
        with pytest.raises(ValueError, match="perceptionz"):
            strict.append([Message("perceptions", KEY, b"ok"), Message("perceptionz", KEY, b"typo")])
        with pytest.raises(ValueError, match="not declared"):
            strict.read("perceptionz", 0, 0)
        assert all(strict.end_offset("perceptions", p) == 0 for p in strict.partitions("perceptions"))
    assert kafka.topics() == [kafka.prefix + "perceptions"]  # the typo never became a topic


# -- topics ----------------------------------------------------------------------------------------------
def test_declared_topics_are_created_with_their_partitions_and_kept_forever(kafka):
    async def create_twice(admin):
        first = await create_missing_topics(admin, TOPICS, prefix=kafka.prefix)
        second = await create_missing_topics(admin, TOPICS, prefix=kafka.prefix)
        names = [kafka_name(t.name, kafka.prefix) for t in TOPICS]
        described = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(names)}
        configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
        return first, second, described, configs

    first, second, described, responses = kafka.admin(create_twice)
    assert first == sorted(kafka.prefix + t.name for t in TOPICS)
    assert second == []  # idempotent
    assert described == {kafka.prefix + t.name: t.partitions for t in TOPICS}
    assert described[kafka.prefix + "perceptions"] == 4 and described[kafka.prefix + "decisions"] == 1
    settings = {}
    for response in responses:
        for _code, _message, _type, name, entries in response.resources:
            settings[name] = {entry[0]: entry[1] for entry in entries}
    assert set(settings) == set(described)
    for name, config in settings.items():
        kept = (config["cleanup.policy"], config["retention.ms"], config["retention.bytes"])
        assert kept == ("delete", "-1", "-1"), name


def test_log_topics_carry_the_prefix_on_kafka_only(kafka):
    with kafka.log() as log:
        [pos] = log.append([Message("perceptions", KEY, b"x")])
        assert pos.topic == "perceptions"
        assert log.read("perceptions", pos.partition, pos.offset)[0].topic == "perceptions"
    assert kafka.topics() == [kafka.prefix + "perceptions"]


# -- producer and committed offsets ------------------------------------------------------------------------
def test_the_producer_is_idempotent_against_this_broker(log):
    log.append([Message("t", KEY, b"x")])
    # aiokafka has no public accessor: the broker handed out a producer id (InitProducerId), so
    # sends carry producer id + sequence numbers and the broker drops duplicated retries.
    txn = log._producer._txn_manager
    assert txn is not None and txn.producer_id >= 0 and txn.producer_epoch >= 0


def test_committed_offsets_are_kafka_group_offsets_and_survive_a_new_instance(kafka):
    with kafka.log() as first:
        positions = first.append([Message("t", KEY, f"m{i}".encode()) for i in range(3)])
        tp = positions[0].partition
        first.commit("worker-a", "t", tp, positions[1].offset + 1)
    with kafka.log() as second:
        assert second.committed("worker-a", "t", tp) == positions[1].offset + 1
        assert second.committed("worker-b", "t", tp) == 0

    async def group_offsets(admin):  # what any Kafka tool sees: group "worker-a", the prefixed topic
        return await admin.list_consumer_group_offsets("worker-a", partitions=[TopicPartition(kafka.prefix + "t", tp)])

    [(got_tp, got)] = kafka.admin(group_offsets).items()
    assert (got_tp.topic, got_tp.partition, got.offset) == (kafka.prefix + "t", tp, positions[1].offset + 1)


def test_commit_rejects_what_kafka_cannot_store(log):
    [pos] = log.append([Message("t", KEY, b"x")])
    with pytest.raises(ValueError):
        log.commit("", "t", pos.partition, 1)
    with pytest.raises(ValueError):
        log.commit("c", "t", pos.partition, -1)
    with pytest.raises(ValueError, match="no partition"):
        log.commit("c", "t", 9, 1)


# -- threads, closing, failures ----------------------------------------------------------------------------
def test_appends_from_many_threads_get_distinct_positions(log):
    results: dict[int, list] = {}
    start = threading.Barrier(6)

    def writer(n):
        start.wait()
        results[n] = [p for i in range(10) for p in log.append([Message("t", f"acme/agent-{n}", f"{n}-{i}".encode())])]

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [p for n in range(6) for p in results[n]]
    assert len(set(everything)) == 60
    for n in range(6):
        [partition] = {p.partition for p in results[n]}
        mine = [e for e in log.read("t", partition, 0) if e.key == f"acme/agent-{n}"]
        assert [e.value for e in mine] == [f"{n}-{i}".encode() for i in range(10)]


def test_a_closed_log_refuses_calls(kafka):
    log = kafka.log()
    log.close()
    log.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        log.append([Message("t", KEY, b"x")])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_broker_is_named_in_the_error():
    """Needs no broker: nothing listens on the port."""
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(KafkaUnavailable, match=address):
        KafkaLog(address, timeout_s=5)


def test_a_silent_broker_times_out_naming_the_address():
    """Needs no broker: something accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(KafkaUnavailable, match=address):
            KafkaLog(address, timeout_s=1.0)
        assert time.monotonic() - t0 < 10


def test_no_event_loop_thread_outlives_close(kafka):
    before = set(threading.enumerate())
    log = kafka.log()
    log.append([Message("t", KEY, b"x")])
    assert len(set(threading.enumerate()) - before) == 1  # the loop thread
    log.close()
    assert set(threading.enumerate()) - before == set()
    with pytest.raises(KafkaUnavailable):  # nor does one of a log that failed to open
        KafkaLog(f"127.0.0.1:{_closed_port()}", timeout_s=5)
    assert set(threading.enumerate()) - before == set()
