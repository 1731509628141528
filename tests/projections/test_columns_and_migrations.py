"""Declared columns are the live columns; migrations go up, down and up again, once each."""

from __future__ import annotations

import pytest

from hindbrain.projections import lineage
from hindbrain.projections.feedback import SIGNALS
from hindbrain.projections.migrations import MIGRATIONS, MIGRATIONS_TABLE
from hindbrain.projections.views import VIEWS

VIEW_NAMES = sorted([v.table.name for v in VIEWS] + ["feedback", "lineage"])


def tables_in(warehouse) -> list[str]:
    rows = warehouse.query("SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name",
                           {"db": warehouse.database})
    return [r[0] for r in rows]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.table.name)
def test_declared_columns_are_the_live_columns(read_only_warehouse, view):
    assert read_only_warehouse.live_columns(view.table.name) == list(view.table.all_columns)


def test_the_feedback_view_has_one_counter_per_signal(read_only_warehouse):
    names = [n for n, _ in read_only_warehouse.live_columns("feedback")]
    assert names == ["tenant", "item_id", *SIGNALS, "last_verified"]


def test_the_lineage_view_has_its_declared_columns(read_only_warehouse):
    assert read_only_warehouse.live_columns("lineage") == list(lineage.COLUMNS)


def test_migrate_up_applies_and_records_every_migration(open_warehouse, backend):
    wh = open_warehouse(backend, migrate=False)
    assert wh.migrate() == [m.number for m in MIGRATIONS] == [1, 2, 3, 4, 5, 6]
    assert wh.applied_migrations() == [1, 2, 3, 4, 5, 6]
    assert tables_in(wh) == sorted(VIEW_NAMES + [MIGRATIONS_TABLE])


def test_migrating_twice_is_a_no_op(open_warehouse, backend):
    wh = open_warehouse(backend)
    digest = wh.digest()
    assert wh.migrate() == []
    assert wh.applied_migrations() == [1, 2, 3, 4, 5, 6]
    assert wh.digest() == digest
    assert wh.query(f"SELECT count() FROM `{MIGRATIONS_TABLE}`") == [(len(MIGRATIONS),)]


def test_migrate_down_to_zero_drops_everything_and_up_restores_it(open_warehouse, backend):
    wh = open_warehouse(backend)
    assert wh.migrate(target=0) == [-6, -5, -4, -3, -2, -1]
    assert wh.applied_migrations() == []
    assert tables_in(wh) == [MIGRATIONS_TABLE]
    assert wh.migrate(target=0) == []

    assert wh.migrate() == [1, 2, 3, 4, 5, 6]
    assert wh.applied_migrations() == [1, 2, 3, 4, 5, 6]
    assert tables_in(wh) == sorted(VIEW_NAMES + [MIGRATIONS_TABLE])
    for view in VIEWS:
        assert wh.live_columns(view.table.name) == list(view.table.all_columns)


def test_a_warehouse_from_before_perception_v3_gains_the_origin_column_in_place(open_warehouse, backend):
    """Migration 3 on a warehouse whose events table predates ``origin`` (its down step leaves
    exactly that table): the column comes back where a fresh warehouse has it."""
    wh = open_warehouse(backend)
    assert wh.migrate(target=2) == [-6, -5, -4, -3]
    assert "origin" not in [n for n, _ in wh.live_columns("events")]
    assert wh.migrate() == [3, 4, 5, 6]
    [events] = [v for v in VIEWS if v.table.name == "events"]
    assert wh.live_columns("events") == list(events.table.all_columns)


def test_a_warehouse_from_before_issue_29_gains_the_verdict_counters(open_warehouse, backend):
    """Migration 4 replaces the feedback view of a warehouse made before it with one that counts the
    learner's verdicts; its down step gives back the view as it was."""
    wh = open_warehouse(backend)
    assert wh.migrate(target=3) == [-6, -5, -4]
    assert "credited" not in [n for n, _ in wh.live_columns("feedback")]
    assert wh.migrate() == [4, 5, 6]
    assert [n for n, _ in wh.live_columns("feedback")][-3:-1] == ["credited", "debited"]


def test_a_warehouse_from_before_round_thirty_two_gains_the_outcomes_sender_in_place(open_warehouse, backend):
    """Migration 6: an ``outcomes`` table made before it has no ``producer`` (its down step leaves exactly that
    table); the column comes back where a fresh warehouse has it, and old rows read as keyless ('')."""
    wh = open_warehouse(backend)
    assert wh.migrate(target=5) == [-6]
    assert "producer" not in [n for n, _ in wh.live_columns("outcomes")]
    wh.command(f"INSERT INTO `{wh.database}`.`outcomes` (tenant, outcome_id, ts, success, _topic, _partition, "
               "_offset) VALUES ('t', 'o1', now(), true, 'outcomes', 0, 0)")
    assert wh.migrate() == [6]
    [outcomes] = [v for v in VIEWS if v.table.name == "outcomes"]
    assert wh.live_columns("outcomes") == list(outcomes.table.all_columns)
    assert wh.query(f"SELECT producer FROM `{wh.database}`.`outcomes`") == [("",)]


def _part_type_of_a_12_mb_insert(wh) -> str:
    wh.command(f"INSERT INTO `{wh.database}`.`events` (tenant, event_id, ts, kind, text, producer, _topic, "
               "_partition, _offset) SELECT 't', toString(number), now(), 'message', repeat('x', 1000000), 'p', "
               "'perceptions', 0, number FROM numbers(12)")
    [(kind,)] = wh.query("SELECT groupUniqArray(part_type)[1] FROM system.parts WHERE database = {db:String} "
                         "AND table = 'events' AND active", {"db": wh.database})
    wh.command(f"TRUNCATE TABLE `{wh.database}`.`events`")
    return kind


def test_events_parts_up_to_128_mib_are_written_compact_and_migration_5_sets_it_in_place(open_warehouse):
    """An insert past ClickHouse's default 10 MiB was a wide part (a file or more per column);
    ``events`` now writes it as one compact part, in a fresh warehouse and in one migrated from
    before (whose down step gives the default back)."""
    wh = open_warehouse()
    assert _part_type_of_a_12_mb_insert(wh) == "Compact"
    assert wh.migrate(target=4) == [-6, -5]
    assert _part_type_of_a_12_mb_insert(wh) == "Wide"
    assert wh.migrate() == [5, 6]
    assert _part_type_of_a_12_mb_insert(wh) == "Compact"


def test_the_tables_that_may_hold_rows_are_those_holding_some_and_then_every_view(open_warehouse, backend):
    """``may_hold_rows``, what a recall index's load reads (it skips the rest): none in a migrated warehouse
    (its migration record is no view's source); a row in one table names it and the views, which read every
    table, not the other tables; none again once that table is emptied."""
    wh = open_warehouse(backend)
    assert wh.may_hold_rows() == set()
    wh.command(f"INSERT INTO `{wh.database}`.`events` (tenant, event_id, ts, kind, text, producer, _topic, "
               "_partition, _offset) VALUES ('t', 'e1', now(), 'message', 'hello', 'p', 'perceptions', 0, 0)")
    assert wh.may_hold_rows() == {"events", "feedback", "lineage"}
    wh.command(f"TRUNCATE TABLE `{wh.database}`.`events`")
    assert wh.may_hold_rows() == set()
