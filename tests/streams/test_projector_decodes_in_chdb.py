"""The embedded projector's round sends its perceptions to chDB as the values the caller encoded, decoded
there by one ``INSERT … SELECT`` (``EmbeddedRunner._insert_perceptions``, docs/speed.md round seventeen):
no Arrow column of them is built in Python on the projector thread, where it held the interpreter lock
the caller's fold needs. The views stay what the log replayed record by record makes, offsets included,
whether the round's records came one call at a time, mixed with other record types, or in a log group."""

from __future__ import annotations

import pytest

from hindbrain import Brain
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.settings import Settings
from hindbrain.streams import columnar, processing
from hindbrain.streams.replay import replay
from hindbrain.streams.sqlite_log import SqliteLog

MANY = 2 * columnar.MIN_BATCH  # a round's perceptions worth one chDB statement


def events(start: int, n: int) -> list[dict]:
    return [{"tenant": "acme", "agent": f"a{i % 3}", "text": f"the export of report {i} hangs at 99%",
             "entities": [f"report-{i}"], "scope": {"team": "bi"}, "success": i % 2 == 0}
            for i in range(start, start + n)]


def columns_built(monkeypatch) -> list[int]:
    """The sizes of every Python column projection of perceptions from now on (a round runs on the
    projector thread, or on a reader's, whose flush projects what is pending)."""
    sizes: list[int] = []
    project = processing.events.project_columns

    def spy(records, positions):
        sizes.append(len(records))
        return project(records, positions)

    monkeypatch.setattr(processing.events, "project_columns", spy)
    return sizes


def assert_views_equal_the_log_per_record(home, monkeypatch) -> None:
    """The closed brain's views, digest for digest, equal the log replayed by the per-record Python path
    (the columnar decode off), and every event row sits at its record's log position."""
    settings = Settings(home=home)
    log = SqliteLog(settings.log_path())
    live = Warehouse(settings.warehouse_url())
    try:
        digest = live.digest()
        rows = live.query("SELECT event_id, _topic, _partition, _offset FROM events FINAL")
        positions = {r[0]: tuple(r[1:]) for r in rows}
        logged = {}
        for entry in log.read_all(0, 1_000_000):
            record_type, record = registry.decode(entry.value)
            if record_type == "perception":
                logged[record["envelope"]["record_id"]] = (entry.topic, entry.partition, entry.offset)
    finally:
        live.close()
    with monkeypatch.context() as m:
        m.setenv(columnar.SWITCH, "0")
        target = Warehouse(settings.warehouse_url(), database="per_record")
        try:
            target.reset()
            rebuilt = replay(log, target).digest
        finally:
            target.close()
            log.close()
    assert positions == logged
    assert {view: digest.get(view) for view in rebuilt} == rebuilt


def test_a_rounds_perceptions_are_decoded_by_chdb_and_the_views_equal_the_log(tmp_path, monkeypatch):
    built = columns_built(monkeypatch)
    with Brain.open(tmp_path, embedder="none", batch_size=MANY) as brain:
        assert brain.runner.decode_in_chdb
        ids = []
        for n in range(4):  # perceptions with a cognition and an outcome between them, rounds of ~MANY
            ids += brain.perceive_many(events(n * MANY, MANY))
            brain.learn(tenant="acme", condition=f"export hangs in report {n}", action="use the batch export")
            ids.append(brain.perceive(tenant="acme", text=f"single {n}"))
        assert {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)
        assert not [size for size in built if size >= columnar.MIN_BATCH]  # none projected in Python
    assert_views_equal_the_log_per_record(tmp_path, monkeypatch)


def test_a_round_chdb_refuses_is_projected_in_python_with_the_same_rows(tmp_path, monkeypatch):
    built = columns_built(monkeypatch)
    refused: list[int] = []

    def refuse(values, partitions, offsets, warehouse):
        refused.append(len(values))
        return False  # as when chDB cannot read a value or a row fails a check: nothing written

    monkeypatch.setattr(columnar, "insert_values", refuse)
    with Brain.open(tmp_path, embedder="none", batch_size=MANY) as brain:
        ids = brain.perceive_many(events(0, MANY)) + brain.perceive_many(events(MANY, MANY))
        assert {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)
    assert refused and sum(built) >= sum(refused)  # what chDB refused, Python projected
    assert_views_equal_the_log_per_record(tmp_path, monkeypatch)


def test_a_log_groups_records_keep_their_encoded_values_in_step(tmp_path, monkeypatch):
    # a group's records are handed over when it commits: their messages with them, one for one, so each
    # value lands at its own record's offset (a record of another type first shifts every later one)
    built = columns_built(monkeypatch)
    with Brain.open(tmp_path, embedder="none", batch_size=MANY) as brain:
        with brain.runner.log.group():
            brain.learn(tenant="acme", condition="export hangs", action="use the batch export")
            ids = brain.perceive_many(events(0, MANY))
            ids += brain.perceive_many(events(MANY, 10))
        ids += brain.perceive_many(events(MANY + 10, MANY))
        assert {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)
        assert not [size for size in built if size >= columnar.MIN_BATCH]
    assert_views_equal_the_log_per_record(tmp_path, monkeypatch)


def test_each_record_carries_the_value_the_log_holds_at_its_offset(tmp_path):
    # the runner keeps one list of records, each with its encoded value (``Decoded.value``), where it kept
    # the messages in a list beside them; a listener sees the same records, the log's bytes at their offsets
    seen: list = []
    with Brain.open(tmp_path, embedder="none", batch_size=MANY) as brain:
        brain.runner.listeners.append(seen.extend)
        brain.learn(tenant="acme", condition="export hangs", action="use the batch export")
        brain.perceive_many(events(0, MANY))
        logged = {e.offset: e.value for e in brain.runner.log.read_all(0, 1_000_000)}
    assert len(seen) > MANY and all(d.value == logged[d.position.offset] for d in seen)
    assert {d.topic for d in seen} == {d.position.topic for d in seen} >= {"perceptions", "cognitions"}


@pytest.mark.parametrize("values", [
    [7], [0] * 5, list(range(40, 45)), [3, 4, 5, 9, 10, 2, 3, 100],  # a constant, one run, runs (one going back)
    [1, 5] * 40, list(range(2**40, 2**40 + 6)),  # past MAX_RUNS: the array; offsets past 32 bits
])
def test_a_rows_value_is_the_one_at_its_row(tmp_path, values):
    warehouse = Warehouse(f"chdb://{tmp_path}")
    try:
        expression = columnar.row_values_sql(values)
        rows = warehouse.query(f"SELECT toUInt64({expression}) FROM "
                               f"(SELECT number AS _hb_row FROM numbers({len(values)})) ORDER BY _hb_row")
    finally:
        warehouse.close()
    assert [r[0] for r in rows] == values
    assert ("_hb_row + 1)" in expression) == (values == [1, 5] * 40)  # every value listed only past MAX_RUNS
