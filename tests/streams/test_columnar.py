"""The columnar decode of perceptions makes exactly the rows, dead letters and counts of the
per-record path, whatever is wrong with the batch (then it falls back, never differs)."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from hindbrain.projections.views import TABLES
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams import columnar, processing
from hindbrain.streams.log import LogEntry

TS = 1_700_000_000_000_000
N = columnar.MIN_BATCH + 44


def perception(i: int, **env) -> dict:
    return {"envelope": {**envelope("perception", f"tenant-{i % 3}", agent=f"agent-{i % 5}", task=None,
                                    ts_us=TS + i), **env},
            "kind": "anomaly" if i % 2 else "message", "text": f"AAAA submit {i} did nothing 权限不足",
            "system": "IAM" if i % 4 else None, "identity": None, "action": None, "expected": None, "actual": None,
            "entities": ["IAM", f"e{i}"][: i % 3], "scope": {"env": "prod", "n": str(i)} if i % 2 else {},
            "signal": None, "success": [None, True, False][i % 3], "polarity": 0.5 if i % 7 == 0 else None,
            "session": None, "speaker": "user" if i % 6 == 0 else None, "emotion": None,
            "origin": "tool" if i % 5 == 0 else None}


def entries(records: list[dict]) -> list[LogEntry]:
    return [LogEntry("perceptions", i % 4, 1000 + i, None, registry.encode("perception", r))
            for i, r in enumerate(records)]


def events(batch: processing.ProjectedBatch) -> pa.Table:
    parts = [TABLES["events"].to_arrow(batch.rows.get("events", [])), *batch.tables.get("events", [])]
    return pa.concat_tables(parts).sort_by("_offset")


def both(warehouse, batch_entries: list[LogEntry]):
    slow = processing.project_batch(batch_entries, TS)
    fast = columnar.project_batch(batch_entries, TS, columnar.engine_for(warehouse))
    assert fast.count == slow.count == len(batch_entries)
    assert events(fast).equals(events(slow))
    assert [d["reason"] for d in fast.dead_letters] == [d["reason"] for d in slow.dead_letters]
    assert {k: v for k, v in fast.rows.items() if k != "events"} == \
        {k: v for k, v in slow.rows.items() if k != "events"}
    return fast


@pytest.fixture(scope="module")
def warehouse(chdb_url):
    """One chDB session for the module's tests that only decode batches through it (``engine_for``
    reads the batch, no table): made once, not once a test (a warehouse's four sessions and the
    migration were ~0.4 s of CPU and seconds of wall a test on a busy machine). A refused decode
    leaves the session usable, which test_a_query_after_a_refused_arrow_query_reads_its_own_answer
    proves on a fresh one."""
    wh = Warehouse(chdb_url, database=f"t_{uuid.uuid4().hex[:16]}")
    yield wh
    try:
        wh.query(f"DROP DATABASE IF EXISTS `{wh.database}`")
    finally:
        wh.close()


def test_a_clean_batch_is_decoded_by_columns(warehouse):
    fast = both(warehouse, entries([perception(i) for i in range(N)]))
    assert fast.tables["events"][0].num_rows == N and "events" not in fast.rows


def test_rows_that_fail_validation_take_the_per_record_path(warehouse):
    records = [perception(i) for i in range(N)]
    records[3]["envelope"]["tenant"] = ""
    records[7]["envelope"]["record_id"] = ""
    records[11]["envelope"]["ts_us"] = 2 ** 62  # past the year 9999
    batch = entries(records)
    batch[20] = LogEntry("perceptions", 0, 1020, None, registry.encode("perception", records[20], version=1))
    batch[21] = LogEntry("perceptions", 0, 1021, None, b"\xc3\x01 not avro")
    fast = both(warehouse, batch)
    assert len(fast.dead_letters) == 4
    assert fast.tables["events"][0].num_rows == N - 5  # the v1 record too: decoded one by one


@pytest.mark.parametrize("damage", ["trailing", "cut", "utf8", "surrogate-in-a-map", "overlong-in-the-envelope"])
def test_a_batch_chdb_would_read_differently_falls_back_whole(warehouse, damage):
    batch = entries([perception(i) for i in range(N)])
    value = batch[51].value  # odd: it has a scope map
    value = {"trailing": value + b"\x00\x02", "cut": value[:-6],
             "utf8": value.replace(b"AAAA", b"\xff\xfeAA"),
             "surrogate-in-a-map": value.replace(b"prod", b"\xed\xa0\x80d"),
             "overlong-in-the-envelope": value.replace(b"agent-1", b"agent\xc0\x80")}[damage]
    assert value != batch[51].value
    batch[51] = LogEntry("perceptions", 2, 1051, None, value)
    fast = both(warehouse, batch)
    assert not fast.tables  # the per-record path made every row
    assert len(fast.dead_letters) == 1 and fast.dead_letters[0]["position"] == 1051


def test_the_utf8_check_covers_every_string_of_the_schema():
    assert columnar.PERCEPTIONS.utf8_sql is not None
    for name in ("record_id", "tenant", "agent", "task", "causation_ids", "producer", "text", "entities", "scope",
                 "origin"):
        assert name in columnar.PERCEPTIONS.utf8_sql


def test_a_small_batch_is_not_worth_a_query(warehouse):
    fast = both(warehouse, entries([perception(i) for i in range(10)]))
    assert not fast.tables


def direct(open_warehouse, batch_entries: list[LogEntry]):
    """As the Kafka projector does into one warehouse (``split_insertable``: the rest projected,
    the hot entries by ``insert_or_project``), the per-record path into another: the same
    digests, dead letters and count. The batch of the hot entries (empty unless refused)."""
    from hindbrain.streams.sink import insert_batch

    slow_wh, fast_wh = open_warehouse(), open_warehouse()
    slow = processing.project_batch(batch_entries, TS)
    insert_batch(slow_wh, slow)
    engine = columnar.engine_for(fast_wh)
    hot, rest = columnar.split_insertable(batch_entries, fast_wh, engine)
    assert sorted(hot + rest, key=batch_entries.index) == batch_entries and hot
    others = columnar.project_batch(rest, TS, engine)
    fast = columnar.insert_or_project(hot, TS, fast_wh, engine)
    insert_batch(fast_wh, others)
    insert_batch(fast_wh, fast)
    assert fast.count + others.count == slow.count == len(batch_entries)
    assert sorted(d["reason"] for d in others.dead_letters + fast.dead_letters) == sorted(
        d["reason"] for d in slow.dead_letters)
    assert fast_wh.digest() == slow_wh.digest()
    assert fast_wh.query(f"SELECT groupArray(_offset) FROM (SELECT _offset FROM `{fast_wh.database}`.events "
                         "ORDER BY _offset)") == slow_wh.query(
        f"SELECT groupArray(_offset) FROM (SELECT _offset FROM `{slow_wh.database}`.events ORDER BY _offset)")
    return fast


def test_a_clean_batch_goes_straight_into_chdb(open_warehouse):
    batch = entries([perception(i) for i in range(N)])
    batch[5] = LogEntry("cognitions", 1, 7, None, b"\xc3\x01 not avro")  # not hot: the per-record path
    fast = direct(open_warehouse, batch)
    assert not fast.rows and not fast.tables and not fast.dead_letters and fast.count == N - 1


@pytest.mark.parametrize("damage", ["trailing-last", "cut", "utf8", "empty tenant"])
def test_a_batch_with_a_row_the_insert_refuses_is_projected_whole(open_warehouse, damage):
    records = [perception(i) for i in range(N)]
    if damage == "empty tenant":
        records[9]["envelope"]["tenant"] = ""
    batch = entries(records)
    last = len(batch) - 1
    if damage == "trailing-last":  # only the marker after the last body can tell
        batch[last] = LogEntry("perceptions", 3, 1000 + last, None, batch[last].value + b"\x00")
    elif damage in ("cut", "utf8"):
        value = batch[51].value
        batch[51] = LogEntry("perceptions", 3, 1051, None,
                             value[:-6] if damage == "cut" else value.replace(b"AAAA", b"\xff\xfeAA"))
    fast = direct(open_warehouse, batch)
    assert len(fast.dead_letters) == 1  # nothing went in directly: every row projected here
    assert "events" in fast.rows or "events" in fast.tables


def test_a_query_after_a_refused_arrow_query_reads_its_own_answer(open_warehouse, tmp_path):
    """chDB refuses an Avro block mid-stream; the session's next query must not read that stream's rest."""
    # Fixed record ids of a random id's length: with random ones the records after the cut, read out of
    # step, decoded as some record by chance in 3 of 300 draws and chDB refused nothing (the product reads
    # each record's marker after it, so there a misread block is caught; here the refusal is the premise).
    values = [e.value for e in entries([perception(i, record_id=f"ev_{i:032x}") for i in range(N)])]
    values[51] = values[51][:-6]
    path = tmp_path / "cut.avro"
    path.write_bytes(columnar.container(values))
    warehouse = open_warehouse(migrate=False)  # no table is read: a session is all it needs
    with pytest.raises(Exception, match="(?i)avro"):
        warehouse.query_arrow(f"SELECT * FROM file('{path}', 'Avro')")
    assert warehouse.query("SELECT 41 + 1 AS x") == [(42,)]
