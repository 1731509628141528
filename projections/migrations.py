"""Numbered migrations of the warehouse, one change each, applied in order and recorded.

A migration's statements are generated from the declared tables, so the DDL that tests
run is the DDL production runs. ``down`` undoes ``up`` (tested both ways).
"""

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
    lineage,
    outcomes,
    recalls,
    unit_states,
)

MIGRATIONS_TABLE = "schema_migrations"


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    up: Callable[[str], list[str]]
    down: Callable[[str], list[str]]


# Migration 1's tables, named: a view added later comes with a migration of its own.
_FOUNDATION = [m.TABLE for m in (events, fragments, feedback, beliefs, decisions, dead_letters, recalls, injections,
                                 outcomes)]


def _create_views(db: str) -> list[str]:
    return [t.create_sql(db) for t in _FOUNDATION] + [feedback.view_sql(db), lineage.view_sql(db)]


def _drop_views(db: str) -> list[str]:
    views = [lineage.drop_sql(db), f"DROP VIEW IF EXISTS `{db}`.`feedback`"]
    return views + [t.drop_sql(db) for t in reversed(_FOUNDATION)]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "create the foundation views", _create_views, _drop_views),
    Migration(2, "unit lifecycle states from the learner's decisions",
              lambda db: [unit_states.TABLE.create_sql(db)], lambda db: [unit_states.TABLE.drop_sql(db)]),
    # A warehouse made before perception v3 lacks the column; one made since has it from migration 1.
    Migration(3, "who produced an event's text (perception v3: origin)",
              lambda db: [f"ALTER TABLE `{db}`.`events` ADD COLUMN IF NOT EXISTS `origin` Nullable(String) "
                          f"AFTER `emotion`"],
              lambda db: [f"ALTER TABLE `{db}`.`events` DROP COLUMN IF EXISTS `origin`"]),
    Migration(4, "the learner's verdicts in the feedback view (design.md §issue-29: credited, debited)",
              lambda db: [f"DROP VIEW IF EXISTS `{db}`.`feedback`", feedback.view_sql(db)],
              lambda db: [f"DROP VIEW IF EXISTS `{db}`.`feedback`",
                          feedback.view_sql(db, feedback.SIGNALS_BEFORE_VERDICTS)]),
    # A warehouse made before it has the default (10 MiB); one made since has it from migration 1.
    Migration(5, "events: parts up to 128 MiB written compact (one file, not one per column)",
              lambda db: [f"ALTER TABLE `{db}`.`events` MODIFY SETTING {events.TABLE.settings_sql}"],
              lambda db: [f"ALTER TABLE `{db}`.`events` RESET SETTING "
                          + ", ".join(name for name, _ in events.TABLE.settings)]),
    # A warehouse made before it has outcomes without a sender: read as the embedded SDK's (keyless, counted by
    # agent) until a replay fills it from the log; one made since has it from migration 1.
    Migration(6, "who sent an outcome (the API key at the edge: round thirty-two)",
              lambda db: [f"ALTER TABLE `{db}`.`outcomes` ADD COLUMN IF NOT EXISTS `producer` String AFTER `notes`"],
              lambda db: [f"ALTER TABLE `{db}`.`outcomes` DROP COLUMN IF EXISTS `producer`"]),
)
