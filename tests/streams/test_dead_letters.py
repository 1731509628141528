"""A record that cannot be decoded, validated or projected is dead-lettered; the stream goes on."""

from __future__ import annotations

import copy

import pytest

from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Message
from hindbrain.streams.runner import CONSUMER, EmbeddedRunner
from hindbrain.streams.sqlite_log import ALL_TOPICS, SqliteLog

GARBAGE = b"\x00\xffnot an avro record at all\xc3"


@pytest.fixture
def runner(tmp_path, open_warehouse):
    log = SqliteLog(tmp_path / "log.sqlite")
    yield EmbeddedRunner(log, open_warehouse())
    log.close()


def perception(sample_records, event_id: str) -> dict:
    record = copy.deepcopy(sample_records[0][1])
    record["envelope"]["record_id"] = event_id
    return record


def raw(record_type: str, record: dict, topic: str) -> Message:
    return Message(topic, "acme/agent-7", registry.encode(record_type, record))


def dead_letter_rows(runner) -> list[tuple]:
    return runner.warehouse.query(
        "SELECT source_topic, source_offset, stage, reason, tenant, original_hex FROM dead_letters FINAL "
        "ORDER BY source_offset"
    )


def dead_letter_records(log) -> list[dict]:
    return [registry.decode(e.value)[1] for e in log.read_all(0) if e.topic == "dead_letters"]


def event_ids(runner) -> list[str]:
    return [r[0] for r in runner.warehouse.query("SELECT event_id FROM events FINAL ORDER BY event_id")]


def test_corrupt_and_misplaced_records_are_dead_lettered_and_processing_continues(runner, sample_records):
    runner.submit([("perception", perception(sample_records, "ev_before"))])
    runner.flush()
    garbage_at, wrong_at = (p.offset for p in runner.log.append([
        Message("perceptions", None, GARBAGE),
        raw("perception", perception(sample_records, "ev_wrong_topic"), "outcomes"),
    ]))
    runner.log.append([raw("perception", perception(sample_records, "ev_after"), "perceptions")])

    runner.catch_up()

    rows = dead_letter_rows(runner)
    assert [(r[0], r[1], r[2]) for r in rows] == [("perceptions", garbage_at, "decode"),
                                                  ("outcomes", wrong_at, "validate")]
    assert "Avro" in rows[0][3] and rows[0][5] == GARBAGE.hex()
    assert rows[1][3] == "a perception record on topic 'outcomes'" and rows[1][4] == "acme"
    assert [(d["topic"], d["position"], d["stage"], d["original"]) for d in dead_letter_records(runner.log)] == [
        ("perceptions", garbage_at, "decode", GARBAGE),
        ("outcomes", wrong_at, "validate", registry.encode("perception", perception(sample_records, "ev_wrong_topic"))),
    ]
    assert event_ids(runner) == ["ev_after", "ev_before"]
    assert runner.log.committed(CONSUMER, ALL_TOPICS, 0) == runner.log.end_offset(ALL_TOPICS, 0)

    # Catching up again finds nothing new and dead-letters nothing twice.
    assert runner.catch_up() == 0
    assert len(dead_letter_rows(runner)) == 2 and len(dead_letter_records(runner.log)) == 2


def test_a_record_another_writer_appended_between_ours_is_not_skipped(runner, sample_records):
    runner.submit([("perception", perception(sample_records, "ev_1"))])
    (garbage_at,) = (p.offset for p in runner.log.append([Message("perceptions", None, GARBAGE)]))
    runner.submit([("perception", perception(sample_records, "ev_2"))])
    assert runner.pending == 2

    runner.flush()

    assert [(r[1], r[2]) for r in dead_letter_rows(runner)] == [(garbage_at, "decode")]
    assert event_ids(runner) == ["ev_1", "ev_2"]
    assert runner.log.committed(CONSUMER, ALL_TOPICS, 0) == runner.log.end_offset(ALL_TOPICS, 0)


def test_a_record_its_projector_rejects_is_dead_lettered_at_the_project_stage(runner, sample_records):
    bad = {
        "envelope": envelope("decision", "acme", record_id="dc_bad", ts_us=1), "decision_id": "dc_bad",
        "kind": "belief_induced", "subject_ids": [], "evidence_ids": [], "inputs_json": "{}", "reason": "",
        "decided_by": {"job": "induce", "version": "1", "parameters_json": "{}"}, "payload_json": "not json",
    }
    (bad_at,) = (p.offset for p in runner.submit([("decision", bad)]))
    runner.submit([("perception", perception(sample_records, "ev_next"))])
    runner.flush()
    runner.submit([("perception", perception(sample_records, "ev_later"))])
    runner.flush()

    ((topic, offset, stage, reason, tenant, _),) = dead_letter_rows(runner)
    assert (topic, offset, stage, tenant) == ("decisions", bad_at, "project", "acme")
    assert reason.startswith("JSONDecodeError")
    assert runner.warehouse.query("SELECT count() FROM beliefs FINAL") == [(0,)]
    assert event_ids(runner) == ["ev_later", "ev_next"]
    assert runner.log.committed(CONSUMER, ALL_TOPICS, 0) == runner.log.end_offset(ALL_TOPICS, 0)


def test_bad_records_at_the_same_offset_of_different_partitions_stay_two_rows(warehouse):
    from hindbrain.streams.log import Position
    from hindbrain.streams.processing import Decoded, dead_letter, project_batch
    from hindbrain.streams.sink import insert_batch

    letters = [dead_letter(Position("perceptions", p, 7), "decode", "not Avro", b"\x00", 0) for p in (0, 1)]
    batch = project_batch([Decoded(Position("dead_letters", 0, n), "dead_letter", dl)
                           for n, dl in enumerate(letters)], 0)
    insert_batch(warehouse, batch)
    assert warehouse.query("SELECT dead_letter_id FROM dead_letters FINAL ORDER BY dead_letter_id") == [
        ("dl_perceptions_0_7",), ("dl_perceptions_1_7",)
    ]
