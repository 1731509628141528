"""A new brain's views copied from a migrated template instead of migrated again (docs/speed.md, "make test's
margin, round thirty-two").

Hundreds of tests open a brain in a new folder, and each such open migrated an empty chDB folder: ~16 DDL
statements, ~85 ms of CPU and seconds of wall on a busy machine (chDB's DDL waits on its own threads). The suite
migrates one folder per test process (``make_template``) and every ``Brain.open`` of an embedded brain whose views
folder does not exist yet starts from a copy of it (``opening_copied_views``): the same tables, the same migration
record, the files a migration writes. Tests of migration itself open a ``Warehouse`` and migrate it: untouched.

What a copy shares with its template is the tables' UUIDs. chDB keeps them apart: one folder per process at a time,
and an engine's caches (marks, the query condition cache keyed by table UUID and part) end with it
(tests/projections/test_copied_views.py opens two copies one after the other and reads each one's own rows).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from hindbrain.projections.warehouse import Warehouse


def make_template(folder: Path) -> Path:
    """``folder`` made a migrated, empty, closed chDB folder: a new brain's views as ``Brain.open`` leaves them."""
    warehouse = Warehouse(f"chdb://{folder}")
    try:
        warehouse.migrate()
    finally:
        warehouse.close()
    return folder


def copy_views(template: Path, views: Path) -> bool:
    """Copies ``template`` to ``views`` when ``views`` does not exist; returns whether it did. The copy is made
    beside ``views`` and renamed, so a copy cut short (a full disk) leaves no half folder for chDB to open: the
    brain then migrates as it would have. The folder's links (``data/`` and ``metadata/`` to ``store/``) are
    relative and copied as links: followed, they would be copied as folders and chDB refuses to attach them."""
    if views.exists():
        return False
    partial = views.with_name(f".{views.name}-{uuid.uuid4().hex[:8]}")
    try:
        views.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(template, partial, symlinks=True)
        partial.rename(views)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        return False
    return True


def opening_copied_views(template: Path, open_views: Callable) -> Callable:
    """``hindbrain.brain.open_views`` that first copies ``template`` into an embedded brain's own views folder
    (``Settings.clickhouse`` unset) when it is new; a warehouse elsewhere (a server, ``chdb:///other``) is opened
    as before."""

    def open_copied(cfg, log):
        if cfg.clickhouse is None:
            copy_views(template, cfg.home / "views")
        return open_views(cfg, log)

    return open_copied
