"""The wiring: which projector feeds which table from which record types. A plain list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hindbrain.projections import (
    beliefs,
    dead_letters,
    decisions,
    events,
    feedback,
    fragments,
    injections,
    outcomes,
    recalls,
    unit_states,
)
from hindbrain.projections.table import Table

Projector = Callable[[str, dict, object], list[dict]]


@dataclass(frozen=True)
class View:
    table: Table
    record_types: tuple[str, ...]
    project: Projector


VIEWS = tuple(
    View(m.TABLE, m.RECORD_TYPES, m.project)
    for m in (events, fragments, feedback, beliefs, decisions, dead_letters, recalls, injections, outcomes,
              unit_states)
)
TABLES: dict[str, Table] = {v.table.name: v.table for v in VIEWS}
VIEWS_BY_RECORD_TYPE: dict[str, tuple[View, ...]] = {}
for _view in VIEWS:
    for _rt in _view.record_types:
        VIEWS_BY_RECORD_TYPE[_rt] = VIEWS_BY_RECORD_TYPE.get(_rt, ()) + (_view,)


def project_record(record_type: str, record: dict, position) -> dict[str, list[dict]]:
    """Rows per table name for one record. Pure: raises on a record it cannot project."""
    out: dict[str, list[dict]] = {}
    for view in VIEWS_BY_RECORD_TYPE.get(record_type, ()):
        rows = view.project(record_type, record, position)
        if rows:
            out[view.table.name] = rows
    if record_type not in VIEWS_BY_RECORD_TYPE:
        raise ValueError(f"no view projects record type {record_type!r}")
    return out
