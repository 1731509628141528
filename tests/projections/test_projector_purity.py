"""Projectors are pure: same input → same output, the input is never mutated, no IO, no clock."""

from __future__ import annotations

import builtins
import copy
import os
import socket
import sqlite3
import time

import pytest

from hindbrain.projections.views import VIEWS, VIEWS_BY_RECORD_TYPE, project_record
from hindbrain.schemas.codec import registry
from hindbrain.streams.log import LogEntry
from hindbrain.streams.processing import project_batch


@pytest.fixture
def no_io(monkeypatch):
    """Any file, socket, database, clock or randomness access fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a projector did IO, read the clock or drew randomness")

    for target, name in ((builtins, "open"), (socket.socket, "connect"), (sqlite3, "connect"),
                         (time, "time"), (time, "time_ns"), (os, "urandom")):
        monkeypatch.setattr(target, name, refuse)


def test_sample_records_are_valid_and_feed_every_view(positioned_records):
    fed = set()
    for rt, record, pos in positioned_records:
        assert registry.decode(registry.encode(rt, record)) == (rt, record)
        fed.update(project_record(rt, record, pos))
    assert fed == {v.table.name for v in VIEWS}


def test_projectors_are_deterministic_and_do_not_mutate(positioned_records, no_io):
    for rt, record, pos in positioned_records:
        for view in VIEWS_BY_RECORD_TYPE[rt]:
            before = copy.deepcopy(record)
            first = view.project(rt, record, pos)
            second = view.project(rt, record, pos)
            assert record == before, f"{view.table.name} mutated its {rt} input"
            assert first == second == view.project(rt, copy.deepcopy(record), pos)
            for row in first:
                assert set(row) == set(view.table.column_names), view.table.name
                assert (row["_topic"], row["_partition"], row["_offset"]) == tuple(pos)


def test_rows_fit_the_declared_arrow_schema(positioned_records):
    for rt, record, pos in positioned_records:
        for table_name, rows in project_record(rt, record, pos).items():
            table = next(v.table for v in VIEWS if v.table.name == table_name)
            assert table.to_arrow(rows).num_rows == len(rows)


def test_decoded_log_bytes_project_like_the_in_memory_record(positioned_records, no_io):
    """The live runner projects the caller's dict, catch-up and replay the decoded bytes."""
    entries = [LogEntry(pos.topic, 0, pos.offset, None, registry.encode(rt, rec))
               for rt, rec, pos in positioned_records]
    from_log = project_batch(entries, ts_us=0)
    assert from_log.dead_letters == []
    assert from_log.count == len(positioned_records)
    expected: dict[str, list[dict]] = {}
    for rt, rec, pos in positioned_records:
        for table, rows in project_record(rt, rec, pos).items():
            expected.setdefault(table, []).extend(rows)
    assert from_log.rows == expected
    assert project_batch(entries, ts_us=0).rows == from_log.rows


def test_a_record_type_no_view_projects_is_refused(no_io):
    with pytest.raises(ValueError, match="no view projects"):
        project_record("telepathy", {"envelope": {}}, None)
