"""The embedded runner: the caller's records → the SQLite log → projectors → chDB.

Write path, in this order:
 1. encode every record (a record that does not fit its schema is refused, nothing written);
 2. append the batch to the log (durable once ``append`` returns);
 3. hold the decoded records in memory (no decode needed) until a micro-batch is due;
 4. project the micro-batch with the pure projectors, insert each table's rows in one
    Arrow insert (chDB costs ~1 ms per statement, so never one INSERT per record);
 5. only after every insert returned, commit the runner's offset in the log.
A crash between 2 and 5 loses nothing: on open the runner catches up from its committed
offset, and idempotent views absorb whatever was inserted twice.

Inside a log group (``SqliteLog.group``, a server's group commit) nothing of the group is
projected before it committed: had it rolled back, the views would keep rows of records the
log never held. The micro-batches it made due are projected when it commits; if it rolls
back, its records (kept in memory for projection) are dropped and the log is the truth.

A write call fails only if its records are not in the log. When the warehouse fails (4), the
records stay behind the committed offset: the micro-batch a write makes due is left for later
(logged, never raised to that writer, whose retry would append its records twice), and the
next ``flush`` projects the log from the committed offset, raising to its caller while the
warehouse still fails; a reopened brain catches up the same way.

Read-your-writes: ``flush()`` runs before any read of the views (the Brain calls it).

**The due micro-batch off the writer's path.** Step 4 for the batch an append made due ran
inline, in whichever call appended its last record, with the log's lock held: in ``hindbrain
serve`` every ~20 s one perceive or outcome took 70-105 ms of CPU (120-550 ms of wall on a busy
machine) to project and insert 2,000 records, and every call queued behind it on the brain's
thread or the log's lock waited as long (the soak's p99 stalls, docs/speed.md "Soak stalls,
round ten"). Now the append hands it to a projector thread (``_project_in_background``): it takes
the batch under the log's lock, projects and inserts it *without* the lock, and commits the
offset under it again. At most one batch is in flight; ``flush`` (every reader) first waits for
it (``_settle``: it needs no lock the caller may hold, so a flush inside a group cannot
deadlock with it) and commits its offset, so read-your-writes holds. An insert that failed
leaves the batch behind the committed offset, as an inline failure did: the next ``flush``
projects the log from there. A batch with dead letters (they are appended to the log) is
projected by that path too, inline.

Group commit (``defer``): records nothing waits on (a recall's own recall and injection
records) are encoded at once, then appended by a committer thread within ``group_window_s``,
many recalls in one transaction, or earlier by the next ``submit``/``flush`` (in call order,
in the same transaction). A crash therefore loses at most the deferred records of the last
window; everything ``submit`` appended (perceptions, outcomes, decisions) is durable when it
returns, and an outcome is never in the log without the recall it names before it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.records import now_us
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded, ProjectedBatch, project_batch, to_messages
from hindbrain.streams.sink import insert_batch, release_arrow_pool
from hindbrain.streams.sqlite_log import ALL_TOPICS, SqliteLog
from hindbrain.switching import CALLS

CONSUMER = "embedded-projector"
GROUP_WINDOW_S = 0.005  # how long a deferred record may wait for its group commit
BACKLOG_BATCHES = 3  # micro-batches pending past which the appending call projects them itself
# records the background projection projects between two give-way points (2,000 took 70-105 ms with
# their inserts in the soak: a slice is ~10 ms), so a call that starts meanwhile meets at most one
PROJECT_SLICE = 250

Listener = Callable[[list[Decoded]], None]  # sees each appended batch, in order

log = logging.getLogger(__name__)


class EmbeddedRunner:
    def __init__(self, log: SqliteLog, warehouse: Warehouse, batch_size: int = 2000,
                 group_window_s: float = GROUP_WINDOW_S):
        self.log, self.warehouse, self.batch_size = log, warehouse, batch_size
        self.group_window_s = group_window_s
        self._pending: list[Decoded] = []
        self._lock = log.lock  # one lock with the log's: see SqliteLog.lock
        self._deferred: list[tuple[list, Sequence[tuple[str, dict]]]] = []  # (messages, records) not yet appended
        # ``_deferred`` has a lock of its own: a recall (or a replica's records, handed over on the
        # server's event loop) queues its records without waiting for a group holding the log
        self._wake = threading.Condition(threading.Lock())
        self._committer: threading.Thread | None = None
        self._closed = False
        self._behind = False  # a projection failed: the log past the committed offset is to project
        self.listeners: list[Listener] = []
        log.on_group_end.append(self._group_ended)
        # the due micro-batch's projection (module docstring): wanted, in flight, the thread doing it
        self._handoff = threading.Condition(threading.Lock())
        self._wanted = False
        self._inflight: InFlight | None = None
        self._projector: threading.Thread | None = None
        # False: the due batch is projected inline, by the appending call, as before round ten
        # (``bench/write_stalls.py --arms`` compares both in one process)
        self.background = True

    def submit(self, records: Sequence[tuple[str, dict]], messages: list | None = None) -> list[Position]:
        """Append records durably and queue them for projection; returns their positions.
        Deferred records go first, in the same transaction. ``messages``: as ``defer``'s."""
        with gc_paused():
            messages = to_messages(records) if messages is None else messages
            with self._lock:
                return self._append(messages, records)

    def defer(self, records: Sequence[tuple[str, dict]], messages: list | None = None) -> None:
        """Queue records for the next group commit (see the module docstring). They are
        encoded now: a record that does not fit its schema is refused here, to the caller.
        ``messages``: the records encoded already (``to_messages``, by a recall replica)."""
        if self.group_window_s <= 0:
            self.submit(records, messages)
            return
        messages = to_messages(records) if messages is None else messages
        with self._wake:
            if self._closed:
                raise RuntimeError("the runner is closed")
            self._deferred.append((messages, records))
            if self._committer is None:
                self._committer = threading.Thread(target=self._commit_deferred, name="hindbrain-group-commit",
                                                   daemon=True)
                self._committer.start()
            self._wake.notify()

    def _commit_deferred(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._deferred or self._closed)
                # the window: the recalls of these milliseconds commit together; a close ends it
                # at once (it commits them itself) rather than wait out a long window
                self._wake.wait_for(lambda: self._closed, timeout=self.group_window_s)
                if self._closed:
                    return
            try:
                with self._lock, gc_paused():
                    self._append([], [])
            except Exception:  # noqa: BLE001 - the records stay queued: the next submit or flush
                with self._wake:  # retries them and raises to its caller; this thread retries too
                    self._wake.wait_for(lambda: self._closed, timeout=1.0)

    def _append(self, messages: list, records: Sequence[tuple[str, dict]]) -> list[Position]:
        """Appends the deferred records, then ``messages``, in one transaction (lock held);
        returns the positions of ``messages``. On failure the deferred ones stay queued."""
        with self._wake:
            deferred, self._deferred = self._deferred, []
        earlier = sum(len(ms) for ms, _ in deferred)
        if deferred:
            records = [r for _, rs in deferred for r in rs] + list(records)
            messages = [m for ms, _ in deferred for m in ms] + list(messages)
        try:
            positions = self.log.append(messages)
        except BaseException:
            with self._wake:
                self._deferred[:0] = deferred
            raise
        decoded = [Decoded(p, rt, r) for p, (rt, r) in zip(positions, records, strict=True)]
        self._pending.extend(decoded)
        for listener in self.listeners:
            listener(decoded)
        if len(self._pending) >= self.batch_size and self.log.group_from is None:
            self._project_due()
        return positions[earlier:]

    def _group_ended(self, committed: bool) -> None:
        """The log's group ended (lock held): project what it made due, or forget what it
        rolled back (the next flush projects the log from the committed offset)."""
        if not committed:
            self._pending, self._behind = [], True
        elif len(self._pending) >= self.batch_size:
            self._project_due()

    def _project_due(self) -> None:
        """Hands the micro-batch an append made due to the projector thread (lock held; the
        appending call returns at once: module docstring)."""
        with self._handoff:
            # the projector gives way to calls in progress, and a bulk import is one: past a bound
            # the appending call projects inline (backpressure), or the backlog and its records
            # would grow with the import (80,000 records held at the end of a 100k import)
            behind = len(self._pending) >= BACKLOG_BATCHES * self.batch_size
            closing = self._closed or not self.background or behind
            if not closing:
                self._wanted = True
                if self._projector is None:
                    self._projector = threading.Thread(target=self._run_projector, name="hindbrain-projector",
                                                       daemon=True)
                    self._projector.start()
                self._handoff.notify()
        if closing:  # the close's own append (its projector is ending), inline by choice, or too far behind
            self._project_logged()

    def _project_logged(self) -> None:
        """``flush``, a failure logged and not raised: the append is durable already, and a failing
        warehouse must not turn it into a writer's error (the next flush retries and raises)."""
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - retried by the next flush, which raises to its caller
            log.warning("projection into the views failed; the records are in the log and will be projected by "
                        "the next flush or reopen: %s", exc)

    def _run_projector(self) -> None:
        while True:
            with self._handoff:
                self._handoff.wait_for(lambda: self._wanted or self._closed)
                if not self._wanted:
                    return
                self._wanted = False
            try:
                self._project_in_background()
            except Exception as exc:  # noqa: BLE001 - as ``_project_logged``
                log.warning("projection into the views failed; the records are in the log and will be projected by "
                            "the next flush or reopen: %s", exc)

    def _project_in_background(self) -> None:
        """Projects what is pending: taken under the log's lock, projected and inserted without
        it, its offset committed under it again. The paths that read the log (an earlier failure,
        another writer's records between ours) or append to it (dead letters) run inline, as before."""
        with self._lock, gc_paused():
            self._settle()
            ready = self._pending
            if not ready:
                return
            committed = self.log.committed(CONSUMER, ALL_TOPICS, 0)
            if self._behind or ready[-1].position.offset + 1 - committed != len(ready):
                self.flush()
                return
            self._pending = []
            inflight = self._inflight = InFlight(ready, ready[-1].position.offset + 1)
        try:
            with gc_paused():
                batch, ts_us = ProjectedBatch(), now_us()
                for start in range(0, len(ready), PROJECT_SLICE):  # slices that give way to the brain's calls
                    CALLS.give_way()
                    project_batch(ready[start : start + PROJECT_SLICE], ts_us, batch)
                if not batch.dead_letters:
                    insert_batch(self.warehouse, batch, pause=CALLS.give_way)
            batch.rows, batch.tables = {}, {}  # the columns freed on this thread, then given back
            release_arrow_pool()
        except BaseException as exc:
            inflight.end(exc)
            raise
        inflight.end(None if not batch.dead_letters else _DeadLetters())
        with self._lock:
            self._settle()
            if batch.dead_letters:
                self.flush()  # from the committed offset, the dead letters appended first (``_write``)

    def _settle(self) -> None:
        """(Log lock held.) Waits for the batch in flight, if any, and commits its offset; a
        batch that failed (or holds dead letters) leaves the log to project from the committed
        offset. Its thread takes no lock before it ends, so waiting here cannot deadlock."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return
        inflight.ended.wait()
        if inflight.error is not None:
            self._behind = True
            return
        self.log.commit(CONSUMER, ALL_TOPICS, 0, max(inflight.next_offset, self.log.committed(CONSUMER, ALL_TOPICS, 0)))

    def close(self) -> None:
        """Commit what is deferred and stop the committer (then ``flush`` what is pending)."""
        with self._wake:
            self._closed = True  # no defer after this one: the append below takes them all
            self._wake.notify_all()
        with self._lock:
            self._append([], [])
        if self._committer is not None:
            self._committer.join()
        with self._handoff:
            self._handoff.notify_all()  # ``_closed``: the projector ends once its batch is in
        if self._projector is not None:
            self._projector.join()
        with self._lock:
            self._settle()

    def flush(self) -> int:
        """Project and insert everything pending, then commit. Returns records projected."""
        with self._lock, gc_paused():
            self._settle()
            if self._deferred:
                self._append([], [])
            stop = self.log.group_from  # an open group's records wait for its commit (module docstring)
            ready = self._pending if stop is None else [d for d in self._pending if d.position.offset < stop]
            if self._behind:  # an earlier projection failed: the log from the committed offset
                self._pending = self._pending[len(ready):]
                return self._project_log(stop=stop)
            if not ready:
                return 0
            committed = self.log.committed(CONSUMER, ALL_TOPICS, 0)
            self._pending = self._pending[len(ready):]
            if ready[-1].position.offset + 1 - committed != len(ready):
                # Another writer appended before or between our records: committing past our
                # batch would skip its records for good, so project the log from ``committed``.
                return self._project_log(stop=stop)
            batch = project_batch(ready, now_us())
            try:
                self._write(batch, next_offset=ready[-1].position.offset + 1)
            except BaseException:
                self._behind = True  # ``ready`` is dropped: the next flush reads it from the log
                raise
            return batch.count

    def catch_up(self, chunk: int = 20_000) -> int:
        """Project whatever the log holds beyond the committed offset (after a crash or
        when another writer appended). Returns the number of records projected."""
        with self._lock:
            self.flush()
            return self._project_log(chunk)

    def _project_log(self, chunk: int = 20_000, stop: int | None = None) -> int:
        """Project the log from the committed offset to its end (or to ``stop``)."""
        done = 0
        self._behind = True  # until the end of the log is projected
        offset = self.log.committed(CONSUMER, ALL_TOPICS, 0)
        while entries := self.log.read_all(offset, chunk, stop=stop):
            with gc_paused():
                batch = project_batch(entries, now_us())
            offset = entries[-1].offset + 1
            self._write(batch, next_offset=offset)
            done += batch.count
        self._behind = False
        return done

    def _write(self, batch: ProjectedBatch, next_offset: int) -> None:
        if batch.dead_letters:
            # The reason goes into the log too, so the audit trail keeps it.
            dls = [("dead_letter", dl) for dl in batch.dead_letters]
            positions = self.log.append(to_messages(dls))
            batch.dead_letters = []
            # Not committed past here: entries between the batch and these may be unread.
            project_batch([Decoded(p, rt, r) for p, (rt, r) in zip(positions, dls, strict=True)], now_us(), batch)
        insert_batch(self.warehouse, batch)
        self.log.commit(CONSUMER, ALL_TOPICS, 0, max(next_offset, self.log.committed(CONSUMER, ALL_TOPICS, 0)))

    @property
    def pending(self) -> int:
        """Records in the log and not yet in the views."""
        if self._behind:
            with self._lock:
                return self.log.end_offset(ALL_TOPICS, 0) - self.log.committed(CONSUMER, ALL_TOPICS, 0)
        inflight = self._inflight
        return len(self._pending) + (len(inflight.records) if inflight is not None else 0)


class InFlight:
    """The micro-batch the projector inserts without the log's lock: its records, the offset to
    commit once it is in, and how it ended (``error`` None: inserted)."""

    def __init__(self, records: list[Decoded], next_offset: int):
        self.records, self.next_offset = records, next_offset
        self.error: BaseException | None = None
        self.ended = threading.Event()

    def end(self, error: BaseException | None) -> None:
        self.error = error
        self.ended.set()


class _DeadLetters(Exception):
    """A projected batch with dead letters: they go to the log first (``EmbeddedRunner._write``),
    so the batch is projected again inline, from the committed offset."""
