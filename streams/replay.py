"""Audit replay: rebuild every view from the log alone, into a fresh warehouse.

Replay never writes the log. A record that cannot be decoded or projected is dead-lettered
into the ``dead_letters`` view directly, with the same row the live runner derived.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hindbrain.projections.views import VIEWS
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.records import now_us
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.processing import Decoded, project_batch
from hindbrain.streams.sqlite_log import SqliteLog

TABLES = {v.table.name: v.table for v in VIEWS}


@dataclass(frozen=True)
class ReplayReport:
    records: int
    dead_letters: int
    seconds: float
    digest: dict[str, tuple[int, int]]

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else float("inf")


def replay(log: SqliteLog, warehouse: Warehouse, chunk: int = 20_000) -> ReplayReport:
    warehouse.migrate()
    started = time.perf_counter()
    offset, records, dead = 0, 0, 0
    while entries := log.read_all(offset, chunk):
        with gc_paused():
            batch = project_batch(entries, now_us())
            records += batch.count
            dead += len(batch.dead_letters)
            for dl in batch.dead_letters:  # derived again, never appended: replay is read-only
                pos = entries[0].position._replace(topic=dl["topic"], offset=dl["position"])
                project_batch([Decoded(pos, "dead_letter", dl)], 0, batch)
            for name, rows in batch.rows.items():
                warehouse.insert(TABLES[name], rows)
        offset = entries[-1].offset + 1
    seconds = time.perf_counter() - started
    return ReplayReport(records, dead, seconds, warehouse.digest())
