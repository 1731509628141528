"""Replay of Kafka record batches straight into chDB (``streams.kafka_batches``) makes exactly
the views of the per-record replay; a range with anything it does not take falls back whole."""

from __future__ import annotations

import threading
import time

import pytest

from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams import kafka_batches, kafka_runner
from hindbrain.streams.log import Message
from hindbrain.streams.replay import replay
from hindbrain.streams.topics import key_of

TS = 1_700_000_000_000_000


def perception(i: int, **env) -> dict:
    return {"envelope": {**envelope("perception", f"tenant-{i % 3}", agent=f"agent-{i % 5}", task=None,
                                    ts_us=TS + i), **env},
            "kind": "anomaly" if i % 2 else "message", "text": f"AAAA submit {i} did nothing 权限不足",
            "system": "IAM" if i % 4 else None, "identity": None, "action": None, "expected": None, "actual": None,
            "entities": ["IAM", f"e{i}" * (i % 90)][: i % 3], "scope": {"env": "prod", "n": str(i)} if i % 2 else {},
            "signal": None, "success": [None, True, False][i % 3], "polarity": 0.5 if i % 7 == 0 else None,
            "session": None, "speaker": "user" if i % 6 == 0 else None, "emotion": None,
            "origin": "tool" if i % 5 == 0 else None}


def message(record: dict, key: str | None = "k", value: bytes | None = None) -> Message:
    return Message("perceptions", key, registry.encode("perception", record) if value is None else value)


def clean(n: int, start: int = 0) -> list[Message]:
    return [message(perception(i), key=key_of(perception(i))) for i in range(start, start + n)]


def append_200_in_fours(log) -> None:
    """200 clean perceptions in four appends of 50: several record batches a partition."""
    messages = clean(200)
    for i in range(0, len(messages), 50):
        log.append(messages[i:i + 50])


class Meeting:
    """A spy of ``call`` that keeps ``what(args)`` of each call in ``seen`` and, once ``overlapping``,
    makes the first two calls since ``seen`` was emptied wait for each other: the barrier breaks after
    60 s (the replay raises) if two never run at once."""

    def __init__(self, call, what):
        self.call, self.what, self.seen, self.overlapping = call, what, [], False
        self.meet = threading.Barrier(2, timeout=60)

    def __call__(self, *args):
        self.seen.append(self.what(args))
        if len(self.seen) <= 2 and self.overlapping:
            self.meet.wait()
        return self.call(*args)


@pytest.fixture
def spied(monkeypatch):
    """The results of every ``insert_events`` (rows written, or None: the range fell back), and a
    None for every range ``frame`` refused (a record its checks in C do not take: the same fallback)."""
    results: list = []
    insert, frame = kafka_batches.insert_events, kafka_batches.frame

    def spy(*args):
        results.append(insert(*args))
        return results[-1]

    def framed(*args):
        if (got := frame(*args)) is None:
            results.append(None)
        return got

    monkeypatch.setattr(kafka_batches, "insert_events", spy)
    monkeypatch.setattr(kafka_batches, "frame", framed)
    return results


def both(kafka, open_warehouse, monkeypatch, messages: list[Message], chunk: int = 20_000):
    """Replay ``messages`` per record and through the batches; the two reports."""
    log = kafka.log()
    try:
        for i in range(0, len(messages), 50):  # several produce requests: several batches
            log.append(messages[i:i + 50])
        monkeypatch.setenv("HINDBRAIN_COLUMNAR_DECODE", "0")
        slow = replay(log, open_warehouse(), chunk=chunk)
        monkeypatch.delenv("HINDBRAIN_COLUMNAR_DECODE")
        fast = replay(log, open_warehouse(), chunk=chunk)
    finally:
        log.close()
    assert (fast.records, fast.dead_letters, fast.digest) == (slow.records, slow.dead_letters, slow.digest)
    return fast


def test_clean_batches_go_straight_into_chdb(kafka, open_warehouse, monkeypatch, spied):
    report = both(kafka, open_warehouse, monkeypatch, clean(400))
    assert report.records == 400 and report.digest["events"][0] == 400
    assert spied and None not in spied and sum(spied) == 400


def test_ranges_cutting_through_batches_take_only_their_offsets(kafka, open_warehouse, monkeypatch, spied):
    report = both(kafka, open_warehouse, monkeypatch, clean(300), chunk=17)  # 17 never matches a batch's size
    assert report.digest["events"][0] == 300
    assert None not in spied and sum(spied) == 300


def _bad(kind: str) -> Message:
    record = perception(10_000)
    good = registry.encode("perception", record)
    if kind == "trailing bytes":
        return message(record, value=good + b"\x00\x02")
    if kind == "cut short":
        return message(record, value=good[:-3])
    if kind == "invalid UTF-8":
        return message(record, value=good.replace(b"AAAA", b"\xff\xfe\xfd\xfc"))
    if kind == "empty tenant":
        return message(perception(10_000, tenant=""))
    if kind == "not Avro":
        return message(record, value=b"not a hindbrain record at all")
    if kind == "no key":
        return message(record, key=None)
    raise AssertionError(kind)


