"""Fault injection: the brain's disk fills up, or its folder is read-only (design.md §issue-19).

The fault is real: the brain's home is a small tmpfs (root only; otherwise the tests skip
saying so), filled to the last byte by a file, or remounted read-only. Every write call says
whether it was acknowledged (returned) or refused (raised); the refusal must be a
``LogWriteError`` (an ``OSError`` with ``errno`` ENOSPC or EROFS naming the log), and:
acknowledged ⊆ log, refused ∩ log = ∅, the log file intact (SQLite's integrity check, every
record decodes), and once the space is back the brain goes on and its views equal the log.
"""

from __future__ import annotations

import errno
import sqlite3

import pytest
from fault_helpers import assert_acknowledged_logged, assert_views_equal_the_log, fill, remount, tmpfs

from hindbrain import Brain, LogWriteError

DISK = "24m"  # a fresh brain (chDB views, log) takes well under 1 MB


class Writer:
    """Writes of every kind with ids of its own choosing, so a refused write's ids are known:
    single perceptions, batches, and proposed units (the learner appends a decision for each)."""

    def __init__(self, brain: Brain):
        self.brain, self.n = brain, 0
        self.acknowledged: set[str] = set()
        self.refused: set[str] = set()
        self.errors: list[LogWriteError] = []
        self.units: set[str] = set()  # acknowledged cognitions, each to be judged by the learner

    def write(self) -> None:
        self.n += 1
        n, brain = self.n, self.brain
        if n % 3 == 0:
            ids = [f"ev-{n}-{i}" for i in range(5)]
            call = lambda: brain.perceive_many(  # noqa: E731
                [{"tenant": "acme", "kind": "observation", "text": f"batch {n} item {i} " + "x" * 300,
                  "event_id": e} for i, e in enumerate(ids)])
        elif n % 3 == 1:
            ids = [f"ev-{n}"]
            call = lambda: brain.perceive(tenant="acme", kind="anomaly", text=f"submit {n} did nothing " + "y" * 300,  # noqa: E731
                                          system="IAM", event_id=ids[0])
        else:
            ids = [f"fr-{n}"]
            call = lambda: brain.learn(tenant="acme", condition=f"submit does nothing in system {n}",  # noqa: E731
                                       action="switch to the admin account", fragment_id=ids[0])
        try:
            call()
        except LogWriteError as exc:
            self.errors.append(exc)
            self.refused.update(ids)
            return
        self.acknowledged.update(ids)
        self.units.update(i for i in ids if i.startswith("fr-"))

    def until_refused(self, times: int, at_most: int = 300) -> None:
        for _ in range(at_most):
            if len(self.errors) >= times:
                return
            self.write()
        raise AssertionError(f"{at_most} writes on a full disk and only {len(self.errors)} refused")


def crash(brain: Brain) -> None:
    """Release the brain's files as a dying process would: no flush, no commit, no snapshot. Closing
    the log tries to write the offsets the projector left for the next append (``commit_later``);
    the full disk refuses them, as it would have refused a dying process."""
    brain.warehouse.close()
    try:
        brain.log.close()
    except LogWriteError as exc:
        assert exc.errno == errno.ENOSPC, repr(exc)


def assert_disk_full_error(exc: LogWriteError, home) -> None:
    assert isinstance(exc, OSError) and exc.errno == errno.ENOSPC, repr(exc)
    assert exc.filename == str(home / "log.sqlite")
    assert "No space left on device" in str(exc), str(exc)


def assert_each_unit_judged(brain: Brain, units: set[str]) -> None:
    """The learner's decision on each acknowledged unit is in the log (none held back for good)."""
    rows = brain.sql("SELECT arrayJoin(subject_ids) AS unit FROM decisions FINAL WHERE kind = 'unit_accepted'")
    judged = {r["unit"] for r in rows}
    assert units <= judged, f"no decision for {sorted(units - judged)[:3]}"


