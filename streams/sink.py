"""The IO end of every projecting pipeline: a projected batch into the warehouse."""

from __future__ import annotations

from hindbrain.projections.views import TABLES
from hindbrain.projections.warehouse import Warehouse
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.processing import ProjectedBatch


def insert_batch(warehouse: Warehouse, batch: ProjectedBatch) -> None:
    """One Arrow insert per table (chDB costs ~1 ms per statement); returns when all did."""
    with gc_paused():
        for name, rows in batch.rows.items():
            warehouse.insert(TABLES[name], rows)
        for name, tables in batch.tables.items():
            for table in tables:
                warehouse.insert_arrow(TABLES[name], table)
