"""Fuzzing the records the projectors consume (design.md §issue-19 point 3): nothing crashes, nothing is lost.

Hypothesis makes records no hindbrain writer would: garbage bytes, empty and null values, Avro
cut short or with bytes after it, valid Avro of a schema version or a record type nobody ships,
records on the wrong topic, without a tenant or an id, with a time no view can hold, decisions
whose payload is not JSON, a megabyte of noise; keys that are not UTF-8, headers. They are
written straight to the log (a foreign producer on Kafka; ``append`` on the SQLite log),
interleaved with good records a Brain writes through the SDK. Then:

* every consumer is still running (the projector, the learner, the recall index's tail);
* every bad record is in the dead letters, with its stage and reason, and in no view;
* every good record is in its view exactly once, and none is dead-lettered;
* the views can be read back whole (a Brain reopens over them).

One batch of records per hypothesis example, one projector for all of them.
"""

from __future__ import annotations

import asyncio
import collections
import io
import json
import threading
import time
import types
import typing

import fastavro
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from budget import examples
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain.schemas.codec import MAGIC, registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.kafka_log import MAX_REQUEST_SIZE
from hindbrain.streams.log import Message, Position
from hindbrain.streams.processing import TS_US_RANGE, project_batch
from hindbrain.streams.topics import TOPICS, kafka_name
from hindbrain.streams.worker import log_entry

