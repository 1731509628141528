"""The IO end of every projecting pipeline: a projected batch into the warehouse."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from hindbrain.projections.views import TABLES
from hindbrain.projections.warehouse import Warehouse
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.processing import ProjectedBatch


def insert_batch(warehouse: Warehouse, batch: ProjectedBatch, pause: Callable[[], object] | None = None) -> None:
    """One Arrow insert per table (chDB costs ~1 ms per statement); returns when all did and every part
    written since the last batch matches its checksums (``Warehouse.check_written``: the warehouse
    acknowledges a part its full disk did not keep, so an offset committed after the inserts returned
    passed rows a reopened warehouse drops). ``pause``: called before each insert (a background
    projection gives way there). Raises ``PartsNotWritten`` (the parts detached): insert again."""
    with gc_paused():
        for name, rows in batch.rows.items():
            pause and pause()
            warehouse.insert(TABLES[name], rows)
        for name, tables in batch.tables.items():
            for table in tables:
                pause and pause()
                warehouse.insert_arrow(TABLES[name], table)
        warehouse.check_written()


def release_arrow_pool() -> None:
    """pyarrow's memory pool gives its free pages back. For a thread that projects and inserts
    apart from the caller: pyarrow's allocator (mimalloc) keeps a heap per thread, and what a
    batch's Arrow columns freed there stays resident — +950 B an event over a 20k import on a
    writer thread (i28-ingestpipe10's measurement, docs/speed.md "Ingest, round ten"); with the
    release, level with the insert on the caller."""
    pa.default_memory_pool().release_unused()
