"""A warehouse's chDB sessions start from one reading of the engine (``DescribedSession``), each with its
own settings."""

from __future__ import annotations

import pytest

from hindbrain.projections.warehouse import DescribedSession, engine_folder

needs_described = pytest.mark.skipif(
    DescribedSession is None, reason="this clickhouse-connect's private start moved: sessions read the engine each")


@needs_described
def test_a_warehouse_reads_its_engine_s_settings_once_for_all_its_sessions(open_warehouse, monkeypatch):
    """clickhouse-connect's start reads ``system.settings`` (~1,300 rows); a warehouse's five sessions (the
    first, the writer, the reader, the tenants', one more writer) read it once, and each keeps its own."""
    asked: list[str] = []
    start = DescribedSession._execute_operation

    def counted(self, operation):
        asked.append(operation.text)
        return start(self, operation)

    monkeypatch.setattr(DescribedSession, "_execute_operation", counted)
    wh = open_warehouse(migrate=False)
    session = wh.session()
    try:
        assert sum("system.settings" in text for text in asked) == 1
        session.command(f"CREATE TABLE `{wh.database}`.`s` (n UInt8) ENGINE = Memory")  # a writer still
    finally:
        session.close()
    readonly = "SELECT getSetting('readonly')"
    own = wh.query(readonly), wh.query(readonly, readonly=True), wh.tenant_check(readonly)
    assert own == ([(0,)], [(1,)], [(1,)])


def test_only_a_folder_s_url_names_an_engine_folder():
    assert engine_folder("chdb:///srv/brain/views") == "/srv/brain/views"
    assert [engine_folder(url) for url in ("chdb://memory", "http://ch:8123", "chdb:///x?a=1")] == [None] * 3
