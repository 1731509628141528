"""Running the learner beside the embedded runner: restore, catch up, then follow appends.

The learner's offset is a consumer offset in the log, like the projector's. On open it
*restores* its state by folding the log up to that offset (its own decisions carry the
units' states), then *catches up* on what it has not processed (after a crash: the same
records get the same derived ids, so the views absorb repeats), then follows every batch
the Brain appends. Its records are appended like any other, so the views, the recall index
and replay see them. A record the rules fail on becomes a dead letter (stage ``learn``);
the stream goes on.

What the learner appends is appended after the record it learned from, in a call of its own.
When that append fails (a full disk), the record it learned from is durable already and its
writer must not hear an error (a retry would append it twice): the learner's records are held
and appended with the next batch (or at ``commit``), and until then its committed offset stays
at the record they came from, so a crash re-derives them on reopen instead of losing them.

A snapshot of the learner's state (``home/cache/learner.snapshot``, written on close and
every ``SNAPSHOT_EVERY`` records) lets a reopened brain fold only the log after it. It is a
cache: unreadable, from other rules, or ahead of the log, it is ignored and the log folded.

**The fold off the caller's thread** (round fourteen, docs/speed.md): the runner's listener only
queues each appended batch (``_follow``, under the log's lock, no fold); a learner thread folds
what is queued, under the learner's own lock (``_state``), and appends what it learned from its
own thread (lock order: ``_state`` then the log's lock; the listener takes neither). Barriers:
1. every reader of the learner's state waits for the fold of every record appended before it
   (``wait_until_caught_up``, ``reading``: the SDK's ``approve``, ``invalidate``,
   ``pending_traits``; ``commit``, hence the snapshot and close), then holds ``_state``;
2. ``read_barrier``: the Brain's recall and its readers of the views wait for the fold, so what
   the learner appends for a batch is in the index and the views before a read that follows it;
3. ``append_gate``: the runner appends nothing (the next batch, the group commit's recall records)
   while a fold is pending, so the learner's records for a batch follow that batch in the log as they
   did when it folded inside the append, and a restoring fold meets them where the live one applied
   them: replay gives the same state.
4. ``before_group_commit``: a server's log group (its calls' records in one transaction) drains the learner
   before it commits, so what the learner appends for the group's records commits with them and a read in
   the next group sees it in the views.
``background=False`` folds inside the append, as before (``bench/ingest_profile.py --learner``).

In a fleet (Kafka), ``kafka_learner.KafkaLearner`` feeds the same ``Learner`` from the topics.
"""

from __future__ import annotations

import logging
import pickle
import threading
from collections import deque
from contextlib import contextmanager
from pathlib import Path

from hindbrain.learning.learner import Learner
from hindbrain.learning.lifecycle import RULE_VERSION
from hindbrain.learning.records import is_own
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import now_us
from hindbrain.streams.processing import Decoded, dead_letter, decoded_entries
from hindbrain.streams.sqlite_log import ALL_TOPICS
from hindbrain.switching import LONG_TEXT_CHARS, RECALLS

CONSUMER = "learner"
COMMIT_EVERY = 2000  # records between offset commits (a commit is a durable write)
SNAPSHOT_EVERY = 100_000  # records between snapshots of the learner's state
SNAPSHOT_VERSION = 7  # 2: a tenant's state holds its recent event ids (Learner._repeated); 3: what a restore teaches;
# 4: those ids are a ``RecentSet`` of compact ids, and the last event per place keeps its id compact; 5: the last
# event's words are hashed the same in every process (``_scan.stable_hashes``; 4 kept the process's salted hash);
# 6: those words are the tokenizer's that end a word at a CJK character (a Latin name before Chinese text was one
# token with the clause): 5's hashes of such words would not match the next event's after an upgrade; 7: a tenant's
# state holds its proven units (``_Tenant.proven``), which a 6 lacks

log = logging.getLogger(__name__)