FUZZ = settings(deadline=None, derandomize=True, database=None, phases=[Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
SOURCE_TOPICS = [t.name for t in TOPICS if t.name != "dead_letters"]
# Tables that hold one row per record, by the column naming it.
VIEWS = {"events": "event_id", "fragments": "fragment_id", "outcomes": "outcome_id", "decisions": "decision_id"}


# -- records ---------------------------------------------------------------------------------------
def perception(tenant: str = "acme", text: str = "a fuzzed perception", **env) -> dict:
    return {"envelope": envelope("perception", tenant, agent="fuzzer", **env), "kind": "message", "text": text,
            "system": None, "identity": None, "action": None, "expected": None, "actual": None, "entities": [],
            "scope": {}, "signal": None, "success": None, "polarity": None, "session": None, "speaker": None,
            "emotion": None}


def decision(payload_json: str) -> dict:
    env = envelope("decision", "acme", agent="fuzzer")
    return {"envelope": env, "decision_id": env["record_id"], "kind": "belief_induced", "subject_ids": ["bl_x"],
            "evidence_ids": [], "inputs_json": "{}", "reason": "fuzzed", "payload_json": payload_json,
            "decided_by": {"job": "fuzz", "version": "1", "parameters_json": "{}"}}


def single_object(schema: dict, record: dict) -> bytes:
    """``record`` as Avro single-object encoding under ``schema`` (shipped or not)."""
    parsed = parse_schema(schema)
    out = io.BytesIO()
    out.write(MAGIC + bytes.fromhex(fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO")))
    fastavro.schemaless_writer(out, parsed, record)
    return out.getvalue()


def newer_perception_schema() -> dict:
    """perception v3, which no reader has: v2 plus one field (a newer writer's records)."""
    schema = json.loads(json.dumps(registry.current("perception").parsed))
    schema["fields"].append({"name": "mood", "type": ["null", "string"], "default": None})
    return schema


NEWER = newer_perception_schema()
TELEMETRY = {"type": "record", "name": "Telemetry", "namespace": "hindbrain",
             "fields": [{"name": "cpu", "type": "double"}, {"name": "host", "type": "string"}]}
TS_EDGES = [TS_US_RANGE[0] - 1, TS_US_RANGE[1] + 1, -(2**63), 2**63 - 1]


class Bad(typing.NamedTuple):
    kind: str
    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    certain: bool  # True: surely not a record; False: random bytes after a valid header may parse

    def __repr__(self) -> str:  # a megabyte of noise is not worth printing
        value = "None" if self.value is None else f"{self.value[:40]!r}...({len(self.value)} bytes)"
        return f"Bad({self.kind}, {self.topic}, key={self.key!r}, value={value})"


def valid_value(draw) -> bytes:
    return registry.encode("perception", perception(text=draw(st.text(max_size=50))))


@st.composite
def bad_records(draw, huge: bool) -> Bad:
    kinds = ["garbage", "empty", "null", "truncated", "trailing", "noise_after_header", "newer_version",
             "unknown_type", "wrong_topic", "no_tenant", "no_id", "time_out_of_range", "payload_not_json"]
    kind = draw(st.sampled_from(kinds + (["huge"] if huge else [])))
    topic, certain = draw(st.sampled_from(SOURCE_TOPICS)), True
    if kind == "garbage":
        value = draw(st.binary(min_size=1, max_size=300).filter(lambda b: not b.startswith(MAGIC)))
    elif kind == "empty":
        value = b""
    elif kind == "null":  # a Kafka tombstone
        value = None
    elif kind == "truncated":
        whole = valid_value(draw)
        value = whole[:draw(st.integers(0, len(whole) - 1))]
    elif kind == "trailing":
        value = valid_value(draw) + draw(st.binary(min_size=1, max_size=8))
    elif kind == "noise_after_header":
        value, certain = MAGIC + registry.current("perception").fingerprint + draw(st.binary(max_size=200)), False
    elif kind == "newer_version":
        value, topic = single_object(NEWER, {**perception(), "mood": "curious"}), "perceptions"
    elif kind == "unknown_type":
        value = single_object(TELEMETRY, {"cpu": draw(st.floats()), "host": draw(st.text(max_size=20))})
    elif kind == "wrong_topic":
        value, topic = valid_value(draw), draw(st.sampled_from([t for t in SOURCE_TOPICS if t != "perceptions"]))
    elif kind == "no_tenant":
        value, topic = registry.encode("perception", perception(tenant="")), "perceptions"
    elif kind == "no_id":
        record = perception()
        record["envelope"]["record_id"] = ""
        value, topic = registry.encode("perception", record), "perceptions"
    elif kind == "time_out_of_range":
        value, topic = registry.encode("perception", perception(ts_us=draw(st.sampled_from(TS_EDGES)))), "perceptions"
    elif kind == "payload_not_json":
        value, topic = registry.encode("decision", decision(draw(st.sampled_from(["", "{", "nan", "[1,"])))), \
            "decisions"
    else:  # huge: near the broker's 1 MB limit, so its dead letter cannot hold it whole
        value = b"\x00" * 1_048_400  # the broker takes it (1048588 with the batch), its dead letter would not
    key = draw(st.none() | st.binary(max_size=30) | st.just(b"acme/fuzzer"))
    if value is None and key is None:  # Kafka takes no record without both
        key = b"acme/fuzzer"
    headers = draw(st.lists(st.tuples(st.text(max_size=10), st.binary(max_size=20)), max_size=2))
    return Bad(kind, topic, key, value, headers, certain)


# -- a producer no hindbrain code wrote ------------------------------------------------------------
class ForeignProducer:
    """Writes any bytes, or none, to the test's topics: keys that are not UTF-8, null values,
    headers. Its own event loop runs in a daemon thread; ``send`` waits for the broker's acks."""

    def __init__(self, bootstrap: str, prefix: str):
        self.prefix = prefix
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.producer = self._run(self._started(bootstrap))

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    async def _started(self, bootstrap: str) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_request_size=2 << 20)
        await producer.start()
        return producer

    def send(self, records: list[Bad]) -> list[Position]:
        async def sent():
            acks = [await self.producer.send(kafka_name(r.topic, self.prefix), value=r.value, key=r.key,
                                             headers=[(k, v) for k, v in r.headers]) for r in records]
            return [await ack for ack in acks]

        return [Position(r.topic, md.partition, md.offset) for r, md in zip(records, self._run(sent()), strict=True)]

    def close(self) -> None:
        self._run(self.producer.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


# -- what the views say ------------------------------------------------------------------------------
def dead_letter_id(position: Position) -> str:
    return f"dl_{position.topic}_{position.partition}_{position.offset}"


def dead_letters(brain) -> dict[str, dict]:
    return {r["dead_letter_id"]: r for r in brain.sql(
        "SELECT dead_letter_id, source_topic, stage, reason, original_hex FROM dead_letters FINAL")}


def projected_positions(brain) -> set[Position]:
    """The log positions of the records that made a row in a view (not a dead letter)."""
    union = " UNION ALL ".join(f"SELECT _topic, _partition, _offset FROM {t}" for t in VIEWS)
    return {Position(*row.values()) for row in brain.sql(union)}


def times_stored(brain, table: str, ids: list[str]) -> dict[str, int]:
    column = VIEWS[table]
    rows = brain.sql(f"SELECT {column} AS id, count() AS n FROM {table} FINAL WHERE {column} IN {{ids:Array(String)}} "
                     f"GROUP BY id", {"ids": ids})
    return {r["id"]: r["n"] for r in rows}


def check_every_record_landed(brain, bad: list[tuple[Bad, Position]], good: dict[str, list[str]]) -> None:
    letters, projected = dead_letters(brain), projected_positions(brain)
    for record, position in bad:
        letter = letters.get(dead_letter_id(position))
        if record.certain or position not in projected:
            assert letter is not None, f"{record.kind} at {position} is neither in a view nor dead-lettered"
            assert letter["stage"] in ("decode", "validate", "project") and letter["reason"], letter
            assert bytes.fromhex(letter["original_hex"]) == (record.value or b"")[:len(letter["original_hex"]) // 2]
        if record.certain:
            assert position not in projected, f"{record.kind} at {position} made a row in a view"
    bad_letters = {dead_letter_id(p) for _, p in bad}
    assert set(letters) <= bad_letters, f"good records dead-lettered: {set(letters) - bad_letters}"
    for table, ids in good.items():
        assert times_stored(brain, table, ids) == dict.fromkeys(ids, 1), table


def wait_until(condition, what: str, timeout_s: float = 60.0, alive=()) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        for service in alive:
            assert service.alive, f"{type(service).__name__} died while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# -- the SDK's good records ----------------------------------------------------------------------------
def write_good(brain, texts: list[str], good: dict[str, list[str]]) -> None:
    """Perceptions of ``texts``, a unit learnt from the first, an outcome: the ids each view must hold."""
    events = [brain.perceive(tenant="acme", agent="a1", text=t or "(empty)", task="fuzz") for t in texts]
    good["events"] += events
    good["fragments"].append(brain.learn(tenant="acme", agent="a1", condition=f"when {texts[0]!r} happens",
                                         action="look at the logs", event_ids=events[:1]))
    good["outcomes"].append(brain.outcome(tenant="acme", agent="a1", success=True, steps=len(texts)))


# -- Kafka ----------------------------------------------------------------------------------------------
# aiokafka's partitioner picks a random partition for a record without a key (hypothesis notices).
@pytest.mark.filterwarnings("ignore:Do not use the `random` module:hypothesis.errors.HypothesisDeprecationWarning")
def test_a_foreign_producers_records_never_stop_the_projector_and_nothing_is_lost(kafka, tmp_path):
    group = f"{kafka.prefix}projector"
    with Brain.open(tmp_path, kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=group,
                    embedder="none") as brain:
        foreign = ForeignProducer(kafka.bootstrap, kafka.prefix)
        bad: list[tuple[Bad, Position]] = []
        good: dict[str, list[str]] = {"events": [], "fragments": [], "outcomes": []}

        @settings(FUZZ, max_examples=25)
        @given(records=st.lists(bad_records(huge=True), min_size=1, max_size=6),
               texts=st.lists(st.text(max_size=40), min_size=1, max_size=3))
        def one_batch(records, texts):
            write_good(brain, texts, good)
            bad.extend(zip(records, foreign.send(records), strict=True))

        started = time.perf_counter()
        try:
            one_batch()
            # A good record from another writer after all that noise: the index tail still reads on.
            after = registry.encode("perception", perception(text="the tail reads past the noise"))
            foreign.send([Bad("good", "perceptions", b"acme/fuzzer", after, [], False)])
        finally:
            foreign.close()
        kinds = sorted(collections.Counter(r.kind for r, _ in bad).items())
        print(f"\n{len(bad)} bad records {kinds} among {sum(map(len, good.values()))} good ones, "
              f"{time.perf_counter() - started:.1f} s to write")
        log, services = brain.log, brain.services
        sources = [(t, p) for t in SOURCE_TOPICS for p in log.partitions(t)]
        ends = {tp: log.end_offset(*tp) for tp in sources}
        wait_until(lambda: all(log.committed(group, *tp) >= end for tp, end in ends.items()),
                   "the projector to commit every record", alive=services)
        wait_until(lambda: log.committed(group, "dead_letters", 0) >= log.end_offset("dead_letters", 0),
                   "the dead letters to be projected", alive=services)
        assert all(s.alive for s in services), [type(s).__name__ for s in services if not s.alive]

        check_every_record_landed(brain, bad, good)
        assert {r.kind for r, _ in bad} >= {"garbage", "null", "truncated", "newer_version", "time_out_of_range"}
        wait_until(lambda: brain.recall(tenant="acme", query="tail reads past the noise", layers=["episodic"]).items,
                   "the index tail to index a record written after the bad ones", alive=services)
        brain.index.load(brain.warehouse)  # what a reopened Brain does: every row of the views reads back
        [count] = brain.sql("SELECT count() AS n FROM events FINAL")
        assert len(brain.sql("SELECT * FROM events FINAL")) == count["n"]


# -- the pure pipeline every engine runs ---------------------------------------------------------------
@settings(FUZZ, max_examples=examples(200))
@given(records=st.lists(bad_records(huge=True), min_size=1, max_size=5))
def test_the_pipeline_dead_letters_every_bad_record_in_a_letter_kafka_takes(records):
    """decode → validate → project, as the Faust agent feeds it (``worker.log_entry``): no record
    stops the batch, and every dead letter fits in a Kafka message."""
    messages = [types.SimpleNamespace(topic=kafka_name(r.topic, "p."), partition=0, offset=n, key=r.key,
                                      value=r.value) for n, r in enumerate(records)]
    batch = project_batch([log_entry(m, "p.") for m in messages], 0)
    lettered = {letter["position"] for letter in batch.dead_letters}
    assert lettered >= {n for n, r in enumerate(records) if r.certain}
    for letter in batch.dead_letters:
        value = registry.encode("dead_letter", letter)
        assert DefaultRecordBatchBuilder.estimate_size_in_bytes(b"acme/", value, []) <= MAX_REQUEST_SIZE


# -- the embedded log -------------------------------------------------------------------------------------
def test_corrupt_records_in_the_embedded_log_are_dead_lettered_and_the_brain_reopens(tmp_path):
    bad: list[tuple[Bad, Position]] = []
    good: dict[str, list[str]] = {"events": [], "fragments": [], "outcomes": []}
    with Brain.open(tmp_path, embedder="none") as brain:

        @settings(FUZZ, max_examples=40)
        @given(records=st.lists(bad_records(huge=False), min_size=1, max_size=6),
               texts=st.lists(st.text(max_size=40), min_size=1, max_size=3))
        def one_batch(records, texts):
            write_good(brain, texts, good)
            # another writer's records between the Brain's (a newer version's, a broken tool's)
            positions = brain.log.append([Message(r.topic, r.key.decode("utf-8", "replace") if r.key else None,
                                                  r.value or b"") for r in records])
            bad.extend(zip(records, positions, strict=True))

        one_batch()
        brain.runner.catch_up()
        check_every_record_landed(brain, bad, good)
        digest = brain.warehouse.digest()
    with Brain.open(tmp_path, embedder="none") as brain:  # catch-up, index and learner over the same log
        assert brain.warehouse.digest() == digest
        assert len(brain.sql("SELECT * FROM events")) == len(set(good["events"]))
