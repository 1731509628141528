"""The embedded runner: the caller's records → the SQLite log → projectors → chDB.

Write path, in this order:
 1. encode every record (a record that does not fit its schema is refused, nothing written);
 2. append the batch to the log (durable once ``append`` returns);
 3. hold the decoded records in memory (no decode needed) until a micro-batch is due;
 4. project what is pending with the pure projectors (on the projector thread), insert each
    table's rows in one Arrow insert (chDB costs ~1 ms per statement, so never one INSERT per record);
 5. only after every insert returned, commit the runner's offset in the log (with its next append).
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

Read-your-writes: ``flush()`` runs before any read of the views (the Brain calls it, as do
``replay --check`` and a close): it projects every record appended before it was called.

**The projection off the caller's path** (docs/speed.md, "the projection off the caller's path,
round fifteen"). The caller appends, shows the records to the listeners and returns; a projector
thread owns step 4: each round it takes *every* record pending (at most ``ROUND_RECORDS``),
projects them and inserts one Arrow table per view (fewer, larger inserts: one chDB statement
per view per round), then commits the offset with the log's next append (``commit_later``: no
sync of its own). Rounds and flushes take ``_projecting`` in turn, so offsets are committed in
log order and only past what is in the views. The log's lock is not taken on that path (the
paths that read the log, below, take it, always before ``_projecting``).

Backpressure is explicit: a writer whose append left more than ``backlog_records`` records not
yet in the views waits (outside the log's lock) until the projector brings the backlog back
under the bound (``waited_s``, ``waits`` count it); the projector gives way to brain calls in
flight only while the backlog is under half the bound and no call waits for it (a call waiting
for it is ``parked``: it no longer holds the projector back, the priority inversion measured in
round fifteen). A writer inside a log group, or holding the log's lock, never waits (the group's
records are projected when it commits: ``_group_ended``). Until round fifteen the writer past
the bound projected the batch itself, after waiting for the projector's batch in flight, which
gave way to that very writer for 50 ms a slice.

A round that meets what the pure path cannot take (records another writer appended, dead
letters to append, an earlier failure) hands over to the log's path: the log is projected from
the committed offset under the log's lock (``flush``). A failed insert leaves its records behind
the committed offset for the next ``flush`` (which raises while the warehouse fails) or reopen.

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
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from hindbrain.bulk_calls import BulkCalls
from hindbrain.projections.warehouse import PartsNotWritten, Warehouse
from hindbrain.schemas.records import now_us
from hindbrain.streams import columnar
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded, ProjectedBatch, project_batch, project_perceptions, to_messages
from hindbrain.streams.sink import insert_batch, release_arrow_pool
from hindbrain.streams.sqlite_log import ALL_TOPICS, SqliteLog
from hindbrain.streams.thread_priority import BackgroundIdler
from hindbrain.switching import CALLS

CONSUMER = "embedded-projector"
_new_tuple = tuple.__new__
GROUP_WINDOW_S = 0.005  # how long a deferred record may wait for its group commit
# records appended and not yet in the views past which a writer waits for the projector (backpressure):
# two bulk calls of 5,000, so the projector's round of one overlaps the next call's fold
BACKLOG_RECORDS = 10_000
ROUND_RECORDS = 20_000  # at most this many records a round projects and inserts (its columns' memory)
# records the background projection projects between two give-way points (2,000 took 70-105 ms with
# their inserts in the soak: a slice is ~10 ms), so a call that starts meanwhile meets at most one
PROJECT_SLICE = 250
# chDB's merges held while a bulk import runs (``importing``; docs/speed.md, "The event document and the background,
# round twenty-three"): a merge only makes parts fewer (a part is readable once its insert returns), and during an
# import it ran beside the caller, on the other core, sharing its caches and memory bus as the neural tier's workers
# did (round twenty-two). Held until MERGES_LINGER_S after the last bulk call ended: an import's calls come back to
# back, and at load 17 the neural tier's 0.25 s let the merges restart between two calls, to be cancelled by the
# next call's stop (nobody waits for a merge: the linger is longer). At most MERGES_HELD_ROUNDS projector rounds:
# each leaves a part a view, and chDB delays inserts at 1,000 parts of a table, so a stream of bulk calls gets its
# merges back after these, and keeps them until it ends
MERGES_LINGER_S = 1.0
MERGES_HELD_ROUNDS = 64

Listener = Callable[[list[Decoded]], None]  # sees each appended batch, in order

log = logging.getLogger(__name__)


class EmbeddedRunner:
    def __init__(self, log: SqliteLog, warehouse: Warehouse, batch_size: int = 2000,
                 group_window_s: float = GROUP_WINDOW_S, merges_idle: bool = False):
        self.log, self.warehouse, self.batch_size = log, warehouse, batch_size
        self.group_window_s = group_window_s
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
        # the projection (module docstring): what is pending, how many records a projection has taken
        # and not yet inserted, the calls waiting for it; ``_handoff`` guards them (taken last of all locks)
        self._handoff = threading.Condition(threading.Lock())
        # each record with its encoded value (``Decoded.value``: what ``_insert_perceptions`` sends to chDB)
        self._pending: list[Decoded] = []  # appended (committed), not yet taken by a projection
        self._in_group: list[Decoded] = []  # appended inside the open log group (its thread only)
        self._taken = 0
        self._waiting = 0
        self._projecting = threading.RLock()  # one projection at a time (after the log's lock, if both)
        self._projector: threading.Thread | None = None
        # the runner's committed offset, kept here: a round reads it without the log's lock (only this
        # runner commits it; read once, before any append of this process)
        self._committed = log.committed(CONSUMER, ALL_TOPICS, 0)
        self.backlog_records = BACKLOG_RECORDS
        self.waited_s, self.waits = 0.0, 0  # the writers' waits for room (backpressure), measured
        # False: the due batch is projected inline, by the appending call (``bench/write_stalls.py --arms``)
        self.background = True
        # a round's perceptions go to chDB as their encoded values, decoded there (``_insert_perceptions``);
        # False: projected to Arrow columns in Python on the projector thread (a ClickHouse server's path)
        embedded = getattr(warehouse, "url", "").startswith("chdb://")
        self.decode_in_chdb = embedded and columnar.enabled()
        # merges_idle (HINDBRAIN_MERGES_IDLE, off by default): chDB's merge threads under SCHED_IDLE, those its
        # inserts started lowered after each projector round (streams.thread_priority: on a box shared with other
        # busy processes they took the caller's core from it during a bulk import)
        self.idler = BackgroundIdler(merges_idle and embedded)
        # the merges' hold during a bulk import (``importing``): chDB's only (a server's merges are the server's);
        # ``_imports`` under ``_handoff``; the hold itself is the projector thread's (``_follow_bulk``)
        self.hold_merges = embedded
        self._imports = BulkCalls(self._handoff, MERGES_LINGER_S)
        self.merges_held, self._held_rounds = False, 0

    def submit(self, records: Sequence[tuple[str, dict]], messages: list | None = None) -> list[Position]:
        """Append records durably and queue them for projection; returns their positions.
        Deferred records go first, in the same transaction. ``messages``: as ``defer``'s.
        Past the backlog's bound it waits for the projector (module docstring), unless this thread
        holds the log's lock (a group, a listener's own append)."""
        with gc_paused():
            messages = to_messages(records) if messages is None else messages
            with self._lock:
                positions = self._append(messages, records)
        if not self._lock.owned():  # waiting holding it would stall the log's paths of the projector
            self.wait_for_room()
        return positions

    @contextmanager
    def importing(self) -> Iterator[None]:
        """The block a bulk import's call runs in (``Brain._importing``): chDB's merges are held from the
        projector's next round until ``MERGES_LINGER_S`` after the last such block ended (module constants)."""
        with self._handoff:
            if not self._bulk_running():
                self._held_rounds = 0  # a bulk begins: its rounds are counted afresh
            self._imports.begin()
        try:
            yield
        finally:
            with self._handoff:
                self._imports.end()  # it notifies: the projector's wait for the linger's end starts again

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
        # ``tuple.__new__``: the named tuple without its generated ``__new__``'s Python frame (~0.15 µs a record)
        decoded = [_new_tuple(Decoded, (p, rt, r, m.value)) for p, (rt, r), m in zip(positions, records, messages,
                                                                                   strict=True)]
        if self.log.group_from is not None:
            self._in_group += decoded  # projected once the group committed (module docstring)
            due = False
        else:
            due = self._hand_over(decoded)  # before the listeners: the projector runs beside their fold
        for listener in self.listeners:
            listener(decoded)
        if due and not self.background:
            self._project_logged()
        return positions[earlier:]

    def _hand_over(self, decoded: list[Decoded]) -> bool:
        """Queues committed records for projection and wakes the projector when a batch is due;
        returns whether one is."""
        with self._handoff:
            self._pending += decoded
            due = len(self._pending) >= self.batch_size
            if due and self.background and not self._closed:
                if self._projector is None:
                    self._projector = threading.Thread(target=self._run_projector, name="hindbrain-projector",
                                                       daemon=True)
                    self._projector.start()
                self._handoff.notify_all()
        return due

    def _group_ended(self, committed: bool) -> None:
        """The log's group ended (lock held): hand over what it appended, or forget what it
        rolled back (the next flush projects the log from the committed offset)."""
        grouped, self._in_group = self._in_group, []
        if not committed:
            self._behind = True
        elif grouped and self._hand_over(grouped) and not self.background:
            self._project_logged()

    def _backlog(self) -> int:
        """(``_handoff`` held.) Records appended and not yet in the views: pending, and taken by a projection."""
        return len(self._pending) + self._taken

    def wait_for_room(self) -> None:
        """Backpressure (module docstring): waits while the backlog is over its bound. ``submit`` calls it
        outside a group; a server's group commit calls it after its group (``hindbrain.service.http``)."""
        with self._handoff:
            if self._backlog() <= self.backlog_records or not self.background or self._closed:
                return
        started = time.perf_counter()
        with CALLS.parked(), self._handoff:
            self._waiting += 1
            try:
                self._handoff.notify_all()
                self._handoff.wait_for(lambda: self._backlog() <= self.backlog_records or self._closed)
            finally:
                self._waiting -= 1
        self.waited_s += time.perf_counter() - started
        self.waits += 1

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
                while len(self._pending) < self.batch_size and not self._closed:
                    release_in = self._merges_release_in()
                    if release_in == 0:
                        break
                    self._handoff.wait(release_in)
                if self._closed:
                    return  # ``close`` projects what is left, and gives the merges back
                due, hold = len(self._pending) >= self.batch_size, self._hold_merges()
            try:
                self._follow_bulk(hold)
                if not due:
                    continue
                if self._project_round(ROUND_RECORDS, background=True) is None:
                    with self._lock:  # the log's path: the round met what only it can take
                        self.flush()
                with self._handoff:
                    self._held_rounds += self.merges_held
                self.idler.lower()  # the merge threads this round's inserts started (streams.thread_priority)
            except Exception as exc:  # noqa: BLE001 - as ``_project_logged``
                log.warning("projection into the views failed; the records are in the log and will be projected by "
                            "the next flush or reopen: %s", exc)

    def _bulk_running(self) -> bool:
        """(``_handoff`` held.) Whether a bulk call runs or ended less than ``MERGES_LINGER_S`` ago."""
        return self._imports.quiet_in() != 0

    def _hold_merges(self) -> bool:
        """(``_handoff`` held.) Whether chDB's merges are to be held now: a bulk runs, and it has not held them
        ``MERGES_HELD_ROUNDS`` rounds yet (a stream of bulk calls gets them back then, and keeps them)."""
        return self.hold_merges and self._bulk_running() and self._held_rounds < MERGES_HELD_ROUNDS

    def _merges_release_in(self) -> float | None:
        """(``_handoff`` held.) Seconds until held merges are to be given back (0: now); None when none are held
        or a bulk call runs (its end wakes the projector)."""
        quiet_in = self._imports.quiet_in()
        if not self.merges_held or quiet_in is None:
            return None
        return 0.0 if self._held_rounds >= MERGES_HELD_ROUNDS else quiet_in

    def _follow_bulk(self, hold: bool) -> None:
        """(The projector's thread, or a close once it ended.) chDB's merges stopped or started to match
        ``hold``: one statement when it changes (chDB's ``SYSTEM STOP MERGES`` cancels merges running then;
        their parts stay, to be merged later)."""
        if hold != self.merges_held:
            self.warehouse.command("SYSTEM STOP MERGES" if hold else "SYSTEM START MERGES")
            self.merges_held = hold

    def _pause(self) -> None:
        """The projector's give-way point: it gives way to brain calls in flight only while nobody
        waits for it and the backlog is under half its bound (module docstring)."""
        with self._handoff:
            busy = self._waiting or 2 * self._backlog() >= self.backlog_records
        if not busy:
            CALLS.give_way()

    def _project_round(self, limit: int | None, background: bool) -> int | None:
        """Projects and inserts what is pending (at most ``limit`` records), then commits the offset
        with the log's next append; returns the records projected. None when they need the log's path
        (``flush``: records of another writer between ours, dead letters, an earlier failure): they
        are left to it. Takes no lock of the log's: a flush holding it may wait for this round."""
        with self._projecting:
            with self._handoff:
                ready = self._pending[:limit] if limit is not None else self._pending
                self._pending = self._pending[len(ready):]
                self._taken = len(ready)
            try:
                if self._behind:
                    return None  # ``ready`` is dropped: the log's path reads it again
                if not ready:
                    return 0
                if ready[-1].position.offset + 1 - self._committed != len(ready):
                    self._behind = True  # ``ready`` is dropped: the log's path reads it again
                    return None
                pause = self._pause if background else None
                with gc_paused():
                    batch, ts_us = ProjectedBatch(), now_us()
                    pause and pause()
                    rest = self._insert_perceptions(ready) if self.decode_in_chdb else ready
                    rest = project_perceptions(rest, batch)  # the events rows as columns
                    for start in range(0, len(rest), PROJECT_SLICE):  # slices that may give way to the brain's calls
                        pause and pause()
                        project_batch(rest[start : start + PROJECT_SLICE], ts_us, batch)
                    if batch.dead_letters:
                        self._behind = True  # appended to the log first, by the log's path (``_write``)
                        return None
                    self._insert(batch, pause)
                batch.rows, batch.tables = {}, {}  # the columns freed on this thread, then given back
                if background:
                    release_arrow_pool()
                self._commit(ready[-1].position.offset + 1)
                return len(ready)
            except BaseException:
                self._behind = True  # ``ready`` is dropped: the next flush reads it from the log
                raise
            finally:
                with self._handoff:
                    self._taken = 0
                    self._handoff.notify_all()  # the writers waiting for room

    def _insert_perceptions(self, ready: list[Decoded]) -> list[Decoded]:
        """(``_projecting`` held.) The round's perceptions into ``events`` by one ``INSERT … SELECT`` of their
        encoded values (``columnar.insert_values``: chDB decodes and checks them on its own threads, without
        the interpreter lock that the caller's fold needs: in Python their columns cost the projector ~3-5 us
        an event of holding it, docs/speed.md round seventeen); returns the records left to project. All of
        ``ready`` when there are fewer than ``columnar.MIN_BATCH`` or chDB refused one (nothing written then:
        the Python path projects them, and dead-letters what it must)."""
        fast, slow = columnar.split_hot(ready)
        if len(fast) < columnar.MIN_BATCH:
            return ready
        positions = [ready[i].position for i in fast]
        if not columnar.insert_values([ready[i].value for i in fast], [p.partition for p in positions],
                                      [p.offset for p in positions], self.warehouse):
            return ready
        return [ready[i] for i in slow]

    def close(self) -> None:
        """Commit what is deferred and stop the committer and the projector, then project what is
        pending: records deferred after the owner's last flush (a served brain's recall in flight while
        it closes, whose records this append commits) were left out of the views until a reopen when
        only a due batch was projected here."""
        with self._wake:
            self._closed = True  # no defer after this one: the append below takes them all
            self._wake.notify_all()
        with self._lock:
            self._append([], [])
        if self._committer is not None:
            self._committer.join()
        with self._handoff:
            self._handoff.notify_all()  # ``_closed``: the projector ends once its round is in
        if self._projector is not None:
            self._projector.join()
        if self._pending:
            self._project_logged()
        # chDB's engine is the process's: a brain opened after this one would find its merges stopped
        self._follow_bulk(False)

    def flush(self) -> int:
        """Project and insert everything appended before the call (the committed records: an open
        group's wait for its commit), then commit. Returns records projected."""
        with self._lock:
            if self._deferred:
                self._append([], [])
        with CALLS.parked(), self._lock, gc_paused():  # a round in flight gives way to nobody meanwhile
            with self._handoff:
                self._waiting += 1
            try:
                with self._projecting:
                    if (projected := self._project_round(None, background=False)) is not None:
                        return projected
                    with self._handoff:
                        self._pending = []  # the log holds them: read from the committed offset
                    return self._project_log(stop=self.log.group_from)
            finally:
                with self._handoff:
                    self._waiting -= 1

    def catch_up(self, chunk: int = 20_000) -> int:
        """Project whatever the log holds beyond the committed offset (after a crash or
        when another writer appended). Returns the number of records projected."""
        with self._lock:
            self.flush()
            with self._projecting:
                return self._project_log(chunk)

    def project_again_if_broken(self) -> bool:
        """At open, before ``catch_up``: when the engine set parts aside as broken (``Warehouse.broken_parts``:
        a merge a full disk broke after the last round's check, files lost while closed), their rows are gone
        from views whose offset had passed them, and which offsets those were nothing records: the offset
        goes back to the log's start (durably, before the broken parts are dropped, so a crash in between
        still projects again) and ``catch_up`` projects the whole log; the views deduplicate. Returns
        whether it did."""
        broken = self.warehouse.broken_parts()
        if not broken:
            return False
        log.warning("the views lost parts the engine found broken at open (%s): projecting the log again "
                    "from its start", ", ".join(f"{table}/{part}" for table, part in broken))
        with self._lock, self._projecting:
            self._committed = 0
            self.log.commit(CONSUMER, ALL_TOPICS, 0, 0)
        self.warehouse.drop_detached(broken)
        return True

    def _project_log(self, chunk: int = 20_000, stop: int | None = None) -> int:
        """(The log's lock and ``_projecting`` held.) Project the log from the committed offset to its
        end (or to ``stop``)."""
        done = 0
        self._behind = True  # until the end of the log is projected
        offset = self._committed
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
        self._insert(batch)
        self._commit(next_offset)

    def _insert(self, batch: ProjectedBatch, pause: Callable[[], object] | None = None) -> None:
        """(``_projecting`` held.) ``insert_batch``. When a part lost to a full disk held rows of rounds
        committed before (a merge chDB wrote with empty files, its merged parts removed), the offset goes
        back to the log's start: which offsets those rows had, nothing records; the views deduplicate."""
        try:
            insert_batch(self.warehouse, batch, pause=pause)
        except PartsNotWritten as exc:
            if exc.earlier:
                self._committed = 0
                self.log.commit_later(CONSUMER, ALL_TOPICS, 0, 0)
            raise

    def _commit(self, next_offset: int) -> None:
        """(``_projecting`` held.) The runner's offset, past what is in the views, written with the log's
        next append (``SqliteLog.commit_later``: no sync of its own; a crash re-projects from the last one)."""
        self._committed = max(next_offset, self._committed)
        self.log.commit_later(CONSUMER, ALL_TOPICS, 0, self._committed)

    @property
    def pending(self) -> int:
        """Records in the log and not yet in the views."""
        if self._behind:
            with self._lock:
                return self.log.end_offset(ALL_TOPICS, 0) - self._committed
        with self._handoff:
            return self._backlog() + len(self._in_group)
