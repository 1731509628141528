"""Fault injection: the disk of ``hindbrain serve``'s log fills up under concurrent requests
(design.md §issue-19).

The log is on a small tmpfs filled to the last byte (root only; otherwise the test skips
saying so); the views are elsewhere and keep working, which is the harder case: a projection
that ran inside the server's group commit would leave rows in the views of records the log
never committed. Concurrent perceptions are grouped by the server's owner thread; the group's
commit fails. Then: nobody of the group hears 200 (503, naming the full disk); the server stops
serving (fail-stop: its recall index and learner took in records the log does not hold), says
so on ``/healthz`` and ``/readyz``, and stays stopped after the space is back; restarted (the
brain reopened), every acknowledged event is there, no refused one is (in the log, the views
or recall), and the views equal the log.
"""

from __future__ import annotations

import sqlite3
import threading

from fault_helpers import assert_acknowledged_logged, assert_views_equal_the_log, call, fill, serving, tmpfs

from hindbrain import Brain


def burst(base: str, key: str, tag: str, n: int = 16) -> dict[str, tuple[int, dict]]:
    """``n`` perceptions at once (so the owner thread groups them); each id's answer."""
    answers: dict[str, tuple[int, dict]] = {}

    def one(i: int) -> None:
        event_id = f"{tag}-{i}"
        status, body, _ = call(base, "POST", "/v1/perceive", {"text": f"{tag} zebra crossing {i}",
                                                              "event_id": event_id}, key)
        answers[event_id] = (status, body)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return answers


def test_a_full_disk_under_the_server_refuses_the_group_and_stops_it_until_a_restart(tmp_path):
    views = f"chdb://{tmp_path / 'views'}"  # off the full disk: the views keep accepting rows
    with tmpfs(tmp_path / "disk", "24m") as disk:
        home = disk / "brain"
        acknowledged, refused = set(), set()
        with serving(home, clickhouse=views, batch_size=4) as (base, brain, keys):
            key = keys.create("acme", "tests", "admin")
            before = burst(base, key, "before")
            assert {s for s, _ in before.values()} == {200}
            acknowledged |= set(before)
            filler = fill(disk)
            full = burst(base, key, "full")
            for event_id, (status, body) in full.items():
                assert status in (200, 503), body
                (acknowledged if status == 200 else refused).add(event_id)
            assert refused, "no commit failed on a full disk"
            detail = next(body["detail"] for status, body in full.values() if status == 503)
            assert "No space left on device" in detail and "restart" in detail, detail
            for path in ("/healthz", "/readyz"):
                assert call(base, "GET", path)[0] == 503
            filler.unlink()
            after = burst(base, key, "after", n=4)  # fail-stop: space is back, the server stays stopped
            assert {s for s, _ in after.values()} == {503}
            refused |= set(after)

        assert_acknowledged_logged(home, acknowledged, refused)
        with Brain.open(home, clickhouse=views, embedder="none") as brain:  # the restart
            events = {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")}
            assert events == acknowledged
            recalled = {i.id for i in brain.recall(tenant="acme", query="full zebra crossing", k=50,
                                                   layers=["episodic"]).items}
            assert recalled and not recalled & refused
        assert_views_equal_the_log(home, clickhouse=views)


class CommitFailsOnce:
    """The log's SQLite connection, whose next COMMIT fails as a disk that fills at that
    moment would (the injected fault; the transaction stays open, so the group rolls back)."""

    def __init__(self, db):
        self._db, self.failed = db, False

    def execute(self, sql, *args):
        if sql == "COMMIT" and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("database or disk is full (injected at COMMIT)")
        return self._db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_a_group_whose_commit_fails_leaves_no_row_in_the_views(tmp_path):
    """A batch of 8 in one group: its micro-batches (of 4) fall due inside the group, and
    projecting them before the commit would leave rows of records the log rolled back. (On the
    tmpfs above the disk refuses the first insert already, before anything falls due.)"""
    with serving(tmp_path, batch_size=4) as (base, brain, keys):
        key = keys.create("acme", "tests", "admin")
        acknowledged = set(burst(base, key, "before"))
        refused = {f"lost-{i}" for i in range(8)}
        real = brain.log._db
        brain.log._db = fault = CommitFailsOnce(real)
        try:
            status, body, _ = call(base, "POST", "/v1/perceive/batch", {"events": [
                {"text": f"lost zebra crossing {i}", "event_id": f"lost-{i}"} for i in range(8)]}, key)
        finally:
            brain.log._db = real
        assert fault.failed and status == 503, body
    assert_acknowledged_logged(tmp_path, acknowledged, refused)
    with Brain.open(tmp_path, embedder="none") as brain:
        assert {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")} == acknowledged
    assert_views_equal_the_log(tmp_path)
