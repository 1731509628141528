"""The log's records on every path (docs/security.md, "The log's records on every path, round thirty-one"):
a decision whose ``decision_id`` is empty or over ``MAX_DECISION_ID`` characters is dead-lettered with its
reason wherever the log's records are decoded — the per-record projector, the columnar Avro decode, the
chDB ``INSERT … SELECT`` and the C native block of Kafka record batches — and the learner and the recall
index (which fold ``decoded_entries``) skip it alike: slower, never different. A perception whose key names
another tenant than its envelope goes the same way on every path (into the envelope's tenant: no path reads
the key as a tenant)."""

from __future__ import annotations

import json

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from hindbrain import Brain
from hindbrain.learning.learner import Learner
from hindbrain.recall.index import RecallIndex
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams import columnar, kafka_batches, kafka_runner
from hindbrain.streams.log import LogEntry, Message, Position
from hindbrain.streams.processing import (
    MAX_DECISION_ID,
    Decoded,
    ProjectedBatch,
    decoded_entries,
    project_batch,
    to_messages,
)
from hindbrain.streams.replay import replay
from hindbrain.streams.replay_chunk import project_entries
from hindbrain.streams.sink import insert_batch
from hindbrain.streams.sqlite_log import SqliteLog
from hindbrain.streams.topics import key_of

TS = 1_700_000_000_000_000
PERCEPTIONS = columnar.MIN_BATCH + 20  # enough for the columnar paths to take them


def perception(i: int) -> dict:
    return {"envelope": envelope("perception", "acme", agent=f"agent-{i % 3}", ts_us=TS + i),
            "kind": "anomaly", "text": f"the export of report {i} hangs at 99%", "system": "BI", "identity": None,
            "action": None, "expected": None, "actual": None, "entities": [f"report-{i}"], "scope": {},
            "signal": None, "success": None, "polarity": None, "session": None, "speaker": None, "emotion": None,
            "origin": None}


def decision(decision_id: str, i: int) -> dict:
    return {"envelope": envelope("decision", "acme", ts_us=TS + i, record_id=f"dc_rec{i}"),
            "decision_id": decision_id, "kind": "belief_induced", "subject_ids": [f"bl_{i}"], "evidence_ids": [],
            "inputs_json": "{}", "reason": "asserted", "decided_by": {"job": "t", "version": "1",
                                                                       "parameters_json": "{}"},
            "payload_json": json.dumps({"belief_id": f"bl_{i}", "text": "exports hang at 99%", "confidence": 0.5,
                                        "support": 1})}


BOUNDARY = "dc_" + "b" * (MAX_DECISION_ID - 3)  # exactly the bound: taken
DECISION_IDS = ["dc_" + "a" * 32, BOUNDARY, BOUNDARY + "c", "dc_" + "d" * 10_000, ""]
REFUSED = {BOUNDARY + "c", "dc_" + "d" * 10_000, ""}


def log_entries() -> list[LogEntry]:
    """Perceptions at offsets 0.. of ``perceptions`` (one keyed ``globex/…`` with an ``acme`` envelope), and
    decisions of each id at offsets 0.. of ``decisions``, encoded as a foreign producer would (no check)."""
    records = [perception(i) for i in range(PERCEPTIONS)]
    keys = [key_of(r) for r in records]
    keys[7] = "globex/agent-1"  # the key disagrees with the envelope's tenant
    entries = [LogEntry("perceptions", 0, i, k, registry.encode("perception", r))
               for i, (k, r) in enumerate(zip(keys, records, strict=True))]
    return entries + [LogEntry("decisions", 0, i, "acme", registry.encode("decision", decision(d, i)))
                      for i, d in enumerate(DECISION_IDS)]


def with_dead_letter_rows(batch: ProjectedBatch) -> ProjectedBatch:
    """A batch's dead letters as rows of the view, as replay writes them (``project_entries``)."""
    for dl in batch.dead_letters:
        project_batch([Decoded(Position(dl["topic"], 0, dl["position"]), "dead_letter", dl)], TS, batch)
        batch.count -= 1
    return batch


def per_record(entries, warehouse) -> str:
    insert_batch(warehouse, project_entries(entries, TS, None))
    return "per record"


def columnar_avro(entries, warehouse) -> str:
    batch = project_entries(entries, TS, columnar.engine_for(warehouse))
    assert batch.tables.get("events"), "the columnar decode took no perception"
    insert_batch(warehouse, batch)
    return "columnar"


def insert_select(entries, warehouse) -> str:
    engine = columnar.engine_for(warehouse)
    hot, batch = kafka_runner._projected(entries, warehouse, engine)
    assert len(hot) == PERCEPTIONS and columnar.insert_events(hot, warehouse), "the INSERT … SELECT took nothing"
    insert_batch(warehouse, with_dead_letter_rows(batch))
    return "insert select"


