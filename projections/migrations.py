"""Numbered migrations of the warehouse, one change each, applied in order and recorded.

A migration's statements are generated from the declared tables, so the DDL that tests
run is the DDL production runs. ``down`` undoes ``up`` (tested both ways).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hindbrain.projections import feedback, lineage
from hindbrain.projections.views import VIEWS

MIGRATIONS_TABLE = "schema_migrations"


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    up: Callable[[str], list[str]]
    down: Callable[[str], list[str]]


def _create_views(db: str) -> list[str]:
    return [v.table.create_sql(db) for v in VIEWS] + [feedback.view_sql(db), lineage.view_sql(db)]


def _drop_views(db: str) -> list[str]:
    views = [lineage.drop_sql(db), f"DROP VIEW IF EXISTS `{db}`.`feedback`"]
    return views + [v.table.drop_sql(db) for v in reversed(VIEWS)]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "create the foundation views", _create_views, _drop_views),
)
