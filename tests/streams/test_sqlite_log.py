"""The embedded SQLite log: the shared log contract, plus what only the embedded log promises."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from log_contract import KEY, LogContract

from hindbrain.streams.log import Message, Position
from hindbrain.streams.sqlite_log import SqliteLog


class TestSqliteLogContract(LogContract):
    def make_log(self, path):
        return SqliteLog(path / "log.sqlite")


@pytest.fixture
def log(tmp_path):
    log = SqliteLog(tmp_path / "log.sqlite")
    yield log
    log.close()


def test_the_file_is_in_wal_mode(tmp_path):
    path = tmp_path / "log.sqlite"
    SqliteLog(path).close()
    other = sqlite3.connect(path)  # WAL is a property of the file, visible to any connection
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def test_synchronous_is_full_unless_asked_otherwise(tmp_path):
    # SQLite reports synchronous as a number: NORMAL = 1, FULL = 2, EXTRA = 3.
    full = SqliteLog(tmp_path / "full.sqlite")
    normal = SqliteLog(tmp_path / "normal.sqlite", synchronous="NORMAL")
    try:
        assert full._db.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert normal._db.execute("PRAGMA synchronous").fetchone()[0] == 1
    finally:
        full.close()
        normal.close()
    with pytest.raises(ValueError, match="synchronous"):
        SqliteLog(tmp_path / "bad.sqlite", synchronous="OFF")


def test_creates_missing_parent_folders(tmp_path):
    log = SqliteLog(tmp_path / "a" / "b" / "log.sqlite")
    try:
        assert log.append([Message("t", None, b"x")]) == [Position("t", 0, 0)]
    finally:
        log.close()
    assert (tmp_path / "a" / "b" / "log.sqlite").is_file()


def test_one_partition_and_global_offsets(log):
    positions = log.append([Message("a", KEY, b"a0"), Message("b", KEY, b"b0"), Message("a", KEY, b"a1")])
    assert positions == [Position("a", 0, 0), Position("b", 0, 1), Position("a", 0, 2)]
    assert log.partitions("a") == [0] and log.partitions("never-written") == [0]
    assert [e.offset for e in log.read("a", 0, 0)] == [0, 2]
    assert log.read("a", 1, 0) == []
    assert log.end_offset("a", 0) == log.end_offset("b", 0) == 3


def test_read_all_is_the_global_write_order(log):
    batches = [
        [Message("a", KEY, b"1"), Message("b", KEY, b"2")],
        [Message("c", None, b"3")],
        [Message("a", KEY, b"4"), Message("c", None, b"5"), Message("b", KEY, b"6")],
    ]
    positions = [p for batch in batches for p in log.append(batch)]
    everything = log.read_all(0)
    assert [e.position for e in everything] == positions
    assert [bytes(e.value) for e in everything] == [b"1", b"2", b"3", b"4", b"5", b"6"]
    assert [e.topic for e in everything] == ["a", "b", "c", "a", "c", "b"]
    assert [e.offset for e in log.read_all(2, limit=2)] == [2, 3]
    assert log.read_all(6) == []


def test_get_returns_the_entries_at_positions_in_offset_order(log):
    positions = log.append([Message(t, KEY, f"{t}{i}".encode()) for i in range(3) for t in ("a", "b")])
    wanted = [positions[4], positions[1], positions[4]]  # unordered, with a duplicate
    assert [e.position for e in log.get(wanted)] == [positions[1], positions[4]]
    assert bytes(log.get([positions[5]])[0].value) == b"b2"


def test_get_leaves_out_positions_that_do_not_exist(log):
    positions = log.append([Message("a", KEY, b"a0"), Message("b", KEY, b"b0")])
    assert log.get([]) == []
    assert log.get([Position("a", 0, 99)]) == []
    assert log.get([Position("b", 0, positions[0].offset)]) == []  # right offset, wrong topic
    assert log.get([Position("a", 1, positions[0].offset)]) == []  # no partition 1
    assert [e.position for e in log.get([Position("a", 0, 99), positions[1]])] == [positions[1]]


def test_get_of_many_positions(log):
    positions = log.append([Message("a", None, str(i).encode()) for i in range(1234)])
    got = log.get(list(reversed(positions)))
    assert [e.position for e in got] == positions
    assert [bytes(e.value) for e in got] == [str(i).encode() for i in range(1234)]


def test_a_batch_failing_halfway_through_the_insert_is_rolled_back(log):
    before = log.append([Message("a", KEY, b"before")])
    # The surrogate key passes the type check and fails inside the transaction, after two rows went in.
    batch = [Message("a", KEY, b"1"), Message("a", KEY, b"2"), Message("a", "\ud800", b"3")]
    with pytest.raises(UnicodeEncodeError):
        log.append(batch)
    assert [bytes(e.value) for e in log.read_all(0)] == [b"before"]
    assert log.append([Message("a", KEY, b"after")]) == [Position("a", 0, before[0].offset + 1)]


def test_two_handles_on_one_file_share_one_order(tmp_path):
    """Two processes (here: two connections) appending to one file never reuse an offset."""
    first, second = SqliteLog(tmp_path / "log.sqlite"), SqliteLog(tmp_path / "log.sqlite")
    try:
        positions = []
        for i in range(5):
            positions += first.append([Message("a", KEY, f"first{i}".encode())])
            positions += second.append([Message("a", KEY, f"second{i}".encode()), Message("b", None, b"x")])
        offsets = [p.offset for p in positions]
        assert offsets == list(range(15))
        assert [e.offset for e in first.read_all(0)] == [e.offset for e in second.read_all(0)] == offsets
    finally:
        first.close()
        second.close()


def test_concurrent_appends_from_threads_get_distinct_contiguous_batches(log):
    results: dict[int, list[list[Position]]] = {}
    start = threading.Barrier(8)

    def writer(n: int) -> None:
        start.wait()
        results[n] = [log.append([Message(f"t{n}", KEY, f"{n}-{i}-{j}".encode()) for j in range(3)])
                      for i in range(25)]

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    batches = [batch for n in range(8) for batch in results[n]]
    offsets = sorted(p.offset for batch in batches for p in batch)
    assert offsets == list(range(8 * 25 * 3))
    for batch in batches:  # a batch is written in one transaction: its offsets are adjacent
        assert [p.offset for p in batch] == list(range(batch[0].offset, batch[0].offset + 3))
    for n in range(8):
        assert [bytes(e.value) for e in log.read(f"t{n}", 0, 0)] == [
            f"{n}-{i}-{j}".encode() for i in range(25) for j in range(3)
        ]


def test_a_group_is_one_transaction_committed_at_its_end_and_a_failed_group_leaves_nothing(tmp_path):
    path = tmp_path / "log.sqlite"
    log = SqliteLog(path)
    try:
        with log.group():
            log.append([Message("a", KEY, b"1")])
            with pytest.raises(TypeError):
                log.append([Message("a", KEY, "not bytes")])  # refused before it touches the group
            log.append([Message("a", KEY, b"2")])
            other = sqlite3.connect(path)  # another connection sees nothing until the group commits
            assert other.execute("SELECT count(*) FROM records").fetchone()[0] == 0
            with log.group():  # re-entrant: joins the outer group
                log.append([Message("a", KEY, b"3")])
        assert other.execute("SELECT count(*) FROM records").fetchone()[0] == 3
        with pytest.raises(RuntimeError), log.group():
            log.append([Message("a", KEY, b"4")])
            raise RuntimeError("the group fails before its commit")
        assert [bytes(e.value) for e in log.read("a", 0, 0)] == [b"1", b"2", b"3"]  # the failed group left nothing
        other.close()
    finally:
        log.close()


def test_inside_a_group_a_failed_append_undoes_only_itself(tmp_path):
    log = SqliteLog(tmp_path / "log.sqlite")
    real = log._db

    class DiskFullOnce:  # the connection, whose next insert fails as a full disk would
        def __init__(self):
            self.fail = True

        def cursor(self):
            cur, conn = real.cursor(), self

            class Cursor:
                def execute(self, *a):
                    return cur.execute(*a)

                def executemany(self, *a):
                    if conn.fail:
                        conn.fail = False
                        raise sqlite3.OperationalError("database or disk is full")
                    return cur.executemany(*a)
            return Cursor()

        def execute(self, *a):
            return real.execute(*a)

        @property
        def in_transaction(self):
            return real.in_transaction

    try:
        with log.group():
            log.append([Message("a", KEY, b"1")])
            log._db = DiskFullOnce()
            with pytest.raises(sqlite3.OperationalError):
                log.append([Message("a", KEY, b"lost")])
            log.append([Message("a", KEY, b"2")])
        log._db = real
        assert [bytes(e.value) for e in log.read("a", 0, 0)] == [b"1", b"2"]
    finally:
        log._db = real
        log.close()


def test_inside_a_group_an_append_that_lost_the_whole_transaction_fails_the_group(tmp_path):
    """On a full disk SQLite may roll back the whole transaction, not only the failed
    statement. The appends after it must not commit without the ones lost before it (their
    callers would hear "done" for records that are gone): every later append of the group and
    its end raise ``LogWriteError``, and the log holds nothing of the group."""
    from hindbrain.streams.log import LogWriteError

    log = SqliteLog(tmp_path / "log.sqlite")
    real = log._db

    class FullDiskRollsBackAll:  # the connection, whose next insert fails and ends the transaction
        def cursor(self):
            cur = real.cursor()

            class Cursor:
                def execute(self, *a):
                    return cur.execute(*a)

                def executemany(self, *a):
                    real.execute("ROLLBACK")  # what SQLite may do on SQLITE_FULL
                    raise sqlite3.OperationalError("database or disk is full")
            return Cursor()

        def __getattr__(self, name):
            return getattr(real, name)

    try:
        with pytest.raises(LogWriteError), log.group():
            log.append([Message("a", KEY, b"acknowledged to nobody yet")])
            log._db = FullDiskRollsBackAll()
            with pytest.raises(sqlite3.OperationalError):
                log.append([Message("a", KEY, b"refused")])
            log._db = real
            with pytest.raises(LogWriteError):  # would have opened a fresh transaction and committed alone
                log.append([Message("a", KEY, b"after the loss")])
        log._db = real
        assert log.read("a", 0, 0) == []
        log.append([Message("a", KEY, b"next")])  # the log goes on after the failed group
        assert [bytes(e.value) for e in log.read("a", 0, 0)] == [b"next"]
    finally:
        log._db = real
        log.close()