def native_block(entries, warehouse) -> str:
    """Perceptions as one Kafka record batch (keys and all, as a broker sends it) through ``frame``."""
    hot = [e for e in entries if e.topic == "perceptions"]
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 24)
    for e in hot:
        builder.append(e.offset, timestamp=None, key=e.key.encode(), value=e.value, headers=[])
    framed = kafka_batches.frame([(0).to_bytes(8, "big") + bytes(builder.build())[8:]], 0, len(hot))
    assert framed is not None and kafka_batches.insert_events(warehouse, framed, 0) == len(hot)
    insert_batch(warehouse, with_dead_letter_rows(project_batch([e for e in entries if e not in hot], TS)))
    return "native block"


def views(warehouse) -> tuple:
    dead = warehouse.query(f"SELECT source_topic, source_offset, stage, reason FROM `{warehouse.database}`."
                           f"dead_letters FINAL ORDER BY source_topic, source_offset")
    decided = warehouse.query(f"SELECT decision_id FROM `{warehouse.database}`.decisions FINAL ORDER BY decision_id")
    tenants = warehouse.query(f"SELECT tenant, count() FROM `{warehouse.database}`.events FINAL GROUP BY tenant")
    return warehouse.digest(), [tuple(r) for r in dead], [r[0] for r in decided], [tuple(r) for r in tenants]


def test_every_projector_path_dead_letters_an_unbounded_decision_id_and_they_agree(open_warehouse):
    entries = log_entries()
    seen = {}
    for path in (per_record, columnar_avro, insert_select, native_block):
        warehouse = open_warehouse()
        name = path(entries, warehouse)
        seen[name] = views(warehouse)
    first = seen["per record"]
    digest, dead, decided, tenants = first
    assert decided == sorted(set(DECISION_IDS) - REFUSED)
    assert [(t, o, s) for t, o, s, _ in dead] == [("decisions", DECISION_IDS.index(d), "validate")
                                                  for d in sorted(REFUSED, key=DECISION_IDS.index)]
    assert {r for *_, r in dead} == {"decision_id is empty", *(f"decision_id is {n} characters, over {MAX_DECISION_ID}"
                                                               for n in (MAX_DECISION_ID + 1, 10_003))}
    assert tenants == [("acme", PERCEPTIONS)]  # the key's tenant moves nothing, on any path
    for path, got in seen.items():
        assert got == first, path


def test_the_learner_the_recall_index_and_the_views_all_skip_an_invalidation_with_an_unbounded_id(tmp_path,
                                                                                                   open_warehouse):
    """A unit's ``unit_invalidated`` rewritten with an id of 65 characters, in a log otherwise the brain's:
    the learner restoring from it, the recall index and a replay of it all keep the unit a candidate, and the
    replay dead-letters the record with its reason."""
    with Brain.open(tmp_path / "brain", embedder="none") as b:
        fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
        b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2")
        entries = b.log.read_all(0, 100_000)
    forged = []
    for e in entries:
        record_type, record = registry.decode(e.value)
        if record_type == "decision" and record["kind"] == "unit_invalidated":
            record["decision_id"] = "dc_" + "f" * (MAX_DECISION_ID - 2)
            e = LogEntry(e.topic, e.partition, e.offset, e.key, registry.encode(record_type, record))
        forged.append(e)
    decoded = decoded_entries(forged)
    learner = Learner()
    learner.process(decoded, restoring=True)
    assert learner.unit("acme", fid).status == "candidate"
    index = RecallIndex()
    index.observe(decoded)
    tenant = index.tenant("acme")
    assert tenant.docs[tenant.by_id[fid]].status == "candidate"
    log = SqliteLog(tmp_path / "forged.db")
    try:
        log.append([Message(e.topic, e.key, e.value) for e in forged])
        warehouse = open_warehouse()
        report = replay(log, warehouse)
    finally:
        log.close()
    assert report.dead_letters == 1
    [(status, kind)] = warehouse.query(f"SELECT status, decision_kind FROM `{warehouse.database}`.unit_states FINAL "
                                       f"WHERE fragment_id = {{f:String}}", {"f": fid})
    assert (status, kind) == ("candidate", "unit_accepted")
    [(reason,)] = warehouse.query(f"SELECT reason FROM `{warehouse.database}`.dead_letters FINAL")
    assert reason == f"decision_id is {MAX_DECISION_ID + 1} characters, over {MAX_DECISION_ID}"


@pytest.mark.parametrize("decision_id", ["", "dc_" + "e" * MAX_DECISION_ID], ids=["empty", "over the bound"])
def test_a_writer_in_this_process_cannot_append_a_decision_every_reader_would_refuse(tmp_path, decision_id):
    """Embedded code's decisions reach the learner and the recall index before the projector (the runner's
    listeners): one every reader would dead-letter is refused before the log, naming the field."""
    with pytest.raises(ValueError, match="decision_id is"):
        to_messages([("decision", decision("dc_" + "a" * 32, 0)), ("decision", decision(decision_id, 1))])
    with Brain.open(tmp_path / "brain", embedder="none") as b:
        end = b.log.end_offset("*", 0)
        with pytest.raises(ValueError, match="decision_id is"):
            b.runner.submit([("decision", decision(decision_id, 1))])
        assert b.log.end_offset("*", 0) == end