def learn_dead_letters(failed: list[tuple[Decoded, Exception]]) -> list[tuple[str, dict]]:
    """A dead letter (stage ``learn``) for each record a rule failed on (``Learner.learn``'s second
    result), the record kept as encoded with the error named: the embedded and the Kafka learner's."""
    return [("dead_letter", dead_letter(decoded.position, "learn", f"{type(exc).__name__}: {exc}",
                                        registry.encode(decoded.record_type, decoded.record), now_us(),
                                        decoded.record["envelope"]["tenant"])) for decoded, exc in failed]

class LearnerRuntime:
    def __init__(self, log, runner, extractor=None, snapshot: Path | None = None, background: bool = True):
        self.log, self.runner = log, runner
        self.background = background  # fold on the learner's thread (module docstring) or inside the append
        self._learner = Learner(extractor)  # read from outside through ``learner``
        self.snapshot = snapshot  # a cache of the fold: the log stays the truth
        self._next = 0  # the first log offset not yet processed
        self._uncommitted = 0
        self._since_snapshot = 0
        self._already: set[str] = set()
        self._held: list = []  # records learned whose append failed, oldest first (module docstring)
        self._held_from: int | None = None  # the log offset of the first record they came from
        # the fold off the caller's thread (module docstring): its lock, its queue and how far it is
        self._state = threading.RLock()  # held by the fold and by every reader of the learner's state
        self._work = threading.Condition(threading.Lock())  # guards the four below; a leaf lock
        self._queue: deque[list[Decoded]] = deque()
        self._queued_end = 0  # the log offset after the last batch queued
        self._folded_end = 0  # the log offset after the last batch folded
        self._failure: BaseException | None = None  # what stopped the thread
        self._stopping = False
        self._publishing = False  # ``_publish`` is appending (``_state`` held)
        self._thread: threading.Thread | None = None

    @property
    def learner(self) -> Learner:
        """The learner, every record appended before the call folded into it (``read_barrier``). Not from
        inside ``reading`` (which has waited already): the barrier may take the log's lock."""
        self.read_barrier()
        return self._learner

    def start(self, chunk: int = 20_000) -> None:
        committed = self.log.committed(CONSUMER, ALL_TOPICS, 0)
        offset = self._load_snapshot(committed)
        while offset < committed and (entries := self.log.read_all(offset, min(chunk, committed - offset))):
            self._learner.process(decoded_entries(entries), restoring=True)
            offset = entries[-1].offset + 1
        self._next = committed
        # Records it appended after its last commit (then crashed) are not appended twice.
        self._already = {d.record["envelope"]["record_id"] for entries in _chunks(self.log, committed, chunk)
                         for d in decoded_entries(entries) if is_own(d.record)}
        while entries := self.log.read_all(self._next, chunk):
            self.observe(decoded_entries(entries), end=entries[-1].offset + 1)
        self._already = set()
        self.commit()
        if not self.background:
            self.runner.listeners.append(self.observe)
            return
        self._queued_end = self._folded_end = self._next
        self._thread = threading.Thread(target=self._fold_queued, name="hindbrain-learner", daemon=True)
        self._thread.start()
        self.runner.listeners.append(self._follow)
        self.runner.append_gates.append(self._drain)
        self.log.before_group_commit.append(self._drain)  # a server's group commits with what it taught

    def _follow(self, batch: list[Decoded]) -> None:
        """Runner listener (log's lock held): queues the batch for the learner's thread, nothing folded here."""
        if not batch:
            return
        with self._work:
            self._queue.append(batch)
            self._queued_end = batch[-1].position.offset + 1
            self._work.notify_all()

    def _take_queued(self) -> list[Decoded]:
        """What is queued, in log order, taken off the queue (``_state`` held: nobody else folds meanwhile)."""
        with self._work:
            batches, self._queue = list(self._queue), deque()
        return [d for batch in batches for d in batch]

    def _folded(self, records: list[Decoded]) -> None:
        with self._work:
            if records:
                self._folded_end = max(self._folded_end, records[-1].position.offset + 1)
            self._work.notify_all()

    def _fold_queued(self) -> None:
        """The learner's thread: folds what is queued (never waiting for the log's lock while it holds
        ``_state``), then appends what it learned if the log's lock is free; otherwise the next appender
        or reader does (``_drain``)."""
        while True:
            with self._work:
                self._work.wait_for(lambda: self._queue or self._stopping)
                if not self._queue:
                    return
            try:
                with self._state:
                    records = self._take_queued()
                    self._fold(records)
                self._folded(records)
                # its appends wait for no one: taken, the lock would be the caller's to wait for; busy, the
                # next appender or reader appends them (``_drain``)
                if (self._held or self._uncommitted >= COMMIT_EVERY) and self.log.lock.acquire(blocking=False):
                    try:
                        with self._state:
                            self._publish()
                    finally:
                        self.log.lock.release()
            except BaseException as exc:  # a bug, not a rule's failure (those are dead letters): the waiters hear it
                log.exception("the learner's thread stopped")
                with self._work:
                    self._failure = exc
                    self._work.notify_all()
                return

    def _drain(self) -> None:
        """(The log's lock held.) Folds what the thread has not, then appends what was learned: the runner's
        gate before every ``submit`` (the learner's records for a batch stay before the next batch's, as when
        it folded inside the append) and every reader's barrier. Lock order: the log's, then ``_state``."""
        if self._thread is None or self._publishing:
            return  # no thread, or the learner's own append (``_publish``): what it appends comes next
        with self._state:
            if self._failure is not None:
                raise RuntimeError("the learner's thread stopped: its state is behind the log") from self._failure
            # what it appends comes back queued (its own records, with the group commit's): folded too, so the
            # offset a commit writes is past them, as when the fold ran inside the append
            records = self._take_queued()
            while records or self._held:
                self._fold(records)
                self._folded(records)
                self._publish()
                if self._held:
                    break  # the log refused them: held for the next appender (module docstring)
                records = self._take_queued()

    def _caught_up(self) -> bool:
        with self._work:
            return self._folded_end >= self._queued_end and not self._held and self._failure is None

    def read_barrier(self) -> None:
        """Every record appended before the call folded, and what the learner learned from them appended (a
        recall, a read of the views). Free when the thread is done (no lock taken); never call it with the log's
        lock held by another thread waiting on this one."""
        if self._thread is not None and not self._caught_up():
            with self.log.lock:
                self._drain()

    def observe(self, batch: list[Decoded], end: int | None = None) -> None:
        """Runner listener (``background=False``, and the catch-up on open): learn from an appended batch and
        append what was learned."""
        self._fold(batch, end)
        self._publish()

    def _publish(self) -> None:
        """(The log's lock and ``_state`` held.) Appends what was learned; commits the offset when due."""
        self._publishing = True  # the append passes the runner's gate (``_drain``) without folding again
        try:
            self._append_held()
            if self._uncommitted >= COMMIT_EVERY:
                self._commit(snapshot=False)
        finally:
            self._publishing = False

    def _fold(self, batch: list[Decoded], end: int | None = None) -> None:
        """Learns from ``batch`` (``_state`` held when the thread runs); what it learned is held for ``_publish``."""
        fresh = [d for d in batch if d.position.offset >= self._next]
        if not fresh:
            return
        self._next = end or fresh[-1].position.offset + 1
        out, failed = [], []
        for long_text, part in _long_text_parts(fresh):
            if long_text:
                RECALLS.give_way()  # a long text's learning waits for the recalls in flight (hindbrain/switching.py)
            learned, failing = self._learner.learn(part)  # a rule bug must not stop the stream; the record is kept
            out += learned
            failed += failing
        if self._already:
            out = [(rt, r) for rt, r in out if r["envelope"]["record_id"] not in self._already]
        out += learn_dead_letters(failed)
        self._uncommitted += len(fresh)
        if out:
            self._held += out
            if self._held_from is None:
                self._held_from = fresh[0].position.offset

    def _append_held(self) -> bool:
        """Append the records learned and not yet appended; False if the log refused them
        (they stay held, see the module docstring)."""
        if not self._held:
            return True
        held, self._held = self._held, []  # taken first: the append comes back here (observe)
        try:
            self.runner.submit(held)
        except Exception as exc:  # noqa: BLE001 - held and retried; the writer's own record is durable
            self._held[:0] = held
            log.warning("the learner's %d records are held: appending them failed: %s", len(self._held), exc)
            return False
        if not self._held:
            self._held_from = None
        return True

    def wait_until_caught_up(self, timeout_s: float = 30.0) -> None:
        """Every record appended before the call folded and what was learned appended (``read_barrier``;
        the embedded learner has no lag to time out on: what its thread has not folded, the caller folds)."""
        self.read_barrier()

    @contextmanager
    def reading(self):
        """Hold while reading the learner's state outside the fold (the SDK's ``approve``, ``invalidate``,
        ``pending_traits``): every record appended before is folded, and no fold runs until the reader is done."""
        self.read_barrier()
        with self._state:
            yield

    def stop(self) -> None:
        """Ends the learner's thread once its fold is done (the Brain's close, after ``commit``); what is
        appended later is folded by the next open's catch-up, as it was after the last commit."""
        if self._thread is None:
            return
        with self._work:
            self._stopping = True
            self._work.notify_all()
        self._thread.join()

    def commit(self, snapshot: bool = False) -> None:
        """Commit the learner's offset; with ``snapshot`` (on close) or every
        ``SNAPSHOT_EVERY`` records, also write the snapshot of its state at that offset.
        While learned records are held, only up to the record they came from, no snapshot.

        Under the log's lock, then the learner's (``_state``), which every fold holds: a snapshot pickled beside
        a fold met a tenant's dict changing size (a close right after a recall, whose record the group-commit
        thread committed 5 ms later); what the thread has not folded yet is folded first (``_drain``)."""
        with self.log.lock:
            self._drain()
            with self._state:
                self._publishing = True  # its append of what is held passes the gate
                try:
                    self._commit(snapshot)
                finally:
                    self._publishing = False

    def _commit(self, snapshot: bool) -> None:
        if not self._append_held():
            self.log.commit(CONSUMER, ALL_TOPICS, 0, self._held_from)
            return
        self.log.commit(CONSUMER, ALL_TOPICS, 0, self._next)
        self._since_snapshot += self._uncommitted
        self._uncommitted = 0
        if self.snapshot is not None and (snapshot or self._since_snapshot >= SNAPSHOT_EVERY):
            self._write_snapshot()

    def _write_snapshot(self) -> None:
        state = {"version": SNAPSHOT_VERSION, "rules": RULE_VERSION, "offset": self._next,
                 "tenants": self._learner.tenants, "counts": self._learner.counts}
        self.snapshot.parent.mkdir(parents=True, exist_ok=True)
        partial = self.snapshot.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
        partial.replace(self.snapshot)  # atomic: a crash leaves the previous snapshot
        self._since_snapshot = 0

    def _load_snapshot(self, committed: int) -> int:
        """The offset the fold starts from: the snapshot's (its state loaded) or 0."""
        if self.snapshot is None or not self.snapshot.exists():
            return 0
        try:
            state = pickle.loads(self.snapshot.read_bytes())
        except Exception:  # noqa: BLE001 - a cache must never stop a brain from opening
            return 0  # unreadable (or from another version of the code): fold the log instead
        if (state.get("version"), state.get("rules")) != (SNAPSHOT_VERSION, RULE_VERSION) or \
                state["offset"] > committed:
            return 0
        self._learner.tenants, self._learner.counts = state["tenants"], state["counts"]
        return state["offset"]


def _long_text_parts(batch: list[Decoded]) -> list[tuple[bool, list[Decoded]]]:
    """``batch`` cut before each record holding a long text, each part with whether it starts with one: the
    learner gives way to the recalls in flight before those, as it did before each long text's record."""
    cuts = [n for n, d in enumerate(batch) if len(d.record.get("text") or "") >= LONG_TEXT_CHARS]
    bounds = [0, *(n for n in cuts if n), len(batch)]
    starts = set(cuts)
    return [(a in starts, batch[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def _chunks(log, offset: int, chunk: int):
    while entries := log.read_all(offset, chunk):
        yield entries
        offset = entries[-1].offset + 1