def test_a_full_disk_refuses_writes_whole_and_the_brain_goes_on_once_space_is_back(tmp_path):
    with tmpfs(tmp_path / "disk", DISK) as disk:
        home = disk / "brain"
        brain = Brain.open(home, embedder="none", batch_size=8)  # micro-batches due while the disk is full
        try:
            writer = Writer(brain)
            for _ in range(12):
                writer.write()
            assert not writer.errors
            filler = fill(disk)
            writer.until_refused(times=4)
            for exc in writer.errors:
                assert_disk_full_error(exc, home)
            assert_acknowledged_logged(home, writer.acknowledged, writer.refused)

            filler.unlink()
            for _ in range(6):
                writer.write()
            assert len(writer.errors) == 4  # the same brain writes again
            events = {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")}
            acknowledged_events = {i for i in writer.acknowledged if i.startswith("ev-")}
            assert events == acknowledged_events  # read-your-writes: what the full disk held back is projected
            assert_each_unit_judged(brain, writer.units)
        finally:
            brain.close()
        ids = assert_acknowledged_logged(home, writer.acknowledged, writer.refused)
        assert all(ids[i] == 1 for i in writer.acknowledged)  # acknowledged once, written once
        assert_views_equal_the_log(home)


def test_a_brain_that_dies_on_a_full_disk_recovers_everything_it_acknowledged(tmp_path):
    with tmpfs(tmp_path / "disk", DISK) as disk:
        home = disk / "brain"
        brain = Brain.open(home, embedder="none", batch_size=8)
        try:
            writer = Writer(brain)
            for _ in range(12):
                writer.write()
            filler = fill(disk)
            writer.until_refused(times=4)
        finally:
            crash(brain)  # on the full disk: nothing more is projected, committed or snapshotted
        assert_acknowledged_logged(home, writer.acknowledged, writer.refused)

        filler.unlink()
        with Brain.open(home, embedder="none") as brain:
            events = {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")}
            assert events == {i for i in writer.acknowledged if i.startswith("ev-")}
            assert_each_unit_judged(brain, writer.units)  # the learner re-derived what the disk refused it
        ids = assert_acknowledged_logged(home, writer.acknowledged, writer.refused)
        assert all(ids[i] == 1 for i in writer.acknowledged)
        assert_views_equal_the_log(home)


def test_offsets_a_full_disk_refuses_at_close_are_a_named_error_and_only_a_resume_point(tmp_path):
    with tmpfs(tmp_path / "disk", DISK) as disk:
        home = disk / "brain"
        brain = Brain.open(home, embedder="none", batch_size=8)
        writer = Writer(brain)
        for _ in range(12):
            writer.write()
        brain.log.commit("probe", "events", 0, 3)
        filler = fill(disk)
        writer.until_refused(times=2)  # the log's file can grow no more
        for partition in range(4_000):  # more pages than a refused append's frames left allocated in the WAL
            brain.log.commit_later("probe", "events", partition, 7)
        brain.warehouse.close()
        with pytest.raises(LogWriteError) as refused:
            brain.log.close()
        assert_disk_full_error(refused.value, home)
        with pytest.raises(sqlite3.ProgrammingError):  # closed all the same
            brain.log.committed("nobody", "events", 0)
        filler.unlink()
        with Brain.open(home, embedder="none") as brain:
            assert brain.log.committed("probe", "events", 0) == 3  # the last offset written
            events = {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")}
            assert events == {i for i in writer.acknowledged if i.startswith("ev-")}


def test_a_read_only_home_is_refused_at_open_naming_the_log_and_loses_nothing(tmp_path):
    with tmpfs(tmp_path / "disk", DISK) as disk:
        home = disk / "brain"
        with Brain.open(home, embedder="none") as brain:
            acknowledged = set(brain.perceive_many([{"tenant": "acme", "text": f"seen {i}"} for i in range(20)]))
        remount(disk, "ro")
        try:
            try:
                Brain.open(home, embedder="none")
            except LogWriteError as exc:
                assert exc.errno == errno.EROFS and exc.filename == str(home / "log.sqlite"), repr(exc)
                assert "Read-only file system" in str(exc), str(exc)
            else:
                raise AssertionError("a brain opened on a read-only file system")
        finally:
            remount(disk, "rw")
        assert_acknowledged_logged(home, acknowledged)  # (SQLite reads a WAL log only where it may write)
        with Brain.open(home, embedder="none") as brain:
            assert {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")} == acknowledged
        assert_views_equal_the_log(home)
