"""The suite's copied views (tests/migrated_views.py) are a new brain's views: the same tables and migration record
as a migration from empty, each copy its own rows although the copies share their tables' UUIDs, and only a new
embedded brain's views are copied."""

from __future__ import annotations

import re

from migrated_views import copy_views

from hindbrain import Brain
from hindbrain.projections.warehouse import Warehouse


def _schema(warehouse: Warehouse) -> list[tuple]:
    """The database's tables and views as created, their UUIDs left out, and the migrations recorded."""
    tables = warehouse.query("SELECT name, engine, create_table_query FROM system.tables "
                             "WHERE database = {d:String} ORDER BY name", {"d": warehouse.database})
    without_uuids = [(name, engine, re.sub(r"UUID '[0-9a-f-]+' ", "", create)) for name, engine, create in tables]
    return [*without_uuids, *warehouse.query(f"SELECT number, name FROM `{warehouse.database}`.schema_migrations "
                                             "FINAL ORDER BY number")]


def test_a_copy_of_the_template_is_what_a_migration_from_empty_makes(tmp_path, migrated_views):
    copy = tmp_path / "copied"
    assert copy_views(migrated_views, copy)
    copied = Warehouse(f"chdb://{copy}")
    try:
        assert copied.migrate() == []  # nothing left to run
        made = _schema(copied)
    finally:
        copied.close()
    fresh = Warehouse(f"chdb://{tmp_path / 'fresh'}")
    try:
        assert fresh.migrate()
        assert _schema(fresh) == made
    finally:
        fresh.close()


def test_brains_on_copies_keep_their_own_rows_though_their_tables_share_uuids(tmp_path):
    """Two brains opened one after the other in this process, on copies of one template: each reads only what
    it was told, through a filter the first brain's engine cached (the query condition cache is keyed by the
    table's UUID and the part's name, and both brains' first part is all_1_1_0)."""
    texts = {"a": "the IAM submit button did nothing", "b": "the billing export timed out"}
    homes = {name: tmp_path / name for name in texts}
    uuids = {}
    for name, text in texts.items():
        with Brain.open(homes[name], embedder="none") as brain:
            brain.perceive(tenant="acme", text=text)
            brain.runner.flush()
            uuids[name] = brain.warehouse.query("SELECT uuid FROM system.tables WHERE name = 'events'")
            for asked in texts.values():  # the same filter in both engines
                rows = brain.warehouse.query("SELECT text FROM events WHERE text = {t:String}", {"t": asked})
                assert rows == ([(text,)] if asked == text else [])
    assert uuids["a"] == uuids["b"]  # a copy indeed: the case the filters above are about


def test_only_a_new_embedded_brains_views_are_copied(tmp_path, migrated_views):
    home = tmp_path / "brain"
    with Brain.open(home, embedder="none") as brain:
        brain.perceive(tenant="acme", text="kept across a reopen")
    assert not copy_views(migrated_views, home / "views")  # an existing folder is the brain's own
    with Brain.open(home, embedder="none") as brain:
        assert brain.warehouse.query("SELECT count() FROM events") == [(1,)]
    elsewhere = tmp_path / "elsewhere"
    with Brain.open(tmp_path / "server", clickhouse=f"chdb://{elsewhere}", embedder="none"):
        pass
    assert not (tmp_path / "server" / "views").exists()