BAD = ["trailing bytes", "cut short", "invalid UTF-8", "empty tenant", "not Avro"]


def test_a_bad_record_sends_its_range_to_the_per_record_path(kafka, open_warehouse, monkeypatch, spied):
    """One partition, ranges of 41 offsets: each bad kind once in the middle of a range and once
    last in one (where only the sentinel can tell), then a clean range; and a record with no key
    (the per-record reader's business), in whichever partition the producer puts it."""
    ranges = []
    for kind in BAD:
        ranges.append(clean(20) + [_bad(kind)] + clean(20, 20))
        ranges.append(clean(40) + [_bad(kind)])
    ranges.append(clean(41))
    log = kafka.log()
    try:
        for r in ranges:  # a produce request per range: its own batch
            log.append([Message(m.topic, "one-key", m.value) for m in r])
        log.append([_bad("no key")])
        monkeypatch.setenv("HINDBRAIN_COLUMNAR_DECODE", "0")
        slow = replay(log, open_warehouse(), chunk=41)
        monkeypatch.delenv("HINDBRAIN_COLUMNAR_DECODE")
        fast = replay(log, open_warehouse(), chunk=41)
    finally:
        log.close()
    assert (fast.records, fast.dead_letters, fast.digest) == (slow.records, slow.dead_letters, slow.digest)
    assert fast.records == 41 * len(ranges) + 1 and fast.dead_letters > 0
    assert spied.count(None) == 2 * len(BAD) + 1  # every range holding a bad record fell back whole
    assert spied.count(41) == 1  # the clean range after them did not


def test_a_record_delivered_twice_in_one_range_is_one_row_on_every_path(kafka, open_warehouse, monkeypatch, spied):
    """The insert does not merge its block (``optimize_on_insert = 0``): a record appended twice
    (an at-least-once retry) lands twice in one part, and reads collapse it like any duplicate."""
    twice = clean(30)
    twice[20:20] = twice[5:8]  # the same three records again, inside the range
    report = both(kafka, open_warehouse, monkeypatch, twice)
    assert report.records == 33 and report.digest["events"][0] == 30
    assert None not in spied and sum(spied) == 33


def test_ranges_are_inserted_side_by_side_on_sessions_of_their_own(kafka, open_warehouse, monkeypatch):
    """With two inserters, two record-batch inserts are in flight at once (the first two wait
    for each other), each on a session of its own, not the writer's (there they would queue on
    its lock); the views are those of one inserter."""
    spy = Meeting(kafka_batches.insert_events, lambda args: args[0])  # the session each insert ran on
    monkeypatch.setattr(kafka_batches, "insert_events", spy)
    log = kafka.log()
    try:
        append_200_in_fours(log)
        one = replay(log, open_warehouse(), chunk=10, inserters=1)
        one_sessions = {id(s) for s in spy.seen}
        spy.seen[:], spy.overlapping = [], True
        warehouse = open_warehouse()
        two = replay(log, warehouse, chunk=10, inserters=2)
    finally:
        log.close()
    assert (two.records, two.digest) == (one.records, one.digest) and two.digest["events"][0] == 200
    assert len(one_sessions) == 1 and len({id(s) for s in spy.seen}) == 2
    assert warehouse not in spy.seen


def project(log, warehouse, group: str, timeout_s: float = 120.0) -> None:
    """An in-process ``KafkaProjector`` of ``group`` until it committed every partition's end."""
    from hindbrain.streams.kafka_runner import KafkaProjector
    from hindbrain.streams.topics import TOPICS

    projector = KafkaProjector(log, warehouse, group=group, batch_size=50)
    projector.start()
    try:
        deadline = time.monotonic() + timeout_s
        for topic in TOPICS:  # dead_letters last: by then the projector appended its own
            for partition in log.partitions(topic.name):
                while log.committed(group, topic.name, partition) < log.end_offset(topic.name, partition):
                    assert projector.alive and time.monotonic() < deadline, f"{group} stuck at {topic.name}"
                    time.sleep(0.05)
    finally:
        projector.stop()


