"""The views read back for a load of the cue index (``RecallIndex.load``): runs of rows, in log order
across the tables when they share one offset space."""

from __future__ import annotations

import heapq


def view_runs(warehouse, tables: tuple, one_log: bool, chunk: int):
    """``(table, column names, rows)`` runs of at most ``chunk`` rows of one table each: in log
    order across the tables (``one_log``; a run ends where another table's row comes next, so
    what a unit rests on is indexed before it), or table after table."""
    read = {}
    for n, table in enumerate(tables):
        names, rows = warehouse.query_columns(f"SELECT * FROM `{table.name}` FINAL ORDER BY _offset")
        if rows:  # an empty result names no columns
            read[n] = (table, names, rows)
    if not one_log:
        for table, names, rows in read.values():
            for start in range(0, len(rows), chunk):
                yield table, names, rows[start : start + chunk]
        return
    run, current = [], None
    offsets = (_by_offset(n, names.index("_offset"), rows) for n, (_, names, rows) in read.items())
    for _, n, values in heapq.merge(*offsets):
        if run and (n != current or len(run) == chunk):
            yield *read[current][:2], run
            run = []
        run.append(values)
        current = n
    if run:
        yield *read[current][:2], run


def _by_offset(n: int, at: int, rows: list):
    """``(log offset, table number, row)`` of each row (its own generator: bound ``n`` and ``at``)."""
    return ((values[at], n, values) for values in rows)
