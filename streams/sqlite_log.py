"""The embedded log: one SQLite file in WAL mode.

One table holds every record of every topic in a single global order
(``offset INTEGER PRIMARY KEY``), so the embedded runner can replay exactly the order in
which records were written. Each topic has a single partition, 0; a topic's offsets are the
global offsets of its records (they grow, with gaps, like Kafka offsets after compaction).

Durability: ``synchronous=FULL`` by default, so an ``append`` that returned survives a power
loss, not only a process crash. WAL keeps readers off the writer's back. ``group()`` makes
every append inside it one transaction (one fsync): a server's group commit, which answers
its requests only after the group committed.

A consumer offset may be committed *with the next append* (``commit_later``): it is written in
that append's transaction (or a group's, or at ``close``, or by a ``commit`` of its own), so it
costs no sync of its own. The embedded projector and learner commit that way: each committed
once per 2,000 records, a sync each, ~25 % of the time a bulk import's caller spent asleep
(docs/speed.md, "the projection off the caller's path, round fifteen"). A crash loses only
offsets, never records: the consumer reads again from its last written offset, and every
consumer of this log is idempotent (the views deduplicate; the learner skips what it appended).

The WAL's checkpoints (its pages copied back into the database file) run on a thread of the log's own, with a
connection of its own (``_Checkpointer``), not in the appending call: SQLite's automatic checkpoint ran inside
the ``COMMIT`` of whichever append crossed 1,000 WAL pages, ~0.8 µs of a bulk import's ~3.7 µs append an event
on the caller's thread (docs/speed.md, "The caller's path, round twenty-three"). A checkpoint only copies what
is committed already: a crash during one loses nothing, and a failed one leaves the pages in the WAL for the
next. SQLite's own checkpoint stays as a bound, at ``SAFETY_PAGES``, should the thread fall behind.

A full disk, a read-only file system or an I/O error raises ``LogWriteError`` (an
``OSError`` naming the log and the cause) and leaves nothing of the refused append. SQLite may
answer such an error by rolling back the whole transaction, not only the failed statement:
inside a group that loses every earlier append of the group, so the group then fails as a
whole (each later append in it and its end raise ``LogWriteError``) rather than commit the
appends that came after the loss and answer "done" to the callers whose records were lost.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import count, repeat
from operator import attrgetter
from pathlib import Path

from hindbrain.streams.fair_lock import FairRLock
from hindbrain.streams.log import LogEntry, LogWriteError, Message, Position

_DDL = """
CREATE TABLE IF NOT EXISTS records (
    "offset" INTEGER PRIMARY KEY,
    topic TEXT NOT NULL,
    key TEXT,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_topic ON records (topic, "offset");
CREATE TABLE IF NOT EXISTS consumer_offsets (
    consumer TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (consumer, topic, partition)
);
"""

ALL_TOPICS = "*"  # the pseudo-topic of the global order, for committed offsets of the runner
PAGE = 4096  # SQLite's default page size: a WAL frame holds one page
CHECKPOINT_PAGES = 1000  # WAL pages written between two checkpoints: SQLite's own automatic checkpoint's
ROW_BYTES = 64  # a row's bytes in the pages beside its value: its offset, topic and key, in the table and index
SAFETY_PAGES = 10 * CHECKPOINT_PAGES  # the appending connection checkpoints itself only past this (module docstring)
log = logging.getLogger(__name__)
_new_tuple = tuple.__new__
_BYTES, _STR, _STR_OR_NONE = frozenset((bytes,)), frozenset((str,)), frozenset((str, type(None)))


def _columns(messages: Sequence[Message]) -> tuple[list, list, list[bytes]]:
    """The messages' topics, keys and values (each value as ``bytes``), or the ``TypeError`` naming the first
    message whose value is not bytes-like (``bytes(3)`` would be three zero bytes: checked, not coerced) or
    whose topic is not a str or key not a str or None. The common batch (exact bytes, str and None) is read in
    C-level passes: the check and the parameter tuple of each message in Python were ~0.3 µs of an event's
    ~3.4 µs append (issue 28, round nineteen)."""
    topics, keys, values = (list(map(attrgetter(name), messages)) for name in Message._fields)
    if set(map(type, values)) <= _BYTES and set(map(type, topics)) <= _STR and set(map(type, keys)) <= _STR_OR_NONE:
        return topics, keys, values
    for m in messages:
        if not isinstance(m.value, (bytes, bytearray, memoryview)):
            raise TypeError(f"message value must be bytes, not {type(m.value).__name__}")
        if not isinstance(m.topic, str) or not (m.key is None or isinstance(m.key, str)):
            raise TypeError(f"message topic must be str and key str or None, not {m.topic!r}, {m.key!r}")
    return topics, keys, list(map(bytes, values))


class SqliteLog:
    """A crash-safe, single-file log. Thread-safe; one writer at a time."""

    def __init__(self, path: str | Path, synchronous: str = "FULL"):
        if synchronous not in {"FULL", "NORMAL", "EXTRA"}:
            raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute(f"PRAGMA wal_autocheckpoint={SAFETY_PAGES}")
            self._db.executescript(_DDL)
        except sqlite3.Error as exc:  # e.g. a read-only folder: "unable to open database file"
            self._db.close()
            raise refused(exc, self.path, "open") from exc
        # re-entered by appends inside the owner's group(); the embedded runner holds the same
        # lock (``lock``), so a writer inside a group and the runner's committer cannot take
        # the two in opposite orders; fair, so a flushing reader is not kept out by looping writers
        self._lock = FairRLock()
        self._grouped = False
        self._lost: BaseException | None = None  # what made SQLite roll the group back (module docstring)
        self._group_from: int | None = None
        # called with the lock held when a group ends: True once it committed, False if it rolled back
        self.on_group_end: list[Callable[[bool], None]] = []
        # offsets committed to be written with the next transaction (``commit_later``), by (consumer,
        # topic, partition); a lock of its own: the projector commits without waiting for a writer
        self._later: dict[tuple[str, str, int], int] = {}
        self._later_lock = threading.Lock()
        self._checkpointer = _Checkpointer(self.path, synchronous)

    @property
    def lock(self) -> FairRLock:
        """The writer's lock: hold it to make several appends and reads one unit of work."""
        return self._lock

    @property
    def group_from(self) -> int | None:
        """The first offset of the open group (its records are not committed yet), or None
        outside a group. Only the thread holding the lock sees a group open."""
        return self._group_from

    # -- writing -------------------------------------------------------------------------
    def append(self, messages: Sequence[Message]) -> list[Position]:
        if not messages:
            return []
        topics, keys, values = _columns(messages)
        with self._lock:
            self._check_group()
            cur = self._db.cursor()
            # Inside a group a savepoint scopes this append: a failed one undoes only itself.
            begin, commit, undo = (("SAVEPOINT append", "RELEASE append", ("ROLLBACK TO append", "RELEASE append"))
                                   if self._grouped else ("BEGIN IMMEDIATE", "COMMIT", ("ROLLBACK",)))
            try:
                cur.execute(begin)
                first = cur.execute('SELECT COALESCE(MAX("offset"), -1) + 1 FROM records').fetchone()[0]
                # each value bound as a ``bytearray`` copy: sqlite3 binds an exact bytearray (str, int, float) as it
                # is, and looks an adapter up for every ``bytes`` (a key tuple built, the registry's dict, two
                # attribute look-ups): the copy is the cheaper, ~0.2 µs a record (docs/speed.md, round twenty-three)
                cur.executemany('INSERT INTO records ("offset", topic, key, value) VALUES (?, ?, ?, ?)',
                                zip(count(first), topics, keys, map(bytearray, values)))
                later = {} if self._grouped else self._write_later(cur)  # a group writes them at its end
                cur.execute(commit)
            except BaseException as exc:
                error = refused(exc, self.path, "append") if isinstance(exc, sqlite3.Error) else exc
                self._undo(undo, error)
                if error is exc:
                    raise
                raise error from exc
            self._written(later)
            self._checkpointer.wrote(pages_of(values))  # a group's pages count as written: its end commits them
        # ``tuple.__new__`` makes the named tuples without their generated ``__new__``'s Python frame
        return list(map(_new_tuple, repeat(Position), zip(topics, repeat(0), range(first, first + len(values)))))

    def _write_later(self, cur) -> dict[tuple[str, str, int], int]:
        """(Lock held, in a transaction.) Writes the offsets ``commit_later`` left; returns them, to be
        forgotten by ``_written`` once the transaction committed (a rolled-back one leaves them to write)."""
        with self._later_lock:
            later = dict(self._later)
        if later:
            cur.executemany(_UPSERT_OFFSET, [(*key, offset) for key, offset in later.items()])
        return later

    def _written(self, later: dict[tuple[str, str, int], int]) -> None:
        """Forgets the offsets a committed transaction wrote, unless one was committed again meanwhile."""
        if not later:
            return
        with self._later_lock:
            for key, offset in later.items():
                if self._later.get(key) == offset:
                    del self._later[key]

    def _undo(self, statements: Sequence[str], cause: BaseException) -> None:
        """Undo a failed append (lock held). If SQLite already rolled the whole transaction
        back (it may, on a full disk or an I/O error), there is nothing to undo; inside a
        group, the group is then lost to ``cause``. A failing undo never hides ``cause``."""
        try:
            if self._db.in_transaction:
                for statement in statements:
                    self._db.execute(statement)
        except sqlite3.Error:  # the undo failed too: a group cannot be trusted; alone, drop it all
            if self._grouped:
                self._lost = cause
            elif self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
        if self._grouped and not self._db.in_transaction:
            self._lost = cause

    def _check_group(self) -> None:
        """Inside a group whose transaction SQLite rolled back, refuse (lock held): a new
        statement would open a fresh transaction and commit without the lost appends."""
        if not self._grouped or (self._lost is None and self._db.in_transaction):
            return
        cause = self._lost or "SQLite ended the transaction"
        self._lost = cause
        number = getattr(cause, "errno", None) or errno.EIO
        raise LogWriteError(number, f"the group's transaction was rolled back after a failed write ({cause}): "
                            "nothing of the group is in the log", str(self.path))

    @contextmanager
    def group(self) -> Iterator[None]:
        """Every append of this thread inside is one transaction, committed (and synced) at
        the end; other threads wait. Re-entrant: an inner group joins the outer one."""
        with self._lock:
            if self._grouped:
                yield
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise refused(exc, self.path, "group") from exc
            self._grouped, self._lost = True, None
            try:
                self._group_from = self._db.execute('SELECT COALESCE(MAX("offset"), -1) + 1 FROM records').fetchone()[0]
                yield
                self._check_group()  # an append of the group was lost with the transaction
                later = self._write_later(self._db.cursor())
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:  # not if SQLite already rolled it back (a failed COMMIT may)
                    with contextlib.suppress(sqlite3.Error):  # never hides ``exc``
                        self._db.execute("ROLLBACK")
                self._end_group(committed=False)
                if isinstance(exc, sqlite3.Error):
                    raise refused(exc, self.path, "commit") from exc
                raise
            self._written(later)
            self._checkpointer.wrote(1)  # the offsets' page (its appends counted theirs)
            self._end_group(committed=True)

    def _end_group(self, committed: bool) -> None:
        self._grouped, self._lost, self._group_from = False, None, None
        for callback in self.on_group_end:
            callback(committed)

    # -- reading -------------------------------------------------------------------------
    def partitions(self, topic: str) -> list[int]:
        return [0]

    def read(self, topic: str, partition: int, offset: int, limit: int = 1000) -> list[LogEntry]:
        if partition != 0:
            return []
        with self._lock:
            rows = self._db.execute(
                'SELECT "offset", topic, key, value FROM records WHERE topic = ? AND "offset" >= ? '
                'ORDER BY "offset" LIMIT ?',
                (topic, offset, limit),
            ).fetchall()
        return [LogEntry(t, 0, o, k, v) for o, t, k, v in rows]

    def read_all(self, offset: int, limit: int = 10_000, topics: Sequence[str] | None = None,
                 stop: int | None = None) -> list[LogEntry]:
        """Records of every topic (or of ``topics``) from global ``offset`` on (and before
        ``stop``), in write order (embedded only)."""
        only = f" AND topic IN ({','.join('?' * len(topics))})" if topics else ""
        until = ' AND "offset" < ?' if stop is not None else ""
        with self._lock:
            rows = self._db.execute(
                f'SELECT "offset", topic, key, value FROM records WHERE "offset" >= ?{until}{only} '
                'ORDER BY "offset" LIMIT ?',
                (offset, *(() if stop is None else (stop,)), *(topics or ()), limit),
            ).fetchall()
        return [LogEntry(t, 0, o, k, v) for o, t, k, v in rows]

    def get(self, positions: Sequence[Position]) -> list[LogEntry]:
        """The entries at these positions (missing ones are left out), in offset order."""
        offsets = sorted({p.offset for p in positions if p.partition == 0})
        out: list[LogEntry] = []
        with self._lock:
            for start in range(0, len(offsets), 500):
                chunk = offsets[start : start + 500]
                marks = ",".join("?" * len(chunk))
                out += [
                    LogEntry(t, 0, o, k, v)
                    for o, t, k, v in self._db.execute(
                        f'SELECT "offset", topic, key, value FROM records WHERE "offset" IN ({marks}) '
                        'ORDER BY "offset"',
                        chunk,
                    )
                ]
        wanted = {(p.topic, p.offset) for p in positions}
        return [e for e in out if (e.topic, e.offset) in wanted]

    def end_offset(self, topic: str, partition: int) -> int:
        with self._lock:
            return self._db.execute('SELECT COALESCE(MAX("offset"), -1) + 1 FROM records').fetchone()[0]

    # -- consumer offsets ----------------------------------------------------------------
    def commit(self, consumer: str, topic: str, partition: int, offset: int) -> None:
        """Writes the offset now (a transaction and a sync of its own outside a group); an offset
        ``commit_later`` left for this consumer is replaced."""
        with self._lock:
            self._check_group()
            try:
                self._db.execute(_UPSERT_OFFSET, (consumer, topic, partition, offset))
            except sqlite3.Error as exc:
                error = refused(exc, self.path, "commit of an offset")
                if self._grouped and not self._db.in_transaction:
                    self._lost = error
                raise error from exc
            with self._later_lock:
                self._later.pop((consumer, topic, partition), None)
            self._checkpointer.wrote(1)

    def commit_later(self, consumer: str, topic: str, partition: int, offset: int) -> None:
        """Commits the offset with the next transaction: the next ``append`` (a group's end), a ``commit``
        or ``close`` writes it (module docstring); ``committed`` returns it at once. Never waits for the
        log's lock. A crash before it is written leaves the consumer at its last written offset."""
        with self._later_lock:
            self._later[(consumer, topic, partition)] = offset

    def committed(self, consumer: str, topic: str, partition: int) -> int:
        with self._later_lock:
            later = self._later.get((consumer, topic, partition))
        if later is not None:
            return later
        with self._lock:
            row = self._db.execute(
                "SELECT next_offset FROM consumer_offsets WHERE consumer = ? AND topic = ? AND partition = ?",
                (consumer, topic, partition),
            ).fetchone()
        return row[0] if row else 0

    def close(self) -> None:
        """Writes the offsets ``commit_later`` left, then closes. A failure is raised (storage that
        refuses the write as ``LogWriteError``) and the log is closed all the same: those offsets are
        only a resume point, so a reopen projects again from the last one written, deduplicated."""
        with self._lock:
            try:
                if self._later and not self._grouped:
                    cur = self._db.cursor()
                    try:  # a failed transaction is rolled back by the close below (sqlite3 never commits there)
                        cur.execute("BEGIN IMMEDIATE")
                        later = self._write_later(cur)
                        cur.execute("COMMIT")
                    except sqlite3.Error as exc:
                        raise refused(exc, self.path, "commit of the offsets left to write at close") from exc
                    self._written(later)
            finally:
                self._checkpointer.close()  # first: the last connection's close checkpoints and removes the WAL
                self._db.close()


def pages_of(values: Sequence[bytes]) -> int:
    """About the WAL pages an append of ``values`` writes: their rows' bytes in pages, and the table's and the
    index's last pages, which every append rewrites (a batch of 5,000 bench/api.py events: 359 counted, 375
    written)."""
    return (sum(map(len, values)) + ROW_BYTES * len(values)) // PAGE + 2


class _Checkpointer:
    """Checkpoints the log's WAL on a thread of its own, every ``CHECKPOINT_PAGES`` pages written (module
    docstring). ``wrote`` is called with the log's lock held, so the count needs no lock of its own; the
    thread starts at the first checkpoint due, with a connection of its own (SQLite's ``PASSIVE``
    checkpoint: the appends go on while it copies, none waits for it)."""

    def __init__(self, path: Path, synchronous: str):
        self.path, self.synchronous = path, synchronous
        self.pages = 0  # written since the last checkpoint was asked for
        self._due = False
        self._closed = False
        self._wake = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None

    def wrote(self, pages: int) -> None:
        self.pages += pages
        if self.pages < CHECKPOINT_PAGES:
            return
        self.pages = 0
        with self._wake:
            if self._closed:
                return
            self._due = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hindbrain-log-checkpoint", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
            # the checkpoint's syncs follow the log's setting (in WAL mode they are the checkpoint's own)
            db.execute(f"PRAGMA synchronous={self.synchronous}")
        except sqlite3.Error as exc:  # the appending connection's own checkpoint remains (SAFETY_PAGES)
            log.warning("the log's checkpoint thread could not open the log: %s", exc)
            return
        try:
            while self._next():
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error as exc:  # the pages stay in the WAL: the next checkpoint copies them
                    log.warning("the log's WAL checkpoint failed (retried at the next): %s", exc)
        finally:
            db.close()

    def _next(self) -> bool:
        """Waits for a checkpoint due; False once closed."""
        with self._wake:
            self._wake.wait_for(lambda: self._due or self._closed)
            self._due = False
            return not self._closed

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()


_UPSERT_OFFSET = ("INSERT INTO consumer_offsets VALUES (?, ?, ?, ?) ON CONFLICT (consumer, topic, partition) "
                  "DO UPDATE SET next_offset = excluded.next_offset")


# SQLite's primary result codes of storage that refuses a write, and the errno each becomes
_STORAGE_ERRNO = {
    sqlite3.SQLITE_FULL: errno.ENOSPC, sqlite3.SQLITE_READONLY: errno.EROFS, sqlite3.SQLITE_IOERR: errno.EIO,
    sqlite3.SQLITE_CANTOPEN: errno.EIO, sqlite3.SQLITE_PERM: errno.EACCES,
}


def refused(exc: sqlite3.Error, path: Path, what: str) -> Exception:
    """``exc`` as a ``LogWriteError`` when storage refused the write (a full disk, a read-only
    file system, an I/O error), naming the log and the cause; any other error unchanged."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or (code & 0xFF) not in _STORAGE_ERRNO:
        return exc
    number = _STORAGE_ERRNO[code & 0xFF]
    if number != errno.ENOSPC and _read_only(path.parent):  # SQLite says "unable to open database file"
        number = errno.EROFS
    return LogWriteError(number, f"the log cannot be written ({os.strerror(number)}): {what} failed: {exc}",
                         str(path))


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False