def test_the_worker_inserts_record_batches_and_dead_letters_what_they_refuse(kafka, open_warehouse, monkeypatch,
                                                                            spied):
    """The projecting consumer fetches perceptions as record batches (their partitions paused in
    the group) and inserts them as replay does; a fetch holding a bad record is projected per
    record with its dead letter. Same views as the per-record projector; nothing committed twice
    or skipped (every partition's end reached)."""
    log = kafka.log()
    try:
        for kind in BAD:  # a produce request each: one batch each, bad records mid-batch and last
            log.append([Message(m.topic, "one-key", m.value) for m in clean(20) + [_bad(kind)] + clean(20, 20)])
        log.append(clean(200))  # every partition
        log.append([Message("outcomes", "k", b"\x00 not an outcome")])  # another topic: the consumer's records
        monkeypatch.setenv("HINDBRAIN_KAFKA_BATCHES", "0")
        slow = open_warehouse()
        project(log, slow, f"{kafka.prefix}slow")
        monkeypatch.delenv("HINDBRAIN_KAFKA_BATCHES")
        assert not spied
        through_the_consumer = set()  # the topics of the records the consumer's getmany handed over
        projected = kafka_runner._projected

        def spy(entries, *args):
            through_the_consumer.update(e.topic for e in entries)
            return projected(entries, *args)

        monkeypatch.setattr(kafka_runner, "_projected", spy)
        fast = open_warehouse()
        project(log, fast, f"{kafka.prefix}fast")
    finally:
        log.close()
    assert fast.digest() == slow.digest()
    assert fast.digest()["events"][0] == 200 + 40 * len(BAD)
    assert fast.digest()["dead_letters"][0] == len(BAD) + 1
    assert spied.count(None) >= 1 and sum(n for n in spied if n) >= 100  # batches went in; bad ones fell back
    assert through_the_consumer == {"outcomes", "dead_letters"}  # never a perception: all came as batches


def test_a_replay_creates_no_topic(kafka, open_warehouse):
    """Replay reads the log and writes nothing to the cluster: the declared topics that do not
    exist (here all but ``perceptions``) have nothing to replay and are not created (creating
    them cost a 50k replay on a fresh prefix ~0.25 s of its ~1 s)."""
    log = kafka.log()
    try:
        log.append(clean(60))
        before = kafka.topics()
        report = replay(log, open_warehouse())
    finally:
        log.close()
    assert report.records == 60 and report.digest["events"][0] == 60
    assert kafka.topics() == before == [kafka.prefix + "perceptions"]


def _batch(base: int, values: list[bytes]) -> bytes:
    """One uncompressed v2 record batch at ``base`` as a broker sends it (the base offset is outside its CRC)."""
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for delta, value in enumerate(values):
        builder.append(delta, timestamp=None, key=b"k", value=value, headers=[])
    return base.to_bytes(8, "big") + bytes(builder.build())[8:]


@pytest.mark.parametrize(("bases", "start", "stop", "offsets"), [
    ((100, 103), 0, 10**6, [100, 101, 102, 103, 104]),  # back to back
    ((100, 110), 0, 10**6, [100, 101, 102, 110, 111]),  # a gap between batches: each batch's base
    ((100, 110), 101, 111, [101, 102, 110]),  # and a range cutting through both
    ((100, 103), 101, 104, [101, 102, 103]),
], ids=["back to back", "gap", "gap, cut", "back to back, cut"])
def test_each_row_gets_its_own_offset_with_or_without_gaps(open_warehouse, bases, start, stop, offsets):
    values = [registry.encode("perception", perception(i)) for i in range(5)]
    framed = kafka_batches.frame([_batch(bases[0], values[:3]) + _batch(bases[1], values[3:])], start, stop)
    assert framed is not None and framed.rows == len(offsets)
    warehouse = open_warehouse()
    assert kafka_batches.insert_events(warehouse, framed, 0) == len(offsets)
    rows = warehouse.query(f"SELECT _offset, event_id FROM `{warehouse.database}`.`events` ORDER BY _offset")
    assert [r[0] for r in rows] == offsets
    by_offset = dict(zip([100, 101, 102, bases[1], bases[1] + 1], values, strict=True))
    assert [r[1] for r in rows] == [registry.decode(by_offset[o])[1]["envelope"]["record_id"] for o in offsets]


def test_ranges_are_read_and_framed_two_at_a_time(kafka, open_warehouse, monkeypatch):
    """Two ranges are fetched and framed at once (``replay.READERS``: the frame's walk runs without the
    GIL, and one reader fell behind two inserters): the first two frames wait for each other; the
    views are those of one reader at a time."""
    from hindbrain.streams import replay as replay_module

    spy = Meeting(kafka_batches.frame, lambda args: args[1])
    monkeypatch.setattr(kafka_batches, "frame", spy)
    log = kafka.log()
    try:
        append_200_in_fours(log)
        monkeypatch.setattr(replay_module, "READERS", 1)
        one = replay(log, open_warehouse(), chunk=10)
        monkeypatch.setattr(replay_module, "READERS", 2)
        spy.seen[:], spy.overlapping = [], True
        two = replay(log, open_warehouse(), chunk=10)
    finally:
        log.close()
    assert (two.records, two.digest) == (one.records, one.digest) and two.digest["events"][0] == 200
    assert len(spy.seen) >= 4  # more ranges than readers: the pool took them in turn
