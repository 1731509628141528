"""The embedded log's WAL checkpoints run on the log's own thread, not in the appending call
(``streams.sqlite_log._Checkpointer``), and its values are bound without an adapter (docs/speed.md, "The caller's
path, round twenty-three")."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from hindbrain.streams import sqlite_log
from hindbrain.streams.log import Message
from hindbrain.streams.sqlite_log import SqliteLog

VALUE = 4000  # bytes: about a page a record, so the pages written are easy to count
BATCH = 300


def written_bytes() -> int:
    """Bytes this thread has passed to write(2) and its kin (the kernel's per-thread count)."""
    for line in Path("/proc/thread-self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/thread-self/io")


def batch(n: int) -> list[Message]:
    return [Message("t", f"k{n}", bytes([n % 251]) * VALUE) for _ in range(BATCH)]


def rows_in_file(path: Path) -> int:
    """The records the database file holds without its WAL (a closed log's: nothing writes it)."""
    copy = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # immutable: the WAL is not read
    try:
        return copy.execute("SELECT count(*) FROM records").fetchone()[0]
    finally:
        copy.close()


@pytest.fixture
def log(tmp_path):
    log = SqliteLog(tmp_path / "log.sqlite", synchronous="NORMAL")
    yield log
    log.close()


@pytest.mark.skipif(not Path("/proc/thread-self/io").exists(), reason="needs Linux's per-thread I/O counts")
def test_the_appending_thread_writes_the_wal_only(log):
    # ~4.5 checkpoints' worth of pages: SQLite's own checkpoint would copy ~4,000 of them into the database
    # file from this thread, its writes doubling the append's
    batches = 4 * sqlite_log.CHECKPOINT_PAGES // BATCH + 2
    before = written_bytes()
    for n in range(batches):
        log.append(batch(n))
    wrote = written_bytes() - before
    appended = batches * BATCH * VALUE
    assert appended <= wrote < 1.25 * appended, f"the appending thread wrote {wrote:,} bytes for {appended:,}"


def test_the_checkpoints_copy_into_the_database_file(log):
    due = sqlite_log.CHECKPOINT_PAGES // BATCH + 1  # the append that crosses CHECKPOINT_PAGES asks for one
    for n in range(due):
        log.append(batch(n))
    # the file is not read while the thread may write it: its size says what the checkpoint copied
    deadline = time.monotonic() + 30
    while log.path.stat().st_size < due * BATCH * VALUE and time.monotonic() < deadline:
        time.sleep(0.02)
    assert log.path.stat().st_size >= due * BATCH * VALUE
    wait_until_all_copied(log.path)
    wal = log.path.parent / "log.sqlite-wal"
    size = wal.stat().st_size
    log.append(batch(due))
    # the WAL was all copied and the thread holds no read of it, so the next append starts it over from its
    # beginning: the file does not grow
    assert wal.stat().st_size == size


def wait_until_all_copied(path: Path) -> None:
    """Until SQLite says every WAL frame is in the file (the thread's checkpoint syncs the file and marks the WAL's
    index after the pages; a PASSIVE checkpoint of another connection returns busy while one runs)."""
    other = sqlite3.connect(path)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            busy, frames, copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if not busy and frames == copied:
                return
            time.sleep(0.05)
    finally:
        other.close()
    raise AssertionError("the WAL was not all copied in 30 s")


def test_close_ends_the_thread_and_the_wal(tmp_path):
    log = SqliteLog(tmp_path / "log.sqlite", synchronous="NORMAL")
    for n in range(sqlite_log.CHECKPOINT_PAGES // BATCH + 2):
        log.append(batch(n))
    thread = next(t for t in threading.enumerate() if t.name == "hindbrain-log-checkpoint" and t.is_alive())
    log.close()
    assert not thread.is_alive()
    assert not (tmp_path / "log.sqlite-wal").exists()  # the last connection's close checkpointed it all
    assert rows_in_file(tmp_path / "log.sqlite") == (sqlite_log.CHECKPOINT_PAGES // BATCH + 2) * BATCH


def test_the_pages_counted_are_about_the_pages_written(log):
    # the checkpoints' cadence rests on the count: a batch's pages in the WAL, read back from SQLite
    values = [bytes(230) for _ in range(5000)]
    log.append([Message("hindbrain.perception", "tenant/agent", v) for v in values])
    other = sqlite3.connect(log.path)
    try:
        _, frames, _ = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        other.close()
    assert 0.8 * frames <= sqlite_log.pages_of(values) <= 1.2 * frames


def test_the_values_are_bound_as_they_are(log):
    # bound as bytearrays (the cheaper bind: no adapter looked up a record), so an adapter another part of the
    # process registered for ``bytes`` does not change what the log stores
    key = (bytes, sqlite3.PrepareProtocol)
    sqlite3.register_adapter(bytes, lambda value: b"adapted")
    try:
        log.append([Message("t", "k", b"value"), Message("t", None, bytes(range(256)))])
    finally:
        del sqlite3.adapters[key]
    assert [e.value for e in log.read_all(0)] == [b"value", bytes(range(256))]
