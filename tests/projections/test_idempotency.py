"""At-least-once delivery never double counts: projecting a batch twice changes nothing."""

from __future__ import annotations

from hindbrain.projections.feedback import SIGNALS
from hindbrain.projections.views import TABLES
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded, project_batch

# From the sample batch: rc_1 recalled and injected fr_1 and ev_2; oc_1 applied fr_1 and
# succeeded; oc_2 applied ev_2 (listed twice in one report) and failed.
EXPECTED_FEEDBACK = {
    "fr_1": {"recalled": 1, "injected": 1, "applied": 1, "success": 1, "failure": 0, "contradiction": 0,
             "credited": 0, "debited": 0},
    "ev_2": {"recalled": 1, "injected": 1, "applied": 1, "success": 0, "failure": 1, "contradiction": 0,
             "credited": 0, "debited": 0},
}


def project_into(warehouse, positioned) -> dict[str, list[dict]]:
    rows = project_batch([Decoded(pos, rt, rec) for rt, rec, pos in positioned], ts_us=0).rows
    for name, table_rows in rows.items():
        warehouse.insert(TABLES[name], table_rows)
    return rows


def feedback(warehouse) -> dict[str, dict[str, int]]:
    names, rows = warehouse.query_columns(f"SELECT item_id, {', '.join(SIGNALS)} FROM feedback WHERE tenant = 'acme'")
    return {r[0]: dict(zip(names[1:], r[1:], strict=True)) for r in rows}


def counts(warehouse) -> dict[str, int]:
    return {name: n for name, (n, _) in warehouse.digest().items()}


def test_projecting_the_same_batch_twice_changes_nothing(warehouse, positioned_records):
    rows = project_into(warehouse, positioned_records)
    first = warehouse.digest()
    assert counts(warehouse) == {name: len(rows.get(name, [])) for name in TABLES}
    assert feedback(warehouse) == EXPECTED_FEEDBACK
    assert warehouse.query("SELECT belief_id, text, support FROM beliefs FINAL") == [
        ("bl_1", "IAM changes need an admin account", 3)
    ]

    project_into(warehouse, positioned_records)
    assert warehouse.digest() == first
    assert feedback(warehouse) == EXPECTED_FEEDBACK


def test_a_record_redelivered_at_a_new_offset_is_not_counted_again(warehouse, positioned_records):
    project_into(warehouse, positioned_records)
    before = counts(warehouse)
    redelivered = [(rt, rec, Position(pos.topic, 0, pos.offset + 1000)) for rt, rec, pos in positioned_records
                   if rt in ("recall", "injection", "outcome", "decision")]
    assert len(redelivered) == 6
    project_into(warehouse, redelivered)
    assert feedback(warehouse) == EXPECTED_FEEDBACK
    assert counts(warehouse) == before
    # The redelivered copy wins (versioned by offset) and it is the same row but for the offset.
    assert warehouse.query("SELECT _offset FROM outcomes FINAL WHERE outcome_id = 'oc_1'") == [(1005,)]


def test_arrival_order_does_not_matter(open_warehouse, backend, positioned_records):
    forward, backward = open_warehouse(backend), open_warehouse(backend)
    project_into(forward, positioned_records)
    for one in reversed(positioned_records):
        project_into(backward, [one])
    assert backward.digest() == forward.digest()
    assert feedback(backward) == EXPECTED_FEEDBACK
